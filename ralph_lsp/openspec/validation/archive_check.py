"""Archive's merge preconditions as a dry run (`findArchiveBlockers`): INFO, never a verdict."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.openspec.validation.blocks import (
    Block,
    DeltaPlan,
    blocks_by_name,
    describe_balance,
    diff_scenarios,
    fold_name,
    normalize_name,
    parse_delta_spec,
)
from ralph_lsp.openspec.validation.discovery import discover_spec_files, read_once
from ralph_lsp.openspec.validation.issues import Issue
from ralph_lsp.openspec.validation.structure import structure_issues

H = "### Requirement: "


class Refusal(Exception):
    """Why archive would not apply one delta spec (the CLI's thrown message)."""


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


def _check_plan(name: str, plan: DeltaPlan) -> None:
    if plan.unpaired_renames:
        u = plan.unpaired_renames[0]
        missing = "TO" if u.side == "FROM" else "FROM"
        raise Refusal(
            f"{name} validation failed - RENAMED entry on line {u.line} has no matching "
            f"{missing}: for header "
            f'"{H}{u.name}". Write each rename as a FROM: line followed immediately by its TO: '
            "line."
        )
    added = _unique(name, "ADDED", [b.name for b in plan.added])
    modified = _unique(name, "MODIFIED", [b.name for b in plan.modified])
    removed = _unique(name, "REMOVED", [r.name for r in plan.removed])
    _unique_renames(name, plan)
    conflicts = [
        (n, a, b)
        for n in modified
        for a, b, s in (("MODIFIED", "REMOVED", removed), ("MODIFIED", "ADDED", added))
        if n in s
    ]
    conflicts += [(n, "ADDED", "REMOVED") for n in added if n in removed]
    for f, t in plan.renamed:
        fk = normalize_name(f.name)
        match = next((r for r in removed if fold_name(r) == fold_name(fk)), None)
        if match is not None:
            extra = "" if match == fk else f' (REMOVED spells it "{match}")'
            raise Refusal(
                f"{name} validation failed - requirement present in multiple sections (RENAMED "
                f'and REMOVED) for header "{H}{f.name}"{extra}'
            )
        if fk in modified:
            raise Refusal(
                f"{name} validation failed - when a rename exists, MODIFIED must reference the "
                f'NEW header "{H}{t.name}"'
            )
        if normalize_name(t.name) in added:
            raise Refusal(
                f"{name} validation failed - RENAMED TO header collides with ADDED for "
                f'"{H}{t.name}"'
            )
    if conflicts:
        n, a, b = conflicts[0]
        raise Refusal(
            f"{name} validation failed - requirement present in multiple sections ({a} and "
            f'{b}) for header "{H}{n}"'
        )
    if not plan.entries:
        raise Refusal(
            f"Delta parsing found no operations for {name}. Provide "
            "ADDED/MODIFIED/REMOVED/RENAMED sections in change spec."
        )


def _unique_renames(name: str, plan: DeltaPlan) -> None:
    froms: list[str] = []
    tos: list[str] = []
    for f, t in plan.renamed:
        failed = "validation failed - duplicate"
        if normalize_name(f.name) in froms:
            raise Refusal(f'{name} {failed} FROM in RENAMED for header "{H}{f.name}"')
        if normalize_name(t.name) in tos:
            raise Refusal(f'{name} {failed} TO in RENAMED for header "{H}{t.name}"')
        froms.append(normalize_name(f.name))
        tos.append(normalize_name(t.name))


def _unique(name: str, op: str, names: list[str]) -> list[str]:
    seen: list[str] = []
    for raw in names:
        key = normalize_name(raw)
        if key in seen:
            raise Refusal(
                f'{name} validation failed - duplicate requirement in {op} for header "{H}{raw}"'
            )
        seen.append(key)
    return seen


def check_update(name: str, plan: DeltaPlan, current: str | None) -> None:
    """Raise `Refusal` where `buildUpdatedSpec` would throw for this delta and main spec."""
    _check_plan(name, plan)
    if current is None:
        if plan.modified or plan.renamed:
            raise Refusal(
                f"{name}: target spec does not exist; only ADDED requirements are allowed for "
                "new specs. "
                "MODIFIED and RENAMED operations require an existing spec."
            )
        return
    problems = structure_issues(current)
    if problems:
        details = "\n".join(f"line {p.line}: {p.message}" for p in problems)
        raise Refusal(
            f"{name}: target spec is structurally invalid and cannot be updated until "
            f"fixed:\n{details}"
        )
    blocks = dict(blocks_by_name(current))  # (a copy: the operations below change it)
    _apply_renames(name, plan, blocks)
    _apply_removals(name, plan, blocks)
    _apply_modifications(name, plan, blocks)
    _apply_additions(name, plan, blocks)


def _apply_renames(name: str, plan: DeltaPlan, blocks: dict[str, Block]) -> None:
    for f, t in plan.renamed:
        fk, tk = normalize_name(f.name), normalize_name(t.name)
        if fk not in blocks:
            if tk in blocks:
                near = next((k for k in blocks if k != tk and fold_name(k) == fold_name(fk)), None)
                if near is not None:
                    raise Refusal(
                        f'{name} RENAMED failed for header "{H}{f.name}" - source not found, '
                        f'but "{H}{blocks[near].name}" exists; fix the header to match it exactly'
                    )
                continue
            raise Refusal(f'{name} RENAMED failed for header "{H}{f.name}" - source not found')
        if tk in blocks:
            raise Refusal(f'{name} RENAMED failed for header "{H}{t.name}" - target already exists')
        near = next((k for k in blocks if k != fk and fold_name(k) == fold_name(tk)), None)
        if near is not None:
            raise Refusal(
                f'{name} RENAMED failed for header "{H}{t.name}" - "{H}{blocks[near].name}" '
                "already exists and differs only in case or spacing; choose a distinct name"
            )
        block = blocks.pop(fk)
        lines = block.raw.split("\n")
        lines[0] = H + tk
        blocks[tk] = Block(H + tk, tk, "\n".join(lines), block.line)


def _apply_removals(name: str, plan: DeltaPlan, blocks: dict[str, Block]) -> None:
    for r in plan.removed:
        key = normalize_name(r.name)
        if key not in blocks:
            near = next((k for k in blocks if fold_name(k) == fold_name(key)), None)
            if near is not None:
                raise Refusal(
                    f'{name} REMOVED failed for header "{H}{r.name}" - not found, but '
                    f'"{H}{blocks[near].name}" exists; fix the header to match it exactly'
                )
            continue
        del blocks[key]


def _apply_modifications(name: str, plan: DeltaPlan, blocks: dict[str, Block]) -> None:
    for mod in plan.modified:
        key = normalize_name(mod.name)
        cur = blocks.get(key)
        if cur is None:
            raise Refusal(f'{name} MODIFIED failed for header "{H}{mod.name}" - not found')
        diff = diff_scenarios(cur, mod)
        if diff.missing:
            missing = ", ".join(f'"{n}"' for n in diff.missing)
            raise Refusal(
                f'{name} MODIFIED failed for header "{H}{mod.name}" - current spec contains '
                "scenario(s) not present in "
                f"the modified block: {missing}. {describe_balance(diff)} Refresh the change "
                "spec before archiving to "
                "avoid dropping scenarios."
            )
        blocks[key] = mod


def _same(a: str, b: str) -> bool:
    from ralph_lsp.openspec.validation.text import normalize_newlines, trim

    return trim(normalize_newlines(a)) == trim(normalize_newlines(b))


def _apply_additions(name: str, plan: DeltaPlan, blocks: dict[str, Block]) -> None:
    for add in plan.added:
        key = normalize_name(add.name)
        existing = blocks.get(key)
        if existing is not None:
            if _same(existing.raw, add.raw):
                continue
            raise Refusal(f'{name} ADDED failed for header "{H}{add.name}" - already exists')
        near = next((k for k in blocks if fold_name(k) == fold_name(key)), None)
        if near is not None:
            raise Refusal(
                f'{name} ADDED failed for header "{H}{add.name}" - "{H}{blocks[near].name}" '
                "already exists and differs "
                "only in case or spacing; use MODIFIED with that exact header to change it, or "
                "choose a distinct name"
            )
        blocks[key] = add
