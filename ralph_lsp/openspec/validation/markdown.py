"""The CLI's Markdown section parser (`MarkdownParser`): sections, a main spec's parts."""

from __future__ import annotations

from dataclasses import dataclass, field

from ralph_lsp.openspec.validation.blocks import normalize_content
from ralph_lsp.openspec.validation.text import DOT, S, fence_mask, js_re, requirement_text, trim

_HEADER = js_re(rf"^(#{{1,6}}){S}+({DOT}+)$")
_HEADER_START = js_re(rf"^(#{{1,6}}){S}+")


@dataclass
class Section:
    level: int
    title: str
    content: str
    line: int  # 0-based
    children: list[Section] = field(default_factory=list)


@dataclass(frozen=True)
class Requirement:
    text: str
    scenarios: int
    line: int  # 0-based line of its header


@dataclass(frozen=True)
class SpecModel:
    overview: str
    requirements: list[Requirement]
    purpose_line: int


class SpecShapeError(Exception):
    """The spec has no Purpose or no Requirements section (the CLI throws, too)."""


def parse_sections(lines: list[str]) -> list[Section]:
    mask = fence_mask(lines)
    roots: list[Section] = []
    stack: list[Section] = []
    for i, line in enumerate(lines):
        if mask[i]:
            continue
        m = _HEADER.match(line)
        if not m:
            continue
        level = len(m.group(1))
        content = []
        for j in range(i + 1, len(lines)):
            h = None if mask[j] else _HEADER_START.match(lines[j])
            if h and len(h.group(1)) <= level:
                break
            content.append(lines[j])
        section = Section(level, trim(m.group(2)), trim("\n".join(content)), i)
        while stack and stack[-1].level >= level:
            stack.pop()
        (stack[-1].children if stack else roots).append(section)
        stack.append(section)
    return roots


def find_section(sections: list[Section], title: str) -> Section | None:
    for section in sections:
        if section.title.lower() == title.lower():
            return section
        child = find_section(section.children, title)
        if child:
            return child
    return None


def parse_spec(content: str) -> SpecModel:
    lines = normalize_content(content).split("\n")
    sections = parse_sections(lines)
    purpose = find_section(sections, "Purpose")
    requirements = find_section(sections, "Requirements")
    if purpose is None or not purpose.content:
        raise SpecShapeError("Spec must have a Purpose section")
    if requirements is None:
        raise SpecShapeError("Spec must have a Requirements section")
    reqs = [
        Requirement(
            requirement_text(child.title, child.content.split("\n")),
            sum(1 for s in child.children if trim(s.content)),
            child.line,
        )
        for child in requirements.children
    ]
    return SpecModel(trim(purpose.content), reqs, purpose.line)
