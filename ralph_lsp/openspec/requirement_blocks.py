"""Requirement blocks of a spec and of a delta spec, read as OpenSpec 1.13.2 reads them (SPEC §11).

A faithful port of the CLI's ``requirement-blocks``, ``requirement-text`` and ``code-fence``
parsers: the same section titles (case-insensitive, repeated headers merged), the same
``### Requirement:`` header, code fences masked out, REMOVED names as headers or bullets, RENAMED
``FROM:``/``TO:`` pairs read per section with the unpaired ones reported, and the scenario
comparison that archive and validate share. JavaScript's ``\\s``, ``.`` and ``trim()`` differ from
Python's, so the patterns spell out JavaScript's sets (``WS``, ``DOT``, :func:`js_trim`).

Pure: strings in, values out.

Long: one module for the three small CLI modules it ports, so each can be read beside its source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ralph_lsp.openspec.validation.text import (
    SCENARIO_HEADER,
    fence_mask,
    requirement_body,
    requirement_text,
    trim,
    trim_end,
)
from ralph_lsp.openspec.validation.text import (
    contains_shall_or_must as contains_shall_or_must,
)
from ralph_lsp.openspec.validation.text import (
    count_empty_scenarios as count_empty_scenarios,
)
from ralph_lsp.openspec.validation.text import (
    count_scenarios as count_scenarios,
)

#: JavaScript's ``\\s`` (WhiteSpace and LineTerminator), which is also what ``trim()`` strips.
_WS_CHARS = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
WS = f"[{_WS_CHARS}]"
#: JavaScript's ``.`` without the ``s`` flag: anything but a line terminator.
DOT = "[^\n\r\u2028\u2029]"


# The text-level rules are validation's (one port of the CLI's readers serves both): trim as
# ``String.prototype.trim`` does, the code-fence mask, a requirement's text and its scenarios.
js_trim = trim
js_trim_end = trim_end
build_code_fence_mask = fence_mask
extract_requirement_body = requirement_body
extract_requirement_text = requirement_text


# --- requirement names ---------------------------------------------------------------------

_CLOSING_RUN = re.compile(r"[ \t]+#+[ \t]*$")
_RUN_OF_WS = re.compile(f"{WS}+")


def normalize_requirement_name(name: str) -> str:
    """A header's name without an ATX closing run (``Foo ###`` → ``Foo``), trimmed."""
    return js_trim(_CLOSING_RUN.sub("", name, count=1))


def fold_requirement_name(name: str) -> str:
    """Case- and whitespace-insensitive fold, for typo detection only (matching is exact)."""
    return _RUN_OF_WS.sub(" ", normalize_requirement_name(name).lower())


REQUIREMENT_HEADER = re.compile(f"^###{WS}*Requirement:{WS}*({DOT}+){WS}*$", re.IGNORECASE)
_REQUIREMENTS_TITLE = re.compile(f"^##{WS}+Requirements{WS}*$", re.IGNORECASE)
_TOP_LEVEL = re.compile(f"^##{WS}+")
_SECTION_HEADER = re.compile(f"^(##){WS}+({DOT}+)$")
_H3 = re.compile(f"^###{WS}+({DOT}+?){WS}*$")
_REMOVED_BULLET = re.compile(f"^{WS}*[-*+]{WS}*`?###{WS}*Requirement:{WS}*({DOT}+?)`?{WS}*$")
_FROM = re.compile(f"^{WS}*[-*+]?{WS}*FROM:{WS}*`?###{WS}*Requirement:{WS}*({DOT}+?)`?{WS}*$")
_TO = re.compile(f"^{WS}*[-*+]?{WS}*TO:{WS}*`?###{WS}*Requirement:{WS}*({DOT}+?)`?{WS}*$")


def normalize_line_endings(content: str) -> str:
    """Without a leading BOM, with ``\\r\\n`` and ``\\r`` as ``\\n``."""
    if content.startswith("\ufeff"):
        content = content[1:]
    return content.replace("\r\n", "\n").replace("\r", "\n")


# --- main spec: the Requirements section ---------------------------------------------------


@dataclass(frozen=True)
class RequirementBlock:
    """One ``### Requirement:`` block: its header line, normalised name and raw text."""

    header_line: str
    name: str
    raw: str


@dataclass
class RequirementsSection:
    """A spec split around its ``## Requirements`` section (``RequirementsSectionParts``)."""

    before: str
    header_line: str
    preamble: str
    body_blocks: list[RequirementBlock]
    after: str


def extract_requirements_section(content: str) -> RequirementsSection:
    """Split a main spec around ``## Requirements`` (an empty one at the end when it has none)."""
    lines = normalize_line_endings(content).split("\n")
    mask = build_code_fence_mask(lines)
    header = next(
        (i for i, line in enumerate(lines) if not mask[i] and _REQUIREMENTS_TITLE.match(line)), -1
    )
    if header == -1:
        before = js_trim_end(content)
        return RequirementsSection(
            before=before + "\n\n" if before else "",
            header_line="## Requirements",
            preamble="",
            body_blocks=[],
            after="\n",
        )
    end = next(
        (i for i in range(header + 1, len(lines)) if not mask[i] and _TOP_LEVEL.match(lines[i])),
        len(lines),
    )
    body, body_mask = lines[header + 1 : end], mask[header + 1 : end]
    preamble: list[str] = []
    cursor = 0
    while cursor < len(body) and not _is_requirement_header(body, body_mask, cursor):
        preamble.append(body[cursor])
        cursor += 1
    blocks = _read_blocks(body, body_mask, cursor, lambda _i: None)
    before = "\n".join(lines[:header])
    after = "\n".join(lines[end:])
    return RequirementsSection(
        before=before + "\n" if js_trim_end(before) else before,
        header_line=lines[header],
        preamble=js_trim_end("\n".join(preamble)),
        body_blocks=blocks,
        after=after if after.startswith("\n") else "\n" + after,
    )


def _is_requirement_header(lines: Sequence[str], mask: Sequence[bool], i: int) -> bool:
    return not mask[i] and REQUIREMENT_HEADER.match(lines[i]) is not None


def _read_blocks(
    lines: Sequence[str], mask: Sequence[bool], start: int, on_other: Callable[[int], None]
) -> list[RequirementBlock]:
    """The requirement blocks from ``start``; ``on_other(i)`` sees each line that starts none."""
    blocks: list[RequirementBlock] = []
    i = start
    while i < len(lines):
        while i < len(lines) and not _is_requirement_header(lines, mask, i):
            on_other(i)
            i += 1
        if i >= len(lines):
            break
        header_line = lines[i]
        match = REQUIREMENT_HEADER.match(header_line)
        assert match is not None
        buf = [header_line]
        i += 1
        while (
            i < len(lines)
            and not _is_requirement_header(lines, mask, i)
            and not (not mask[i] and _TOP_LEVEL.match(lines[i]))
        ):
            on_other(i)
            buf.append(lines[i])
            i += 1
        name = normalize_requirement_name(match.group(1))
        blocks.append(RequirementBlock(header_line, name, js_trim_end("\n".join(buf))))
    return blocks


# --- delta spec ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RenamePair:
    """``FROM:`` → ``TO:``, both normalised."""

    from_name: str
    to_name: str


@dataclass(frozen=True)
class UnpairedRename:
    """A ``FROM:`` or ``TO:`` line that formed no pair (``side`` is ``"FROM"`` or ``"TO"``)."""

    side: str
    name: str
    line: int


@dataclass(frozen=True)
class OrphanedRequirement:
    """A ``### Requirement:`` outside every delta section (``section`` None: above all ``##``)."""

    name: str
    section: str | None
    line: int


@dataclass(frozen=True)
class SkippedHeader:
    """A ``###`` header in ADDED/MODIFIED that is not a requirement header."""

    header: str
    section: str
    line: int


@dataclass(frozen=True)
class SectionPresence:
    """Which delta sections the file has (any spelling of the title's case)."""

    added: bool = False
    modified: bool = False
    removed: bool = False
    renamed: bool = False


@dataclass
class DeltaPlan:
    """What a delta spec asks for (the CLI's ``DeltaPlan``); lines are 1-based."""

    added: list[RequirementBlock] = field(default_factory=list)
    modified: list[RequirementBlock] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    removed_blocks: list[RequirementBlock] = field(default_factory=list)
    renamed: list[RenamePair] = field(default_factory=list)
    unpaired_renames: list[UnpairedRename] = field(default_factory=list)
    orphaned_requirements: list[OrphanedRequirement] = field(default_factory=list)
    skipped_headers: list[SkippedHeader] = field(default_factory=list)
    section_presence: SectionPresence = field(default_factory=SectionPresence)


@dataclass(frozen=True)
class _Body:
    lines: list[str]
    mask: list[bool]
    start_line: int  # 1-based line of the body's first line


@dataclass(frozen=True)
class _Lookup:
    title: str
    bodies: list[_Body]
    found: bool


DELTA_SECTION_TITLES = (
    "ADDED Requirements",
    "MODIFIED Requirements",
    "REMOVED Requirements",
    "RENAMED Requirements",
)
_DELTA_TITLES_FOLDED = frozenset(t.lower() for t in DELTA_SECTION_TITLES)


def parse_delta_spec(content: str) -> DeltaPlan:
    """Read a delta spec as the CLI's ``parseDeltaSpec`` does."""
    lines = normalize_line_endings(content).split("\n")
    mask = build_code_fence_mask(lines)
    sections = _split_sections(lines, mask)
    added, modified, removed, renamed = (_lookup(sections, t) for t in DELTA_SECTION_TITLES)
    plan = DeltaPlan(
        section_presence=SectionPresence(added.found, modified.found, removed.found, renamed.found)
    )
    for body in added.bodies:
        plan.added += _section_blocks(body, added.title, plan.skipped_headers)
    for body in modified.bodies:
        plan.modified += _section_blocks(body, modified.title, plan.skipped_headers)
    for body in removed.bodies:
        plan.removed += _removed_names(body)
    for body in removed.bodies:
        plan.removed_blocks += _read_blocks(body.lines, body.mask, 0, lambda _i: None)
    for body in renamed.bodies:
        plan.renamed += _renamed_pairs(body, plan.unpaired_renames)
    plan.unpaired_renames.sort(key=lambda u: u.line)
    plan.skipped_headers.sort(key=lambda s: s.line)
    plan.orphaned_requirements = _orphaned_requirements(lines, mask)
    return plan


def _split_sections(lines: list[str], mask: list[bool]) -> list[tuple[str, _Body]]:
    heads: list[tuple[str, int]] = []
    for i, line in enumerate(lines):
        if mask[i]:
            continue
        match = _SECTION_HEADER.match(line)
        if match:
            heads.append((js_trim(match.group(2)), i))
    sections: list[tuple[str, _Body]] = []
    for n, (title, index) in enumerate(heads):
        end = heads[n + 1][1] if n + 1 < len(heads) else len(lines)
        body = _Body(lines[index + 1 : end], mask[index + 1 : end], index + 2)
        sections.append((title, body))
    return sections


def _lookup(sections: list[tuple[str, _Body]], desired: str) -> _Lookup:
    target = desired.lower()
    matches = [(title, body) for title, body in sections if title.lower() == target]
    if not matches:
        return _Lookup(desired, [], False)
    return _Lookup(matches[0][0], [body for _, body in matches], True)


def _section_blocks(body: _Body, section: str, sink: list[SkippedHeader]) -> list[RequirementBlock]:
    if not body.lines:
        return []

    def record(i: int) -> None:
        if body.mask[i]:
            return
        h3 = _H3.match(body.lines[i])
        if h3 and not REQUIREMENT_HEADER.match(body.lines[i]):
            sink.append(SkippedHeader(js_trim(h3.group(1)), section, body.start_line + i))

    return _read_blocks(body.lines, body.mask, 0, record)


def _removed_names(body: _Body) -> list[str]:
    names: list[str] = []
    for i, line in enumerate(body.lines):
        if body.mask[i]:
            continue
        match = REQUIREMENT_HEADER.match(line) or _REMOVED_BULLET.match(line)
        if match:
            names.append(normalize_requirement_name(match.group(1)))
    return names


def _renamed_pairs(body: _Body, unpaired: list[UnpairedRename]) -> list[RenamePair]:
    pairs: list[RenamePair] = []
    pending: tuple[str, int] | None = None
    for i, line in enumerate(body.lines):
        if body.mask[i]:
            continue
        from_match, to_match = _FROM.match(line), _TO.match(line)
        if from_match:
            if pending:
                unpaired.append(UnpairedRename("FROM", *pending))
            pending = (normalize_requirement_name(from_match.group(1)), body.start_line + i)
        elif to_match:
            to_name = normalize_requirement_name(to_match.group(1))
            if pending is None:
                unpaired.append(UnpairedRename("TO", to_name, body.start_line + i))
                continue
            pairs.append(RenamePair(pending[0], to_name))
            pending = None
    if pending:
        unpaired.append(UnpairedRename("FROM", *pending))
    return pairs


def _orphaned_requirements(lines: list[str], mask: list[bool]) -> list[OrphanedRequirement]:
    orphans: list[OrphanedRequirement] = []
    section: str | None = None
    for i, line in enumerate(lines):
        if mask[i]:
            continue
        section_match = _SECTION_HEADER.match(line)
        if section_match:
            section = js_trim(section_match.group(2))
            continue
        if section is not None and section.lower() in _DELTA_TITLES_FOLDED:
            continue
        header = REQUIREMENT_HEADER.match(line)
        if header:
            name = normalize_requirement_name(header.group(1))
            orphans.append(OrphanedRequirement(name, section, i + 1))
    return orphans


# --- scenarios of a MODIFIED block against the current one ---------------------------------


@dataclass(frozen=True)
class ScenarioDiff:
    """Scenario names the current block has and the incoming lacks (``missing``), and back."""

    missing: list[str]
    added: list[str]
    current_count: int
    incoming_count: int


_SCENARIO_PREFIX = re.compile(f"^Scenario:{WS}*", re.IGNORECASE)


def _scenario_names(raw: str) -> list[str]:
    lines = raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    mask = build_code_fence_mask(lines)
    names: list[str] = []
    for i, line in enumerate(lines):
        if not mask[i] and SCENARIO_HEADER.match(line):
            name = _CLOSING_RUN.sub("", SCENARIO_HEADER.sub("", line, count=1), count=1)
            names.append(js_trim(_SCENARIO_PREFIX.sub("", name, count=1)))
    return names


def _unmatched(names: list[str], against: list[str]) -> list[str]:
    remaining: dict[str, int] = {}
    for name in against:
        remaining[name] = remaining.get(name, 0) + 1
    out: list[str] = []
    for name in names:
        if remaining.get(name, 0) > 0:
            remaining[name] -= 1
        else:
            out.append(name)
    return out


def diff_scenario_names(current: RequirementBlock, incoming: RequirementBlock) -> ScenarioDiff:
    """Both directions of the scenario comparison (multiplicity-aware)."""
    current_names, incoming_names = _scenario_names(current.raw), _scenario_names(incoming.raw)
    return ScenarioDiff(
        missing=_unmatched(current_names, incoming_names),
        added=_unmatched(incoming_names, current_names),
        current_count=len(current_names),
        incoming_count=len(incoming_names),
    )


def find_missing_current_scenarios(
    current: RequirementBlock, incoming: RequirementBlock
) -> list[str]:
    """Scenario names a MODIFIED block would drop from the main spec."""
    return diff_scenario_names(current, incoming).missing


_MAX_LISTED_ADDED = 3


def describe_scenario_balance(diff: ScenarioDiff) -> str:
    """The sentence archive and validate both append when scenarios would be lost."""

    def count(value: int) -> str:
        return f"{value} {'scenario' if value == 1 else 'scenarios'}"

    scale = (
        f"The modified block has {count(diff.incoming_count)}; "
        f"the current spec has {count(diff.current_count)}."
    )
    if not diff.added:
        return f"{scale} It adds none."
    listed = ", ".join(f'"{name}"' for name in diff.added[:_MAX_LISTED_ADDED])
    rest = len(diff.added) - _MAX_LISTED_ADDED
    names = f"{listed} and {rest} more" if rest > 0 else listed
    return f"{scale} It adds {count(len(diff.added))} not in the current spec: {names}."
