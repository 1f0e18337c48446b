"""Completion, definition and hover in spec files, as plain data.

A completion replaces the text of its line before the cursor (`Completion.new_text`, a snippet
when `snippet` is set): typing `##`, `### R` or `- FROM: ` and choosing an item writes the whole
header the CLI reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.openspec.authoring.outline import Ref, outline, refs, section_key
from ralph_lsp.openspec.authoring.specs import (
    Reader,
    disk_reader,
    find_requirement,
    main_requirements,
    main_spec_of,
)
from ralph_lsp.openspec.validation.blocks import Block

REQUIREMENT_SNIPPET = (
    "### Requirement: ${1:Name}\n"
    "The system SHALL ${2:do something}.\n\n"
    "#### Scenario: ${3:Name}\n"
    "- **WHEN** ${4:something happens}\n"
    "- **THEN** ${5:this is the outcome}\n"
)
SCENARIO_SNIPPET = (
    "#### Scenario: ${1:Name}\n"
    "- **WHEN** ${2:something happens}\n"
    "- **THEN** ${3:this is the outcome}\n"
)
SECTIONS = {
    "ADDED": "New requirements of the capability.",
    "MODIFIED": "Changed requirements: each block replaces the main spec's whole block.",
    "REMOVED": "Requirements the change deletes from the main spec.",
    "RENAMED": "Renames, each a `- FROM:` line followed by its `- TO:` line.",
}


@dataclass(frozen=True)
class Completion:
    label: str
    new_text: str  # replaces the line's text before the cursor
    kind: str  # "section" | "snippet" | "requirement"
    detail: str = ""
    documentation: str = ""
    snippet: bool = False


def _section_items(prefix: str) -> list[Completion]:
    if not ("## ".startswith(prefix) or prefix.startswith("## ")):
        return []
    return [
        Completion(
            f"## {key} Requirements", f"## {key} Requirements\n\n", "section", "delta section", doc
        )
        for key, doc in SECTIONS.items()
    ]


def _block_items(prefix: str) -> list[Completion]:
    if prefix and not prefix.startswith("#"):
        return []
    requirement = Completion(
        "### Requirement:",
        REQUIREMENT_SNIPPET,
        "snippet",
        "requirement with a scenario",
        "A requirement: its SHALL statement in the body, then a `#### Scenario:`.",
        True,
    )
    scenario = Completion(
        "#### Scenario:",
        SCENARIO_SNIPPET,
        "snippet",
        "scenario with WHEN/THEN",
        "A scenario of the requirement above (four `#`).",
        True,
    )
    return [requirement, scenario]


def _name_items(key: str, prefix: str, blocks: list[Block]) -> list[Completion]:
    out = []
    for block in blocks:
        if key == "RENAMED":
            text = f"- FROM: `### Requirement: {block.name}`"
        elif key == "REMOVED" and prefix.lstrip()[:1] in ("-", "*", "+"):
            text = f"- `### Requirement: {block.name}`"
        else:
            text = f"### Requirement: {block.name}"
        out.append(Completion(block.name, text, "requirement", "main spec requirement", block.raw))
    return out


def complete(
    path: Path, content: str, line: int, prefix: str, read: Reader = disk_reader
) -> list[Completion]:
    """What to offer at `line` of a spec file, whose text before the cursor is `prefix`."""
    o = outline(content)
    main = main_spec_of(path)
    stripped = prefix.lstrip()
    items: list[Completion] = []
    key = section_key(o.section_at(line)) if main is not None else None
    if main is not None and key in ("MODIFIED", "REMOVED", "RENAMED"):
        wants_names = key != "RENAMED" or "FROM:".startswith(stripped.lstrip("-*+ ")[:5])
        if wants_names and (
            stripped.startswith("#") or stripped[:1] in ("-", "*", "+") or not stripped
        ):
            items += _name_items(key, stripped, main_requirements(main, read))
    if stripped != prefix:  # indented: not a header
        return items
    if main is not None and (not prefix or prefix.startswith("#")) and not prefix.startswith("###"):
        items += _section_items(prefix)
    if key != "RENAMED" and key != "REMOVED" and (not prefix or prefix.startswith("#")):
        items += _block_items(prefix)
    return items


def reference_at(path: Path, content: str, line: int) -> Ref | None:
    """The main-spec requirement name written on `line` of a delta, if there is one."""
    if main_spec_of(path) is None:
        return None
    return next((r for r in refs(outline(content)) if r.line == line), None)


def definition(
    path: Path, content: str, line: int, read: Reader = disk_reader
) -> tuple[Ref, Path, Block] | None:
    """The name on `line` of a delta, its main spec and that spec's requirement block."""
    ref = reference_at(path, content, line)
    main = main_spec_of(path)
    if ref is None or main is None:
        return None
    block = find_requirement(main_requirements(main, read), ref.name)
    return None if block is None else (ref, main, block)


def hover_markdown(main: Path, capability_root: Path, block: Block) -> str:
    """The requirement's current text, as Markdown, with where it is."""
    try:
        where = main.relative_to(capability_root).as_posix()
    except ValueError:
        where = main.as_posix()
    return f"**Current text** in `{where}` (line {block.line}):\n\n{block.raw}\n"
