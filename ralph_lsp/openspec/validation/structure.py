"""Main-spec structure (`findMainSpecStructureIssues`) and the placeholder Purpose check."""

from __future__ import annotations

import functools
import re

from ralph_lsp.openspec.validation.blocks import (
    is_delta_header,
    is_requirements_header,
    normalize_name,
    requirement_header_name,
)
from ralph_lsp.openspec.validation.messages import PLACEHOLDER_PREFIX, PLACEHOLDER_SUFFIX
from ralph_lsp.openspec.validation.record import Record
from ralph_lsp.openspec.validation.text import (
    LazyPattern,
    fence_mask,
    hashes_then_space,
    header_lines,
    lines_and_mask,
    normalize_newlines,
    trim,
)


class StructureIssue(Record):
    __slots__ = ("kind", "line", "message")

    def __init__(self, kind: str, line: int, message: str) -> None:
        self.kind, self.message = kind, message
        self.line = line  # 1-based


_DELTA_TAIL = (
    "Delta headers are only valid inside openspec/changes/<name>/specs/<capability-path>/spec.md "
    "and truncate the parsed ## Requirements section."
)
_OUTSIDE_TAIL = (
    "Main specs only parse requirements inside that section, so this requirement is currently "
    "invisible to validate, list, and archive."
)
_DUPLICATE_TAIL = (
    "Requirement names must be unique so spec updates cannot discard one block while updating "
    "another."
)


def _requirements_span(lines: list[str], hashes: list[int]) -> tuple[int, int]:
    """`## Requirements` and the next `## ` header, among the lines starting `##` (`hashes`)."""
    head = next((i for i in hashes if is_requirements_header(lines[i])), -1)
    if head == -1:
        return -1, len(lines)
    # `###…` is no top-level header (`##` then whitespace): only the other `##` lines are tried
    rest = (i for i in hashes if i > head and lines[i][2:3] != "#")
    end = next((i for i in rest if hashes_then_space(lines[i], 2, 2)), len(lines))
    return head, end


@functools.lru_cache(maxsize=256)
def structure_issues(content: str) -> tuple[StructureIssue, ...]:
    """Delta headers, requirements outside `## Requirements`, duplicate requirement names."""
    bom = content.startswith("\ufeff")
    if bom:  # kept here, unlike the other readers
        raw = normalize_newlines(content).split("\n")
        mask = fence_mask(raw)
    else:
        raw, mask = lines_and_mask(content)
    lines = ["" if mask[i] else line for i, line in enumerate(raw)] if True in mask else raw
    if bom:
        hashes = [i for i, line in enumerate(lines) if line.startswith("##")]
    else:  # (a fenced line is blank in `lines`)
        hashes = [i for i in header_lines(content) if lines[i][1:2] == "#"]
    head, end = _requirements_span(lines, hashes)
    seen: dict[str, int] = {}
    out: list[StructureIssue] = []
    for i in [i for i in hashes if lines[i][3:4] != "#"]:  # `####…` is neither
        line = lines[i]  # (a delta header or a requirement header starts so)
        # `##` then whitespace for a delta header, `###` then whitespace for a requirement:
        # the fourth character tells which pattern can match (`####…` neither).
        name = (
            requirement_header_name(line, spaced=True)
            if line[2:3] == "#" and line[3:4] != "#"
            else None
        )
        if name is None and line[2:3] != "#" and is_delta_header(line):
            text = f'Main spec contains delta header "{trim(line)}". {_DELTA_TAIL}'
            out.append(StructureIssue("delta-header", i + 1, text))
        elif name is None:
            continue
        elif not (head != -1 and head < i < end):
            text = (
                f'Requirement header "{trim(line)}" appears outside the main ## Requirements'
                " section. "
            )
            out.append(StructureIssue("requirement-outside", i + 1, text + _OUTSIDE_TAIL))
        elif (name := normalize_name(name)) in seen:
            text = (
                f'Requirement header "{trim(line)}" duplicates the requirement declared on line '
                f"{seen[name]}. {_DUPLICATE_TAIL}"
            )
            out.append(StructureIssue("duplicate-requirement", i + 1, text))
        else:
            seen[name] = i + 1
    return tuple(out)


_WORD_END = r"(?![^\W_]|_|[\u0300-\u036f])"
_PUNCT = "(?=[ \\t]*(?:$|\\n|[:\\-\u2013\u2014.,;()\\[\\]{}]))"
_SHOUTED = LazyPattern(rf"^(?:TBD|TODO){_WORD_END}")
_PUNCTUATED = LazyPattern(rf"^(?:TBD|TODO){_WORD_END}{_PUNCT}", re.IGNORECASE)
_PURPOSE_HEADER = LazyPattern(r"^ {0,3}##(?!#)[ \t]+Purpose[ \t]*$", re.IGNORECASE)
_TOP_LEVEL = LazyPattern(r"^ {0,3}#{1,2}(?!#)[ \t]+")


def _unfenced(text: str) -> list[str]:
    lines = normalize_newlines(text).split("\n")
    mask = fence_mask(lines)
    return [line for i, line in enumerate(lines) if not mask[i]]


def _generated_at(text: str) -> int | None:
    """Where the placeholder sentence starts: the last prefix before the first suffix that has
    a prefix before it. The first prefix is found once and the suffix is looked for from there
    on: looking back for a prefix from every suffix made a Purpose of repeated suffixes
    quadratic (a 3 MB one took seconds on every edit)."""
    first = text.find(PLACEHOLDER_PREFIX)
    if first == -1:
        return None
    # the prefix holds no '.', so a suffix found from `first` on starts after that prefix
    suffix = text.find(PLACEHOLDER_SUFFIX, first)
    if suffix == -1:
        return None
    return text.rfind(PLACEHOLDER_PREFIX, first, suffix)


def placeholder_line(overview: str, content: str) -> tuple[bool, int | None]:
    """(is the Purpose a placeholder, the 1-based line carrying it when it can be found)."""
    prose = trim("\n".join(_unfenced(overview)))
    # both patterns start with TBD or TODO, whose letters fold to ASCII letters only: the
    # patterns are compiled (about 0.6 ms) only for a Purpose that starts so
    start = prose[:3]
    leading = (
        start.isascii()
        and start.lower() in ("tbd", "tod")
        and bool(_SHOUTED.match(prose) or _PUNCTUATED.match(prose))
    )
    if not leading and _generated_at(prose) is None:
        return False, None
    lines = normalize_newlines(content).split("\n")
    mask = fence_mask(lines)
    head = next(
        (i for i, line in enumerate(lines) if not mask[i] and _PURPOSE_HEADER.match(line)), -1
    )
    if head == -1:
        return True, None
    kept: list[tuple[int, str]] = []
    for i in range(head + 1, len(lines)):
        if mask[i]:
            continue
        if _TOP_LEVEL.match(lines[i]):
            break
        if leading and trim(lines[i]):
            return True, i + 1
        kept.append((i + 1, lines[i]))
    if leading:
        return True, None
    purpose = "\n".join(text for _, text in kept)
    at = _generated_at(purpose)
    if at is None:
        return True, None
    offset = purpose[:at].count("\n")
    return True, kept[offset][0] if offset < len(kept) else None
