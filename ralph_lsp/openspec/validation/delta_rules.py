"""The rules for one delta spec file (`validateChangeDeltaSpecs`' loop body) and scenario loss."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ralph_lsp.openspec.validation import messages as msg
from ralph_lsp.openspec.validation.blocks import (
    Block,
    DeltaPlan,
    blocks_by_name,
    fold_name,
    normalize_name,
)
from ralph_lsp.openspec.validation.discovery import read_once
from ralph_lsp.openspec.validation.issues import Issue
from ralph_lsp.openspec.validation.scenario_diff import describe_balance, diff_scenarios
from ralph_lsp.openspec.validation.text import (
    LazyPattern,
    contains_shall_or_must,
    count_empty_scenarios,
    count_scenarios,
    requirement_body,
)

_NAMELESS = LazyPattern(r"^requirement:?$", re.IGNORECASE | re.ASCII)
_EMPTY_HINT = (
    " (a scenario header with no body under it does not count; add its steps, "
    'e.g. "- **WHEN** ..." and "- **THEN** ...")'
)


class Emit:
    """Issues of one delta file: `add(level, message, code, at, line)` keeps each rule one line."""

    def __init__(self, rel: str, file: Path) -> None:
        self.rel, self.file = rel, file
        self.issues: list[Issue] = []

    def add(
        self, level: str, message: str, code: str, at: int | None, line: int | None = None
    ) -> None:
        item = Issue(level, self.rel, message, code, line=line, file=self.file, at=at)
        self.issues.append(item)


def structural_issues(plan: DeltaPlan, rel: str, file: Path) -> list[Issue]:
    """Skipped `###` headers, unpaired renames and requirements outside delta sections."""
    out = Emit(rel, file)
    for s in plan.skipped_headers:
        if _NAMELESS.match(s.name):
            text = (
                f'Header "### {s.name}" in {s.section} is missing a requirement name and is '
                'ignored by validation. Add a name, e.g. "### Requirement: <name>".'
            )
        else:
            text = (
                f'Header "### {s.name}" in {s.section} is not a "### Requirement:" header and is '
                f'ignored by validation. Use "### Requirement: {s.name}" if it should be validated '
                "as a requirement."
            )
        out.add("INFO", text, "openspec.delta.skipped-header", s.line - 1, s.line)
    for u in plan.unpaired_renames:
        missing = "TO" if u.side == "FROM" else "FROM"
        text = (
            f'RENAMED {u.side}: "{u.name}" has no matching {missing}: line. Write each rename as '
            "a FROM: line followed immediately by its TO: line."
        )
        out.add("ERROR", text, "openspec.renamed.unpaired", u.line - 1, u.line)
    for o in plan.orphans:
        where = f'under "## {o.section}"' if o.section else 'above the first "## " section'
        text = (
            f'Requirement "{o.name}" is {where}, which is not a delta section, so it is ignored. '
            'Move it under "## ADDED Requirements", "## MODIFIED Requirements", '
            '"## REMOVED Requirements", or "## RENAMED Requirements".'
        )
        out.add("WARNING", text, "openspec.delta.orphan-requirement", o.line - 1, o.line)
    return out.issues


@functools.lru_cache(maxsize=1024)
def _body_facts(raw: str) -> tuple[str, int, int]:
    """A block's requirement text, its count of scenarios with a body and (when none has one)
    of those without, cached by the block's text: an edit checks every unchanged block of the
    change again."""
    body_lines = raw.split("\n")[1:]
    scenarios = count_scenarios(body_lines)
    empty = count_empty_scenarios(body_lines) if scenarios < 1 else 0  # (only then asked)
    return requirement_body(body_lines), scenarios, empty


def block_issues(
    op: str, blocks: list[Block], rel: str, file: Path
) -> tuple[list[Issue], set[str]]:
    """ADDED or MODIFIED blocks: duplicates, body text and SHALL/MUST, scenarios."""
    out = Emit(rel, file)
    names: set[str] = set()
    for block in blocks:
        at, key, label = block.line - 1, normalize_name(block.name), f'{op} "{block.name}"'
        if key in names:
            text = f'Duplicate requirement in {op}: "{block.name}"'
            out.add("ERROR", text, "openspec.delta.duplicate", at)
        names.add(key)
        body, scenarios, empty_scenarios = _body_facts(block.raw)
        if not body:
            if contains_shall_or_must(block.name):
                text = msg.missing_shall(label, block.name, guidance=False)
            else:
                text = f"{label} is missing requirement text"
            out.add("ERROR", text, "openspec.requirement.no-text", at)
        elif not contains_shall_or_must(body):
            text = msg.missing_shall(label, block.name, guidance=True)
            out.add("WARNING", text, "openspec.requirement.no-shall", at)
        if scenarios < 1:
            hint = _EMPTY_HINT if empty_scenarios else ""
            text = f"{label} must include at least one scenario{hint}"
            out.add("ERROR", text, "openspec.requirement.no-scenario", at)
    return out.issues, names


def _duplicates(plan: DeltaPlan, out: Emit) -> list[str]:
    """Duplicate REMOVED names and RENAMED sides; the REMOVED names in order."""
    removed: list[str] = []
    for r in plan.removed:
        key = normalize_name(r.name)
        if key in removed:
            text = f'Duplicate requirement in REMOVED: "{r.name}"'
            out.add("ERROR", text, "openspec.delta.duplicate", r.line - 1)
        else:
            removed.append(key)
    froms: set[str] = set()
    tos: set[str] = set()
    for f, t in plan.renamed:
        fk, tk = normalize_name(f.name), normalize_name(t.name)
        if fk in froms:
            text = f'Duplicate FROM in RENAMED: "{f.name}"'
            out.add("ERROR", text, "openspec.renamed.duplicate", f.line - 1)
        if tk in tos:
            text = f'Duplicate TO in RENAMED: "{t.name}"'
            out.add("ERROR", text, "openspec.renamed.duplicate", t.line - 1)
        froms.add(fk)
        tos.add(tk)
    return removed


def cross_section_issues(
    plan: DeltaPlan, added: set[str], modified: set[str], rel: str, file: Path
) -> list[Issue]:
    """Duplicates in REMOVED/RENAMED and a name in two sections of one file."""
    out = Emit(rel, file)
    removed = _duplicates(plan, out)
    for n in _in_order(plan.modified, modified):
        for other, names in (("REMOVED", removed), ("ADDED", added)):
            if n in names:
                text = f'Requirement present in both MODIFIED and {other}: "{n}"'
                out.add("ERROR", text, "openspec.delta.conflict", _line_of(plan, n))
    for n in _in_order(plan.added, added):
        if n in removed:
            text = f'Requirement present in both ADDED and REMOVED: "{n}"'
            out.add("ERROR", text, "openspec.delta.conflict", _line_of(plan, n))
    for f, t in plan.renamed:
        fk, tk = normalize_name(f.name), normalize_name(t.name)
        if fk in modified:
            text = f'MODIFIED references old name from RENAMED. Use new header for "{t.name}"'
            out.add("ERROR", text, "openspec.renamed.modified-old-name", f.line - 1)
        if tk in added:
            text = f'RENAMED TO collides with ADDED for "{t.name}"'
            out.add("ERROR", text, "openspec.renamed.collides", t.line - 1)
        match = next((r for r in removed if fold_name(r) == fold_name(fk)), None)
        if match is not None:
            extra = "" if match == fk else f' (REMOVED spells it "{match}")'
            text = f'Requirement present in both RENAMED and REMOVED: "{f.name}"{extra}'
            out.add("ERROR", text, "openspec.delta.conflict", f.line - 1)
    return out.issues


def _in_order(blocks: list[Block], names: set[str]) -> list[str]:
    seen: list[str] = []
    for b in blocks:
        k = normalize_name(b.name)
        if k in names and k not in seen:
            seen.append(k)
    return seen


def _line_of(plan: DeltaPlan, name: str) -> int | None:
    for b in [*plan.modified, *plan.added]:
        if normalize_name(b.name) == name:
            return b.line - 1
    return None


def scenario_loss(
    plan: DeltaPlan, main_file: Path, rel: str, file: Path, overrides: dict[Path, str]
) -> list[Issue]:
    """MODIFIED blocks that drop a scenario the main spec still has (archive would refuse).
    `overrides` holds the texts standing for files; the read here adds to it (`read_once`)."""
    try:
        main = read_once(main_file, overrides)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError:
        return []
    current = blocks_by_name(main)
    renamed_from = {normalize_name(t.name): normalize_name(f.name) for f, t in plan.renamed}
    renamed_away = {normalize_name(f.name) for f, _ in plan.renamed}
    out: list[Issue] = []
    for block in plan.modified:
        key = normalize_name(block.name)
        if key in renamed_away:
            continue
        cur = _current_block(key, current, renamed_from)
        if cur is None:
            continue
        diff = diff_scenarios(cur, block)
        if not diff.missing:
            continue
        names = ", ".join(f'"{n}"' for n in diff.missing)
        out.append(
            Issue(
                "ERROR",
                rel,
                (
                    f'MODIFIED "{block.name}" omits scenario(s) the current spec still has: '
                    f"{names}. {describe_balance(diff)} "
                    "Copy the omitted scenarios into the MODIFIED block (a MODIFIED "
                    "requirement replaces the whole block, so "
                    "archive refuses to drop them)."
                ),
                "openspec.modified.scenario-loss",
                file=file,
                at=block.line - 1,
            )
        )
    return out


def _current_block(
    key: str, current: dict[str, Block], renamed_from: dict[str, str]
) -> Block | None:
    visited: set[str] = set()
    k: str | None = key
    while k is not None and k not in visited:
        if k in current:
            return current[k]
        visited.add(k)
        k = renamed_from.get(k)
    return None
