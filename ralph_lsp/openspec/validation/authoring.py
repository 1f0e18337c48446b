"""Authoring help for specs, pure: symbols, the main-spec requirement a delta line names, and
the edits that fix the common validation errors (SPEC §11). The server turns them into LSP."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ralph_lsp.openspec.validation.blocks import (
    REQUIREMENT_HEADER,
    Block,
    extract_requirements_section,
    normalize_name,
)
from ralph_lsp.openspec.validation.discovery import Overrides, discover_spec_files, read_with
from ralph_lsp.openspec.validation.text import lines_and_mask, trim

_SECTION = re.compile(r"^##[ \t]+(ADDED|MODIFIED|REMOVED|RENAMED)[ \t]+Requirements[ \t]*$", re.I)
_ANY_SECTION = re.compile(r"^##[ \t]")
_SCENARIO = re.compile(r"^####[ \t]+(.*?)[ \t]*$")
_NAMED = re.compile(r"^\s*(?:[-*+]\s*)?(?:(?:FROM|TO):\s*)?`?###\s*Requirement:\s*(.+?)`?\s*$")


@dataclass
class Symbol:
    name: str
    kind: str  # "requirement" | "scenario"
    line: int  # 0-based
    end: int  # 0-based, inclusive
    children: list[Symbol] = field(default_factory=list)


def document_symbols(text: str) -> list[Symbol]:
    """Requirements with their scenarios, fenced examples left out."""
    lines, mask = lines_and_mask(text)
    out: list[Symbol] = []
    for i, line in enumerate(lines):
        if mask[i] or not line.startswith("#"):
            continue
        req = REQUIREMENT_HEADER.match(line)
        if req:
            out.append(Symbol(normalize_name(req.group(1)), "requirement", i, i))
        elif (sc := _SCENARIO.match(line)) and out:
            out[-1].children.append(Symbol(sc.group(1), "scenario", i, i))
        elif line.startswith("## ") and out and out[-1].end == out[-1].line:
            out[-1].end = i - 1
    for k, sym in enumerate(out):
        nxt = out[k + 1].line - 1 if k + 1 < len(out) else len(lines) - 1
        sym.end = min(sym.end, nxt) if sym.end > sym.line else nxt
        for c, child in enumerate(sym.children):
            child.end = sym.children[c + 1].line - 1 if c + 1 < len(sym.children) else sym.end
    return out


def section_at(text: str, line: int) -> str | None:
    """The delta section ("ADDED", "MODIFIED", …) that `line` is in, if any."""
    lines, mask = lines_and_mask(text)
    for i in range(min(line, len(lines) - 1), -1, -1):
        if not mask[i] and _ANY_SECTION.match(lines[i]):
            m = _SECTION.match(lines[i])
            return m.group(1).upper() if m else None
    return None


def named_requirement(text: str, line: int) -> str | None:
    """The requirement a MODIFIED/REMOVED header or a RENAMED FROM line names."""
    lines, _ = lines_and_mask(text)
    if not 0 <= line < len(lines) or section_at(text, line) not in (
        "MODIFIED",
        "REMOVED",
        "RENAMED",
    ):
        return None
    m = _NAMED.match(lines[line])
    return normalize_name(m.group(1)) if m else None


def main_spec_of(delta: Path) -> Path | None:
    """`openspec/specs/<capability>/spec.md` for `changes/<c>/specs/<capability>/spec.md`."""
    parts = delta.parts
    for i in range(len(parts) - 1, 2, -1):
        if parts[i] == "specs" and parts[i - 2] == "changes" and parts[i - 3] == "openspec":
            return Path(*parts[: i - 2], "specs", *parts[i + 1 :])
    return None


def main_requirements(delta: Path, overrides: Overrides) -> tuple[Path, list[Block]] | None:
    """The main spec a delta targets and its requirement blocks (None: no main spec yet)."""
    main = main_spec_of(delta)
    if main is None:
        return None
    try:
        return main, extract_requirements_section(read_with(main, overrides)).blocks
    except OSError:
        return None


def find_requirement(delta: Path, name: str, overrides: Overrides) -> tuple[Path, Block] | None:
    found = main_requirements(delta, overrides)
    if found is None:
        return None
    main, blocks = found
    block = next((b for b in blocks if normalize_name(b.name) == name), None)
    return (main, block) if block else None


def workspace_requirements(root: Path, overrides: Overrides) -> list[tuple[str, Path, Block]]:
    """Every requirement of every main spec: (capability, file, block)."""
    out = []
    for spec_id, file in discover_spec_files(root / "openspec" / "specs"):
        try:
            blocks = extract_requirements_section(read_with(file, overrides)).blocks
        except OSError:
            continue
        out += [(spec_id, file, b) for b in blocks]
    return out


@dataclass(frozen=True)
class Edit:
    """Replace lines [start, end) of the file with `text` (lines joined with "\\n")."""

    title: str
    start: int
    end: int
    text: str


def fixes(code: str, text: str, line: int, delta: Path | None, overrides: Overrides) -> list[Edit]:
    """The edits that fix the finding `code` on `line` of `text`."""
    lines, _ = lines_and_mask(text)
    if not 0 <= line < len(lines):
        return []
    current = lines[line]
    if code == "openspec.delta.skipped-header" and re.match(r"^###\s+Scenario:", current, re.I):
        return [Edit("Make it a scenario (####)", line, line + 1, "#" + current)]
    if code == "openspec.renamed.unpaired":
        m = re.match(r"^(\s*[-*+]?\s*)FROM:(.*)$", current)
        if m:
            to = f"{m.group(1)}TO:{m.group(2)}"
            return [Edit("Add the missing TO: line", line, line + 1, f"{current}\n{to}")]
    if code == "openspec.requirement.no-shall" or code == "openspec.requirement.no-text":
        return _move_shall(lines, line)
    if code == "openspec.modified.scenario-loss" and delta is not None:
        return _copy_current(lines, line, delta, overrides)
    return []


def _move_shall(lines: list[str], line: int) -> list[Edit]:
    """A header that carries the SHALL statement: keep a short name, the statement as body."""
    m = REQUIREMENT_HEADER.match(lines[line])
    if not m or not re.search(r"\b(SHALL|MUST)\b", m.group(1)):
        return []
    statement = trim(m.group(1))
    name = re.split(r"\s+(?:SHALL|MUST)\b", statement, maxsplit=1)[0]
    name = re.sub(r"^(The|A|An)\s+", "", name).strip() or statement
    new = f"### Requirement: {name[:1].upper()}{name[1:]}\n{statement.rstrip('.')}."
    return [Edit("Move SHALL/MUST into the requirement body", line, line + 1, new)]


def _copy_current(lines: list[str], line: int, delta: Path, overrides: Overrides) -> list[Edit]:
    """Replace the MODIFIED block with the main spec's current requirement, to edit from."""
    m = REQUIREMENT_HEADER.match(lines[line])
    if not m:
        return []
    found = find_requirement(delta, normalize_name(m.group(1)), overrides)
    if found is None:
        return []
    end = line + 1
    while end < len(lines) and not lines[end].startswith(("### ", "## ")):
        end += 1
    while end - 1 > line and not lines[end - 1].strip():
        end -= 1
    return [Edit("Copy the current requirement into MODIFIED", line, end, found[1].raw)]
