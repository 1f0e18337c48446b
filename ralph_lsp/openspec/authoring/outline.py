"""A spec file's outline: `## ` sections, `### Requirement:` blocks and their `####` scenarios,
each with its 0-based lines, read as the CLI reads them (code fences ignored)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ralph_lsp.openspec.validation.blocks import REQUIREMENT_HEADER, normalize_name
from ralph_lsp.openspec.validation.text import (
    DOT,
    SCENARIO_HEADER,
    S,
    js_re,
    lines_and_mask,
    trim,
)

SECTION_HEADER = js_re(rf"^##{S}+({DOT}+)$")
BULLET_NAME = js_re(rf"^{S}*[-*+]{S}*`?###{S}*Requirement:{S}*({DOT}+?)`?{S}*$")
FROM_LINE = js_re(rf"^{S}*[-*+]?{S}*FROM:{S}*`?###{S}*Requirement:{S}*({DOT}+?)`?{S}*$")
TO_LINE = js_re(rf"^{S}*[-*+]?{S}*TO:{S}*`?###{S}*Requirement:{S}*({DOT}+?)`?{S}*$")
_ANY_HEADER = js_re(rf"^#{{1,4}}{S}")
_SCENARIO_NAME = js_re(rf"^####{S}+(?:Scenario:{S}*)?({DOT}*?){S}*$", ignore_case=True)
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
        title = None
        for t, at in self.sections:
            if at <= line:
                title = t
        return title

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


def _scenarios(o: Outline, start: int, end: int) -> tuple[Scenario, ...]:
    heads = [
        i for i in range(start + 1, end) if not o.mask[i] and SCENARIO_HEADER.match(o.lines[i])
    ]
    out = []
    for i in heads:
        stop = next(
            (j for j in range(i + 1, end) if not o.mask[j] and _ANY_HEADER.match(o.lines[j])), end
        )
        m = _SCENARIO_NAME.match(o.lines[i])
        name = trim(m.group(1)) if m else trim(o.lines[i][4:])
        out.append(Scenario(name, i, _trimmed_end(o.lines, i, stop)))
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
        if (m := SECTION_HEADER.match(line)) and not line.startswith("###"):
            o.sections.append((trim(m.group(1)), i))
            heads.append((i, None))
        elif m := REQUIREMENT_HEADER.match(line):
            heads.append((i, normalize_name(m.group(1))))
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
        m = None
        if key in ("MODIFIED", "REMOVED"):
            m = REQUIREMENT_HEADER.match(line)
            if m is None and key == "REMOVED":
                m = BULLET_NAME.match(line)
        elif key == "RENAMED":
            m = FROM_LINE.match(line)
        if m is not None and key is not None:
            out.append(_ref(line, i, normalize_name(m.group(1)), key))
    return out
