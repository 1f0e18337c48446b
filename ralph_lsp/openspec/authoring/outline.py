"""A spec file's outline: `## ` sections, `### Requirement:` blocks and their `####` scenarios,
each with its 0-based lines, read as the CLI reads them (code fences ignored).

Linear in the text on every input: the server reads an outline on its event loop for each
document-symbol, completion, definition, hover and code-action request. The CLI's header
patterns backtracked over a long run of whitespace (a 40 KB line of spaces took 7.9 s in the
`- FROM:` pattern), so each is read by the validation's string matchers, and a line's section is
found by bisection, not by a walk over every section above it (quadratic in a file of
alternating sections and requirements)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ralph_lsp.openspec.validation.blocks import (
    normalize_name,
    removed_bullet_name,
    renamed_from_name,
    requirement_header_name,
    section_title,
)
from ralph_lsp.openspec.validation.text import (
    JS_WS_CHARS,
    LINE_TERMINATORS,
    SCENARIO_HEADER,
    S,
    js_re,
    lines_and_mask,
    trim,
)

_ANY_HEADER = js_re(rf"^#{{1,4}}{S}")
DELTA_KEYS = ("ADDED", "MODIFIED", "REMOVED", "RENAMED")


@dataclass(frozen=True)
class Scenario:
    name: str
    line: int
    end: int  # the line after its last non-blank line


@dataclass(frozen=True)
class Requirement:
    name: str
    line: int
    end: int
    section: str | None  # the `## ` title above it (None above the first)
    scenarios: tuple[Scenario, ...]

    @property
    def delta_key(self) -> str | None:
        """ADDED, MODIFIED, REMOVED or RENAMED when it sits in that delta section."""
        return section_key(self.section)


@dataclass(frozen=True)
class Ref:
    """A requirement name that names a requirement of the main spec, where it is written."""

    name: str
    line: int
    start: int  # column of the name in the line
    end: int
    key: str  # MODIFIED, REMOVED or RENAMED


@dataclass
class Outline:
    lines: list[str]
    mask: list[bool]
    sections: list[tuple[str, int]] = field(default_factory=list)  # (title, line)
    requirements: list[Requirement] = field(default_factory=list)

    def section_at(self, line: int) -> str | None:
        """The title of the last section whose header is at or above `line` (the sections are
        in the order of their lines)."""
        k = bisect.bisect_right(self.sections, line, key=lambda s: s[1])
        return self.sections[k - 1][0] if k else None

    def requirement_at(self, line: int) -> Requirement | None:
        return next((r for r in self.requirements if r.line <= line < max(r.end, r.line + 1)), None)


def section_key(title: str | None) -> str | None:
    if title is None:
        return None
    words = title.split()
    if len(words) == 2 and words[1].lower() == "requirements" and words[0].upper() in DELTA_KEYS:
        return words[0].upper()
    return None


def _trimmed_end(lines: list[str], start: int, end: int) -> int:
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def scenario_name(line: str) -> str:
    """A `####` header's scenario name: the trimmed group of the CLI's
    `^####S+(?:Scenario:S*)?(DOT*?)S*$` (`Scenario:` in any ASCII case), or, where the pattern
    does not match, the line after `####` trimmed. As string operations: the pattern was
    quadratic in a long run of whitespace inside the name.

    The group is the text after the header's whitespace and its `Scenario:` (and the
    whitespace after that), up to the line's trailing whitespace; the pattern matches unless
    that holds a line terminator (a `.` of JavaScript stops at one)."""
    rest = line[4:]
    body = rest.lstrip(JS_WS_CHARS)
    if line[:4] != "####" or len(body) == len(rest):
        return trim(rest)
    keyword = body[:9]
    if keyword.isascii() and keyword.lower() == "scenario:":
        body = body[9:].lstrip(JS_WS_CHARS)
    core = body.rstrip(JS_WS_CHARS)
    return trim(rest) if any(t in core for t in LINE_TERMINATORS) else core


def _scenarios(o: Outline, start: int, end: int) -> tuple[Scenario, ...]:
    heads = [
        i for i in range(start + 1, end) if not o.mask[i] and SCENARIO_HEADER.match(o.lines[i])
    ]
    out = []
    for i in heads:
        stop = next(
            (j for j in range(i + 1, end) if not o.mask[j] and _ANY_HEADER.match(o.lines[j])), end
        )
        out.append(Scenario(scenario_name(o.lines[i]), i, _trimmed_end(o.lines, i, stop)))
    return tuple(out)


def outline(content: str) -> Outline:
    """Sections and requirements of a main or delta spec (a requirement ends at the next
    requirement or `## ` header, as the CLI's reader ends it)."""
    lines, mask = lines_and_mask(content)
    o = Outline(lines, mask)
    heads: list[tuple[int, str | None]] = []  # requirement lines and their names; None: a `## `
    for i, line in enumerate(lines):
        if mask[i] or not line.startswith("##"):
            continue
        if not line.startswith("###") and (title := section_title(line)) is not None:
            o.sections.append((trim(title), i))
            heads.append((i, None))
        elif (name := requirement_header_name(line)) is not None:
            heads.append((i, normalize_name(name)))
    for k, (i, name) in enumerate(heads):
        if name is None:
            continue
        end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        section = o.section_at(i)
        scenarios = _scenarios(o, i, end)
        o.requirements.append(Requirement(name, i, _trimmed_end(lines, i, end), section, scenarios))
    return o


def _ref(line: str, at: int, name: str, key: str) -> Ref:
    start = line.rfind(name)
    start = start if start >= 0 else 0
    return Ref(name, at, start, start + len(name), key)


def refs(o: Outline) -> list[Ref]:
    """The names in MODIFIED, REMOVED and RENAMED (FROM:) that name a main-spec requirement."""
    out = []
    for i, line in enumerate(o.lines):
        if o.mask[i]:
            continue
        key = section_key(o.section_at(i))
        name = None
        if key in ("MODIFIED", "REMOVED"):
            name = requirement_header_name(line)
            if name is None and key == "REMOVED":
                name = removed_bullet_name(line)
        elif key == "RENAMED":
            name = renamed_from_name(line)
        if name is not None and key is not None:
            out.append(_ref(line, i, normalize_name(name), key))
    return out
