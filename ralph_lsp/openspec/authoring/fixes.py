"""Code actions for the common errors of spec files, as text edits (0-based lines, columns as
Python string indices), each tied to the validation rule ids it resolves:

- a scenario written under `###` becomes `####` (`openspec.delta.skipped-header`,
  `openspec.requirement.no-scenario`);
- a SHALL/MUST only in the `### Requirement:` header is written as the body's first line
  (`openspec.requirement.no-text`, `openspec.requirement.no-shall`);
- a RENAMED `FROM:` without its `TO:` gets one (`openspec.renamed.unpaired`);
- a MODIFIED header gets the main spec's current block (a quick fix when its body is empty, a
  refactor otherwise);
- a MODIFIED block that omits scenarios of the main spec gets them copied in
  (`openspec.modified.scenario-loss`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.openspec.authoring.outline import (
    Outline,
    Requirement,
    outline,
    section_key,
)
from ralph_lsp.openspec.authoring.specs import (
    Reader,
    disk_reader,
    find_requirement,
    main_requirements,
    main_spec_of,
)
from ralph_lsp.openspec.validation.blocks import (
    Block,
    normalize_name,
    renamed_from_name,
    renamed_to_name,
)
from ralph_lsp.openspec.validation.scenario_diff import diff_scenarios
from ralph_lsp.openspec.validation.text import S, contains_shall_or_must, js_re, requirement_body

_H3_SCENARIO = js_re(rf"^###{S}+Scenario:", ignore_case=True)
QUICKFIX = "quickfix"
REFACTOR = "refactor.rewrite"


@dataclass(frozen=True)
class Edit:
    line: int
    start: int
    end_line: int
    end: int
    new_text: str


@dataclass(frozen=True)
class Fix:
    title: str
    kind: str  # QUICKFIX or REFACTOR
    codes: tuple[str, ...]  # the rule ids whose findings it resolves
    lines: tuple[int, ...]  # the lines those findings sit on
    edits: tuple[Edit, ...]


def _touches(r: Requirement, first: int, last: int) -> bool:
    return r.line <= last and first < max(r.end, r.line + 1)


def _scenario_levels(o: Outline, r: Requirement) -> Fix | None:
    bad = [
        i
        for i in range(r.line + 1, max(r.end, r.line + 1))
        if not o.mask[i] and _H3_SCENARIO.match(o.lines[i])
    ]
    if not bad:
        return None
    edits = tuple(Edit(i, 0, i, 0, "#") for i in bad)
    codes = ("openspec.delta.skipped-header", "openspec.requirement.no-scenario")
    title = "Make the scenario a level-4 header (####)" + ("s" if len(bad) > 1 else "")
    return Fix(title, QUICKFIX, codes, (r.line, *bad), edits)


def _statement(name: str) -> str:
    name = name.strip()
    return name if name[-1:] in (".", "!", "?") else name + "."


def _shall_into_body(o: Outline, r: Requirement) -> Fix | None:
    if not contains_shall_or_must(r.name):
        return None
    body = requirement_body(o.lines[r.line + 1 : max(r.end, r.line + 1)])
    if body and contains_shall_or_must(body):
        return None
    header = o.lines[r.line]
    edit = Edit(r.line, len(header), r.line, len(header), "\n" + _statement(r.name))
    codes = ("openspec.requirement.no-text", "openspec.requirement.no-shall")
    return Fix(
        "Write the SHALL/MUST statement in the requirement body",
        QUICKFIX,
        codes,
        (r.line,),
        (edit,),
    )


def _missing_to(o: Outline, first: int, last: int) -> list[Fix]:
    out = []
    for i in range(first, min(last, len(o.lines) - 1) + 1):
        found = renamed_from_name(o.lines[i])
        if o.mask[i] or found is None or section_key(o.section_at(i)) != "RENAMED":
            continue
        after = next((j for j in range(i + 1, len(o.lines)) if o.lines[j].strip()), None)
        if after is not None and not o.mask[after] and renamed_to_name(o.lines[after]) is not None:
            continue
        name = normalize_name(found)
        indent = o.lines[i][: len(o.lines[i]) - len(o.lines[i].lstrip())]
        text = f"\n{indent}- TO: `### Requirement: {name} (renamed)`"
        edit = Edit(i, len(o.lines[i]), i, len(o.lines[i]), text)
        out.append(
            Fix("Add the missing TO: line", QUICKFIX, ("openspec.renamed.unpaired",), (i,), (edit,))
        )
    return out


def _copy_main(o: Outline, r: Requirement, main: Path, read: Reader) -> list[Fix]:
    if r.delta_key != "MODIFIED":
        return []
    block = find_requirement(main_requirements(main, read), r.name)
    if block is None:
        return []
    end = max(r.end, r.line + 1) - 1
    edit = Edit(r.line, 0, end, len(o.lines[end]), block.raw)
    if not any(line.strip() for line in o.lines[r.line + 1 : end + 1]):
        codes = ("openspec.requirement.no-text", "openspec.requirement.no-scenario")
        title = "Copy the main spec's current requirement into MODIFIED"
        return [Fix(title, QUICKFIX, codes, (r.line,), (edit,))]
    reset = Fix(
        "Replace with the main spec's current requirement", REFACTOR, (), (r.line,), (edit,)
    )
    omitted = _omitted_scenarios(o, r, block)
    return [reset] if omitted is None else [omitted, reset]


def _omitted_scenarios(o: Outline, r: Requirement, block: Block) -> Fix | None:
    end = max(r.end, r.line + 1)
    mine = Block(o.lines[r.line], r.name, "\n".join(o.lines[r.line : end]), r.line + 1)
    missing = diff_scenarios(block, mine).missing
    if not missing:
        return None
    current = outline(block.raw)
    lines = current.lines
    chunks = [
        "\n".join(lines[s.line : s.end])
        for req in current.requirements
        for s in req.scenarios
        if s.name in missing
    ]
    if not chunks:
        return None
    last = end - 1
    edit = Edit(last, len(o.lines[last]), last, len(o.lines[last]), "\n\n" + "\n\n".join(chunks))
    codes = ("openspec.modified.scenario-loss",)
    title = "Copy the omitted scenarios from the main spec"
    return Fix(title, QUICKFIX, codes, (r.line,), (edit,))


def fixes(path: Path, content: str, first: int, last: int, read: Reader = disk_reader) -> list[Fix]:
    """The actions for lines `first`..`last` (inclusive) of a spec file."""
    o = outline(content)
    main = main_spec_of(path)
    out: list[Fix] = []
    for r in o.requirements:
        if not _touches(r, first, last):
            continue
        for found in (_scenario_levels(o, r), _shall_into_body(o, r)):
            if found is not None:
                out.append(found)
        if main is not None and first <= r.line <= last:
            out += _copy_main(o, r, main, read)
    out += _missing_to(o, first, last)
    return out
