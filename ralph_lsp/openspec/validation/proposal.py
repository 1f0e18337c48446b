"""proposal.md: the rules `openspec archive` applies to it (`validateChange`), as warnings.

The CLI shows these only when archiving; the editor shows them while the proposal is written,
with the CLI's messages, at warning level whatever the CLI's level.
"""

from __future__ import annotations

import re
from pathlib import Path

from ralph_lsp.openspec.validation import messages as msg
from ralph_lsp.openspec.validation.blocks import normalize_content, parse_delta_spec
from ralph_lsp.openspec.validation.discovery import Overrides, discover_spec_files
from ralph_lsp.openspec.validation.discovery import read_with as _read
from ralph_lsp.openspec.validation.issues import Issue
from ralph_lsp.openspec.validation.markdown import find_section, parse_sections
from ralph_lsp.openspec.validation.metadata import read_skip_specs
from ralph_lsp.openspec.validation.text import js_len, trim

_DELTA_BULLET = re.compile(r"^\s*-\s*\*\*([^*:]+)(?::\*\*|\*\*:)\s*(.+)$")
_OPS = [
    ("RENAMED", re.compile(r"\brename(s|d|ing)?\b|\brenamed\s+(to|from)\b")),
    ("ADDED", re.compile(r"\badd(s|ed|ing)?\b|\bcreate(s|d|ing)?\b|\bnew\b")),
    ("REMOVED", re.compile(r"\bremove(s|d|ing)?\b|\bdelete(s|d|ing)?\b")),
]


def _count_spec_deltas(
    change_dir: Path, overrides: Overrides, deltas: list[tuple[str, Path]] | None
) -> tuple[int, bool]:
    total, has_sections = 0, False
    if deltas is None:
        deltas = discover_spec_files(change_dir / "specs")
    for _, file in deltas:
        try:
            plan = parse_delta_spec(_read(file, overrides))
        except OSError:
            continue
        has_sections = has_sections or any(plan.presence.values())
        total += plan.entries
    return total, has_sections


def _bullet_deltas(what: str) -> list[tuple[str, str]]:
    """(operation, description) of each `- **spec:** text` bullet of What Changes."""
    out = []
    for line in what.split("\n"):
        m = _DELTA_BULLET.match(line)
        if m:
            desc = trim(m.group(2))
            op = next((name for name, rx in _OPS if rx.search(desc.lower())), "MODIFIED")
            out.append((op, desc))
    return out


def proposal_issues(
    change_dir: Path,
    overrides: Overrides | None = None,
    deltas: list[tuple[str, Path]] | None = None,
) -> list[Issue]:
    """The archive-time findings of `change_dir/proposal.md`, all at WARNING level. `deltas`:
    `discover_spec_files(change_dir / "specs")` when the caller has it."""
    overrides = overrides or {}
    file = change_dir / "proposal.md"
    try:
        text = _read(file, overrides)
    except OSError:
        return []
    sections = parse_sections(normalize_content(text).split("\n"))
    why, what = find_section(sections, "Why"), find_section(sections, "What Changes")

    def warn(path: str, message: str, code: str, at: int | None = None) -> Issue:
        return Issue("WARNING", path, message, code, file=file, at=at)

    for title, section in (("Why", why), ("What Changes", what)):
        if section is None or not section.content:
            message = f"Change must have a {title} section. {msg.GUIDE_MISSING_CHANGE_SECTIONS}"
            return [warn("file", message, "openspec.proposal.missing-section")]
    assert why is not None and what is not None
    issues = []
    if js_len(why.content) < msg.MIN_WHY_SECTION_LENGTH:
        issues.append(
            warn("why", msg.CHANGE_WHY_TOO_SHORT, "openspec.proposal.why-short", why.line)
        )
    if js_len(why.content) > msg.MAX_WHY_SECTION_LENGTH:
        issues.append(warn("why", msg.CHANGE_WHY_TOO_LONG, "openspec.proposal.why-long", why.line))
    count, has_sections = _count_spec_deltas(change_dir, overrides, deltas)
    bullets = [] if has_sections else _bullet_deltas(what.content)
    count = count if has_sections else len(bullets)
    root = change_dir.parent.parent.parent
    meta = overrides.get(change_dir / ".openspec.yaml")
    if count == 0 and not read_skip_specs(change_dir, root_dir=root, content=meta).declared:
        message = f"{msg.CHANGE_NO_DELTAS}. {msg.GUIDE_NO_DELTAS}"
        issues.append(warn("deltas", message, "openspec.proposal.no-deltas", what.line))
    if count > msg.MAX_DELTAS_PER_CHANGE:
        issues.append(
            warn("deltas", msg.CHANGE_TOO_MANY_DELTAS, "openspec.proposal.too-many", what.line)
        )
    for i, (op, desc) in enumerate(bullets):
        if js_len(desc) < 10:
            code = "openspec.proposal.delta-brief"
            issues.append(
                warn(f"deltas[{i}].description", msg.DELTA_DESCRIPTION_TOO_BRIEF, code, what.line)
            )
        if op in ("ADDED", "MODIFIED"):
            text_ = f"{op} {msg.DELTA_MISSING_REQUIREMENTS}"
            issues.append(
                warn(
                    f"deltas[{i}].requirements",
                    text_,
                    "openspec.proposal.delta-no-requirements",
                    what.line,
                )
            )
    return issues
