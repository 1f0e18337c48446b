"""The CLI's Markdown section parser (`MarkdownParser`): sections, a main spec's parts."""

from __future__ import annotations

from ralph_lsp.openspec.validation.text import (
    JS_WS_CHARS,
    LINE_TERMINATORS,
    WS_SET,
    fence_mask,
    header_lines,
    lines_and_mask,
    requirement_text,
    trim,
    trimmed_lines,
)

# The CLI's header pattern, `^(#{1,6})S+(DOT+)$`, is matched as string operations below.


class Section:
    """A header and what follows it up to the next header of its level or above. Its `content`
    (the trimmed text) is joined on first use: most sections of a large spec never need it."""

    __slots__ = ("_content", "body", "children", "level", "line", "title")

    def __init__(self, level: int, title: str, line: int, body: list[str]) -> None:
        self.level = level
        self.title = title
        self.line = line
        self.body = body
        self.children: list[Section] = []
        self._content: str | None = None

    @property
    def content(self) -> str:
        if self._content is None:
            self._content = trim("\n".join(self.body))
        return self._content

    def has_content(self) -> bool:
        """`trim(content) != ""` without joining: a line with more than whitespace."""
        for line in self.body:  # noqa: SIM110 (a generator costs more than the usual one line)
            if line.strip(JS_WS_CHARS):
                return True
        return False


class Requirement:
    __slots__ = ("line", "scenarios", "text")

    def __init__(self, text: str, scenarios: int, line: int) -> None:
        self.text, self.scenarios = text, scenarios
        self.line = line  # 0-based line of its header


class SpecModel:
    __slots__ = ("overview", "purpose_line", "requirements")

    def __init__(self, overview: str, requirements: list[Requirement], purpose_line: int) -> None:
        self.overview, self.requirements, self.purpose_line = overview, requirements, purpose_line


class SpecShapeError(Exception):
    """The spec has no Purpose or no Requirements section (the CLI throws, too)."""


def parse_sections(
    lines: list[str], mask: list[bool] | None = None, hashed: list[int] | None = None
) -> list[Section]:
    """The header tree: each header's content runs to the next header of its level or above.
    `hashed`: the indices of the lines starting `#`, when the caller has them (`header_lines`)."""
    mask = fence_mask(lines) if mask is None else mask
    if hashed is None:
        hashed = [i for i, line in enumerate(lines) if line[:1] == "#"]
    roots: list[Section] = []
    stack: list[Section] = []  # the titled headers' nesting (a section's parent)
    open_: list[Section] = []  # the sections not yet ended, by level: one pass finds their ends
    for i in hashed:
        line = lines[i]
        level = len(line) - len(line.lstrip("#"))  # `^(#{1,6})S+`, as string operations
        if mask[i] or level > 6 or line[level : level + 1] not in WS_SET:
            continue
        # every unfenced header, titled or not, ends the open sections of its level or below
        while open_ and open_[-1].level >= level:
            done = open_.pop()
            done.body = lines[done.line + 1 : i]
        rest = line[level:].lstrip(JS_WS_CHARS)
        if rest and "\u2028" not in rest and "\u2029" not in rest and "\r" not in rest:
            title = rest.rstrip(JS_WS_CHARS)  # what `_HEADER` captures, trimmed (no `\n` here)
        elif not rest and len(line) - level >= 2 and line[-1] not in LINE_TERMINATORS:
            # `_HEADER` on a line of only whitespace after the hashes: its group backs off to
            # the last character, trimmed to nothing. A rest holding a line terminator cannot
            # match (the pattern, tried, was quadratic in a long run of whitespace before it)
            title = ""
        else:
            continue
        section = Section(level, title, i, lines)
        while stack and stack[-1].level >= level:
            stack.pop()
        (stack[-1].children if stack else roots).append(section)
        stack.append(section)
        open_.append(section)
    for done in open_:
        done.body = lines[done.line + 1 :]
    return roots


def find_section(sections: list[Section], title: str) -> Section | None:
    for section in sections:
        if section.title.lower() == title.lower():
            return section
        child = find_section(section.children, title)
        if child:
            return child
    return None


def _body_lines(body: list[str]) -> list[str]:
    """What `requirement_text` reads of a section: its trimmed content's lines. Blank lines and
    the last line's trailing whitespace change nothing there (an unfenced line of `#`s and
    whitespace would have ended the section), so a body whose first line starts with no
    whitespace is read as it is, without trimming (the usual case)."""
    return body if body and body[0][:1] not in JS_WS_CHARS else trimmed_lines(body)


def parse_spec(content: str) -> SpecModel:
    lines, mask = lines_and_mask(content)
    sections = parse_sections(lines, mask, header_lines(content))
    purpose = find_section(sections, "Purpose")
    requirements = find_section(sections, "Requirements")
    if purpose is None or not purpose.content:
        raise SpecShapeError("Spec must have a Purpose section")
    if requirements is None:
        raise SpecShapeError("Spec must have a Requirements section")
    reqs = [
        Requirement(
            requirement_text(child.title, _body_lines(child.body)),
            sum(1 for s in child.children if s.has_content()),
            child.line,
        )
        for child in requirements.children
    ]
    return SpecModel(trim(purpose.content), reqs, purpose.line)
