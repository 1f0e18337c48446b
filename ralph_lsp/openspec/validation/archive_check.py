"""Archive's merge preconditions as a dry run (`findArchiveBlockers`): INFO, never a verdict.

The delta's operations are archive's own (`validation/delta_apply.py`): where archive would
raise for one delta spec, the dry run collects the refusal as an INFO on it and goes on.
"""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.openspec.validation.blocks import DeltaPlan, blocks_by_name, parse_delta_spec
from ralph_lsp.openspec.validation.delta_apply import SpecUpdateError as Refusal
from ralph_lsp.openspec.validation.delta_apply import (
    apply_operations,
    check_plan,
    refuse_invalid_target,
    refuse_new_spec_edits,
)
from ralph_lsp.openspec.validation.discovery import discover_spec_files, read_once
from ralph_lsp.openspec.validation.issues import Issue


def archive_blockers(
    change_dir: Path,
    main_specs: Path,
    reported: set[str],
    overrides: dict[Path, str],
    deltas: list[tuple[str, Path]] | None = None,
) -> list[Issue]:
    """Archive's refusals, as INFO. `overrides` holds the texts standing for files; the reads
    here add to it (`read_once`). `deltas`: the change's delta specs, when the caller has them."""
    out: list[Issue] = []
    if deltas is None:
        deltas = discover_spec_files(change_dir / "specs")
    for spec_id, file in deltas:
        rel = f"{spec_id}/spec.md"
        if rel in reported:
            continue
        target = main_specs.joinpath(*spec_id.split("/"), "spec.md")
        try:
            content = read_once(file, overrides)
            current = _read_optional(target, overrides)
            check_update(spec_id, parse_delta_spec(content), current)
        except Refusal as why:
            out.append(
                Issue(
                    "INFO",
                    rel,
                    f"Archive would refuse this delta: {why}",
                    "openspec.archive.would-refuse",
                    file=file,
                )
            )
        except OSError:
            continue
    return out


def _read_optional(file: Path, overrides: dict[Path, str]) -> str | None:
    try:
        return read_once(file, overrides)
    except (FileNotFoundError, NotADirectoryError):
        return None


def check_update(name: str, plan: DeltaPlan, current: str | None) -> None:
    """Raise `Refusal` where `buildUpdatedSpec` would throw for this delta and main spec. A
    new spec (`current` None) is refused only for MODIFIED or RENAMED, as the CLI's dry run
    says: it applies nothing to a spec that does not exist yet."""
    check_plan(name, plan)
    if current is None:
        refuse_new_spec_edits(name, plan)
        return
    refuse_invalid_target(name, current)
    blocks = dict(blocks_by_name(current))  # (a copy: the operations change it)
    apply_operations(name, plan, blocks, [])
