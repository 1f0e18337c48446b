"""`openspec validate <change>`: delta specs, cross-file rules against the main specs, task lint."""

from __future__ import annotations

import os
from pathlib import Path

from ralph_lsp.openspec.validation import messages as msg
from ralph_lsp.openspec.validation.archive_check import archive_blockers
from ralph_lsp.openspec.validation.blocks import parse_delta_spec
from ralph_lsp.openspec.validation.delta_rules import (
    block_issues,
    cross_section_issues,
    scenario_loss,
    structural_issues,
)
from ralph_lsp.openspec.validation.discovery import Overrides, discover_spec_files, read_once
from ralph_lsp.openspec.validation.issues import Issue, Report
from ralph_lsp.openspec.validation.metadata import read_skip_specs
from ralph_lsp.openspec.validation.task_lint import task_file_issues


def _unread_delta_files(specs_root: Path, overrides: Overrides) -> list[tuple[str, str, Path]]:
    out: list[tuple[str, str, Path]] = []
    for folder, dirs, files in os.walk(specs_root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.startswith(".") or name == "spec.md" or not name.lower().endswith(".md"):
                continue
            rel = Path(folder).relative_to(specs_root).parts  # (only for such a file: rare)
            file = Path(folder) / name
            try:
                plan = parse_delta_spec(read_once(file, overrides))
            except OSError:
                continue
            if not any(plan.presence.values()):
                continue
            capability = "/".join(rel) if rel else name[:-3]
            out.append(("/".join([*rel, name]), f"{capability}/spec.md", file))
    return sorted(out, key=lambda f: f[0])


class _Tally:
    __slots__ = ("deltas", "empty_sections", "missing_header")

    def __init__(self) -> None:
        self.deltas = 0
        self.missing_header: list[tuple[str, Path]] = []
        self.empty_sections: list[tuple[str, list[str], Path, int]] = []


def validate_change(
    change_dir: Path,
    *,
    strict: bool = False,
    overrides: Overrides | None = None,
    project_root: Path | None = None,
    texts: Overrides | None = None,
    deltas: list[tuple[str, Path]] | None = None,
) -> Report:
    """Validate a change as `openspec validate <change> --type change` does.

    `overrides` maps a file to the text that stands for it (an editor's open document).
    `texts`, when given, stands for `overrides` and is not copied: the texts read from disk
    join it, for the caller to reuse (the server's edit path reads no file twice). `deltas`:
    `discover_spec_files(change_dir / "specs")` when the caller has it."""
    # the texts read from disk join a copy of `overrides`, once each (read_once)
    overrides = texts if texts is not None else dict(overrides or {})
    root = project_root or change_dir.parent.parent.parent
    main_specs = root / "openspec" / "specs"
    specs_dir = change_dir / "specs"
    report = Report(strict=strict)
    issues = report.issues
    tally = _Tally()
    root_spec = specs_dir / "spec.md"
    has_root_spec = root_spec.is_file()
    if has_root_spec:
        code = "openspec.delta.root-spec"
        issues.append(Issue("ERROR", "spec.md", _ROOT_SPEC, code, file=root_spec))
    deltas = discover_spec_files(specs_dir) if deltas is None else deltas
    for spec_id, file in deltas:
        try:
            content = read_once(file, overrides)
        except OSError:
            continue
        issues += _delta_file_issues(spec_id, file, content, main_specs, overrides, tally)
    already = [i.path for i in issues if i.level == "ERROR"]
    already += [p for p, _ in tally.missing_header] + [e[0] for e in tally.empty_sections]
    issues += archive_blockers(change_dir, main_specs, set(already), overrides, deltas)
    unread = _unread_delta_files(specs_dir, overrides)
    issues += _layout_issues(unread, tally)
    no_deltas = tally.deltas == 0 and not has_root_spec and not unread
    issues += _marker_issues(change_dir, specs_dir, overrides, no_deltas)
    issues += task_file_issues(change_dir, root, overrides)
    return report


_ROOT_SPEC = (
    "Delta spec found at specs/spec.md. Delta specs must live under a capability path (e.g. "
    "specs/<capability-path>/spec.md) — a file at the specs/ root is ignored when the change is "
    "applied or archived."
)


def _layout_issues(unread: list[tuple[str, str, Path]], tally: _Tally) -> list[Issue]:
    """Deltas in files archive never reads, sections with no entry, files with no section."""
    issues: list[Issue] = []
    for rel, expected, file in unread:
        text = (
            f"Delta spec found at specs/{rel}. Delta specs must be a spec.md inside a capability "
            "folder — this file is ignored when the change is applied or archived. Move its "
            f"requirements into specs/{expected}."
        )
        issues.append(Issue("ERROR", rel, text, "openspec.delta.unread-file", file=file))
    for rel, sections, file, line in tally.empty_sections:
        listed = sections[0] if len(sections) == 1 else ", ".join(sections[:-1])
        listed += "" if len(sections) == 1 else " and " + sections[-1]
        text = (
            f"Delta sections {listed} were found, but no requirement entries parsed. Ensure each "
            'section includes at least one "### Requirement:" block (REMOVED may use bullet list '
            "syntax)."
        )
        code = "openspec.delta.empty-sections"
        issues.append(Issue("ERROR", rel, text, code, file=file, at=line - 1))
    for rel, file in tally.missing_header:
        text = (
            'No delta sections found. Add headers such as "## ADDED Requirements" or move '
            "non-delta notes outside specs/."
        )
        issues.append(Issue("ERROR", rel, text, "openspec.delta.no-sections", file=file))
    return issues


def _marker_issues(
    change_dir: Path, specs_dir: Path, overrides: Overrides, no_deltas: bool
) -> list[Issue]:
    issues: list[Issue] = []
    meta = change_dir / ".openspec.yaml"
    try:
        content: str | None = read_once(meta, overrides)
    except OSError:  # read_skip_specs reads it again and says why it cannot
        content = None
    marker = read_skip_specs(change_dir, root_dir=change_dir.parent.parent.parent, content=content)
    if marker.invalid_reason:
        issues.append(
            Issue(
                "ERROR",
                ".openspec.yaml",
                f"{msg.SKIP_SPECS_INVALID} ({marker.invalid_reason})",
                "openspec.metadata.invalid",
                file=meta,
            )
        )
    has_files = marker.declared and any(
        not name.startswith(".") for _, dirs, files in os.walk(specs_dir) for name in files
    )
    if marker.declared and has_files:
        issues.append(
            Issue(
                "ERROR",
                "file",
                msg.SKIP_SPECS_CONFLICT,
                "openspec.metadata.skip-specs-conflict",
                file=meta,
            )
        )
    if no_deltas:
        if marker.declared and not has_files:
            issues.append(
                Issue(
                    "INFO",
                    "file",
                    msg.SKIP_SPECS_ACCEPTED,
                    "openspec.metadata.skip-specs",
                    file=meta,
                )
            )
        elif not marker.declared:
            issues.append(
                Issue(
                    "ERROR",
                    "file",
                    f"{msg.CHANGE_NO_DELTAS}. {msg.GUIDE_NO_DELTAS}",
                    "openspec.change.no-deltas",
                    file=change_dir / "proposal.md",
                )
            )
    return issues


def _delta_file_issues(
    spec_id: str, file: Path, content: str, main_specs: Path, overrides: Overrides, tally: _Tally
) -> list[Issue]:
    plan = parse_delta_spec(content)
    rel = spec_id + "/spec.md"
    issues = structural_issues(plan, rel, file)
    sections = [
        f"## {t} Requirements"
        for t in ("ADDED", "MODIFIED", "REMOVED", "RENAMED")
        if plan.presence[t]
    ]
    if not plan.entries:
        if sections:
            first = min(plan.section_lines.values())
            tally.empty_sections.append((rel, sections, file, first))
        else:
            tally.missing_header.append((rel, file))
    tally.deltas += plan.entries
    added_issues, added = block_issues("ADDED", plan.added, rel, file)
    modified_issues, modified = block_issues("MODIFIED", plan.modified, rel, file)
    issues += added_issues + modified_issues
    if plan.modified:
        issues += scenario_loss(
            plan, main_specs.joinpath(*spec_id.split("/"), "spec.md"), rel, file, overrides
        )
    issues += cross_section_issues(plan, added, modified, rel, file)
    return issues
