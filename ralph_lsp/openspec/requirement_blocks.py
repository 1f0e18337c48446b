"""Requirement blocks of a spec and of a delta spec, read as OpenSpec 1.13.2 reads them (SPEC §11).

Archive's view of the one port of the CLI's ``requirement-blocks`` parser, which is validation's
(:mod:`ralph_lsp.openspec.validation.blocks`, with the text rules of
:mod:`ralph_lsp.openspec.validation.text`): this module only puts that reading into the types
archive rebuilds specs with. A main spec is split around its ``## Requirements`` section (the
text before, the preamble, the blocks, the text after); a delta spec becomes a :class:`DeltaPlan`
(ADDED/MODIFIED blocks, REMOVED names, RENAMED ``FROM:``/``TO:`` pairs with the unpaired ones,
requirements outside every delta section, which sections the file has). The scenario comparison
is validation's as well, so archive and validate word it alike.

Pure: strings in, values out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ralph_lsp.openspec.validation.blocks import (
    REQUIREMENT_HEADER,
    Block,
    ScenarioDiff,
    diff_scenarios,
)
from ralph_lsp.openspec.validation.blocks import describe_balance as describe_scenario_balance
from ralph_lsp.openspec.validation.blocks import (
    extract_requirements_section as _read_requirements_section,
)
from ralph_lsp.openspec.validation.blocks import fold_name as fold_requirement_name
from ralph_lsp.openspec.validation.blocks import normalize_content as normalize_line_endings
from ralph_lsp.openspec.validation.blocks import normalize_name as normalize_requirement_name
from ralph_lsp.openspec.validation.blocks import parse_delta_spec as _read_delta_spec
from ralph_lsp.openspec.validation.text import (
    DOT,
    contains_shall_or_must,
    count_empty_scenarios,
    count_scenarios,
    lines_and_mask,
)
from ralph_lsp.openspec.validation.text import S as WS
from ralph_lsp.openspec.validation.text import fence_mask as build_code_fence_mask
from ralph_lsp.openspec.validation.text import requirement_body as extract_requirement_body
from ralph_lsp.openspec.validation.text import requirement_text as extract_requirement_text
from ralph_lsp.openspec.validation.text import trim as js_trim
from ralph_lsp.openspec.validation.text import trim_end as js_trim_end

__all__ = [
    "DOT",
    "REQUIREMENT_HEADER",
    "WS",
    "ScenarioDiff",
    "build_code_fence_mask",
    "contains_shall_or_must",
    "count_empty_scenarios",
    "count_scenarios",
    "describe_scenario_balance",
    "diff_scenario_names",
    "extract_requirement_body",
    "extract_requirement_text",
    "extract_requirements_section",
    "fold_requirement_name",
    "js_trim",
    "js_trim_end",
    "normalize_line_endings",
    "normalize_requirement_name",
    "parse_delta_spec",
]


# --- main spec: the Requirements section ---------------------------------------------------


@dataclass(frozen=True)
class RequirementBlock:
    """One ``### Requirement:`` block: its header line, normalised name and raw text."""

    header_line: str
    name: str
    raw: str


def _requirement_block(block: Block) -> RequirementBlock:
    return RequirementBlock(block.header_line, block.name, block.raw)


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
    section = _read_requirements_section(content)
    if not section.found:
        before = js_trim_end(content)
        return RequirementsSection(
            before=before + "\n\n" if before else "",
            header_line="## Requirements",
            preamble="",
            body_blocks=[],
            after="\n",
        )
    lines, _mask = lines_and_mask(content)
    header, end = section.header, section.end
    first_block = section.blocks[0].line - 1 if section.blocks else end
    before = "\n".join(lines[:header])
    after = "\n".join(lines[end:])
    return RequirementsSection(
        before=before + "\n" if js_trim_end(before) else before,
        header_line=lines[header],
        preamble=js_trim_end("\n".join(lines[header + 1 : first_block])),
        body_blocks=[_requirement_block(block) for block in section.blocks],
        after=after if after.startswith("\n") else "\n" + after,
    )


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


def parse_delta_spec(content: str) -> DeltaPlan:
    """Read a delta spec as the CLI's ``parseDeltaSpec`` does (validation's reading of it)."""
    read = _read_delta_spec(content)
    has = read.presence
    return DeltaPlan(
        added=[_requirement_block(block) for block in read.added],
        modified=[_requirement_block(block) for block in read.modified],
        removed=[removed.name for removed in read.removed],
        removed_blocks=[_requirement_block(block) for block in read.removed_blocks],
        renamed=[RenamePair(old.name, new.name) for old, new in read.renamed],
        unpaired_renames=[UnpairedRename(u.side, u.name, u.line) for u in read.unpaired_renames],
        orphaned_requirements=[
            OrphanedRequirement(orphan.name, orphan.section, orphan.line) for orphan in read.orphans
        ],
        skipped_headers=[
            SkippedHeader(skipped.name, skipped.section or "", skipped.line)
            for skipped in read.skipped_headers
        ],
        section_presence=SectionPresence(
            has["ADDED"], has["MODIFIED"], has["REMOVED"], has["RENAMED"]
        ),
    )


# --- scenarios of a MODIFIED block against the current one ---------------------------------


def diff_scenario_names(current: RequirementBlock, incoming: RequirementBlock) -> ScenarioDiff:
    """Both directions of the scenario comparison (multiplicity-aware), as validation makes it."""
    return diff_scenarios(_as_block(current), _as_block(incoming))


def _as_block(block: RequirementBlock) -> Block:
    return Block(block.header_line, block.name, block.raw, line=0)  # the line plays no part
