"""JavaScript string semantics, so the ported rules read text exactly as the CLI does.

The CLI is TypeScript: its `\\s`, `trim()`, `.` and `length` differ from Python's on a few
characters (U+FEFF is JavaScript whitespace and not Python's; U+001C..U+001F and U+0085 the
reverse; `length` counts UTF-16 units). Every pattern of the port is built from these pieces.
"""

from __future__ import annotations

import functools
import re

TYPE_CHECKING = False  # typing's constant, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

# JavaScript's WhiteSpace + LineTerminator, the set `\s` and `trim()` use.
JS_WS_CHARS = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
S = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
NS = "[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
DOT = "[^\n\r\u2028\u2029]"


class LazyPattern:
    """A regular expression compiled on its first use. A `ralph-lsp validate` call is mostly
    process start and uses about half of the validation's patterns: compiling them all at
    import cost about 10 ms of it. Once compiled, `match`, `sub`, … are the compiled pattern's
    own methods, so a call costs what it costs on an `re.Pattern`."""

    __slots__ = ("_flags", "_pattern", "finditer", "fullmatch", "match", "search", "sub")
    finditer: Callable[..., Iterator[re.Match[str]]]
    fullmatch: Callable[..., re.Match[str] | None]
    match: Callable[..., re.Match[str] | None]
    search: Callable[..., re.Match[str] | None]
    sub: Callable[..., str]

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern, self._flags = pattern, flags
        for name in self.__slots__[2:]:
            setattr(self, name, functools.partial(self._first_call, name))

    def _first_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.compiled, name)(*args, **kwargs)

    @property
    def compiled(self) -> re.Pattern[str]:
        done = re.compile(self._pattern, self._flags)
        self.finditer, self.fullmatch, self.match = done.finditer, done.fullmatch, done.match
        self.search, self.sub = done.search, done.sub
        return done


def js_re(pattern: str, *, ignore_case: bool = False) -> LazyPattern:
    r"""A JavaScript pattern written with `\s`/`\S`/`.` spelled as S/NS/DOT, compiled on
    first use."""
    return LazyPattern(pattern, re.ASCII | (re.IGNORECASE if ignore_case else 0))


def ci(word: str) -> str:
    """`word` matched in any ASCII case, spelled out (`[Rr][Ee]…`): re.IGNORECASE makes every
    class of a pattern fold case, and compiling such a pattern costs tens of milliseconds."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


def trim(text: str) -> str:
    return text.strip(JS_WS_CHARS)


def trim_end(text: str) -> str:
    return text.rstrip(JS_WS_CHARS)


def trim_start(text: str) -> str:
    return text.lstrip(JS_WS_CHARS)


def trimmed_lines(lines: list[str]) -> list[str]:
    """`trim("\\n".join(lines)).split("\\n")` without building the joined text: the blank lines
    at either end dropped, the first line's leading and the last line's trailing whitespace."""
    first, last = 0, len(lines) - 1
    while first <= last and not lines[first].strip(JS_WS_CHARS):
        first += 1
    if first > last:
        return [""]
    while not lines[last].strip(JS_WS_CHARS):
        last -= 1
    out = lines[first : last + 1]
    out[0] = out[0].lstrip(JS_WS_CHARS)
    out[-1] = out[-1].rstrip(JS_WS_CHARS)
    return out


def js_len(text: str) -> int:
    """`String.prototype.length`: UTF-16 code units."""
    if text.isascii():  # the common case, without a loop over the characters
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def strip_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


WS_SET = frozenset(JS_WS_CHARS)
LINE_TERMINATORS = "\n\r\u2028\u2029"  # what `DOT` is not


def fence(line: str) -> tuple[str, int, str] | None:
    """`^S*(`{3,}|~{3,})` as string operations: (the fence's character, its length, the rest of
    the line), or None. A closing fence is one whose rest is only whitespace (`…S*$`)."""
    start = line.lstrip(JS_WS_CHARS)
    char = start[:1]
    if char != "`" and char != "~":
        return None
    rest = start.lstrip(char)
    length = len(start) - len(rest)
    return (char, length, rest) if length >= 3 else None


def dot_tail(tail: str) -> str | None:
    """`S*(DOT+)S*$` matched at the start of `tail`, as string operations: its group, or None.

    The leading whitespace goes, the group runs to the first line terminator, and whatever
    follows must be whitespace. When `tail` is only whitespace, the pattern backtracks and
    the group is its last character that is no line terminator."""
    body = tail.lstrip(JS_WS_CHARS)
    if body:
        if "\r" not in body and "\n" not in body and "\u2028" not in body and "\u2029" not in body:
            return body  # the usual line: nothing can end the group early
        end = len(body)
        for terminator in LINE_TERMINATORS:
            at = body.find(terminator, 0, end)
            if at != -1:
                end = at
        return None if body[end:].strip(JS_WS_CHARS) else body[:end]
    for char in reversed(tail):
        if char not in LINE_TERMINATORS:
            return char
    return None


def lazy_tail(tail: str, least: int, tick: bool) -> str | None:
    """`S{least,}(DOT+?)`?S*$` (the backtick only when `tick`) matched at the start of `tail`,
    as string operations: its group, or None. The pattern backtracks over every split of a
    whitespace run between its quantifiers, quadratic in a long line's run (a 100 KB line of
    spaces took seconds); what it finds is decided by the line's two ends alone.

    The group starts after the leading whitespace and ends at the last character that is not
    whitespace (before a closing backtick, when one may be left out); it holds no line
    terminator. When `tail` is only whitespace, the group is its last character that is no
    line terminator, past the `least` it must keep."""
    body = tail.lstrip(JS_WS_CHARS)
    if len(tail) - len(body) < least:
        return None
    if not body:
        for at in range(len(tail) - 1, least - 1, -1):
            if tail[at] not in LINE_TERMINATORS:
                return tail[at]
        return None
    group = body.rstrip(JS_WS_CHARS)
    if tick and len(group) > 1 and group[-1] == "`":
        group = group[:-1]
    for terminator in LINE_TERMINATORS:
        if terminator in group:
            return None
    return group


def drop_closing_run(name: str) -> str:
    """`name` without the match of `[ \t]+#+[ \t]*$` (a header's closing run), as string
    operations: searched from every position, the pattern rescanned a long run of spaces from
    each of them."""
    spaced = name.rstrip(" \t")
    hashes = spaced.rstrip("#")
    if len(hashes) == len(spaced):
        return name
    kept = hashes.rstrip(" \t")
    return name if len(kept) == len(hashes) else name[: len(kept)]


def hashes_then_space(line: str, least: int, most: int) -> bool:
    """`^#{least,most}S` as string operations (a pattern costs about 0.2 ms to compile, which
    every `validate` call paid for each of them)."""
    if line[:1] != "#":
        return False
    count = len(line) - len(line.lstrip("#"))
    return least <= count <= most and line[count : count + 1] in WS_SET


def fence_mask(lines: list[str]) -> list[bool]:
    """True for each line inside a fenced code block, the fence lines included."""
    mask = [False] * len(lines)
    active: tuple[str, int] | None = None
    since = 0  # the line that opened the active fence
    # only a line holding a backtick or a tilde can open or close a fence
    for i in [i for i, line in enumerate(lines) if "`" in line or "~" in line]:
        line = lines[i]
        f = fence(line)
        if active is None:
            if f:
                active, since = (f[0], f[1]), i
            continue
        if f and f[0] == active[0] and f[1] >= active[1] and not f[2].strip(JS_WS_CHARS):
            mask[since : i + 1] = [True] * (i + 1 - since)
            active = None
    if active is not None:  # never closed: fenced to the end
        mask[since:] = [True] * (len(lines) - since)
    return mask


@functools.lru_cache(maxsize=8)
def lines_and_mask(content: str) -> tuple[list[str], list[bool]]:
    """A file's lines (BOM dropped, line ends normalised) and their fence mask, computed once
    for the several readers of one text (callers must not modify them)."""
    lines = normalize_newlines(strip_bom(content)).split("\n")
    return lines, fence_mask(lines)


@functools.lru_cache(maxsize=8)
def header_lines(content: str) -> list[int]:
    """The indices of `lines_and_mask(content)`'s lines starting `#`, fenced or not: the
    readers of a main spec look for their headers among these instead of every line (a spec of
    10,000 requirements has some 90,000 lines, 20,000 of them headers). Callers must not modify
    the list."""
    return [i for i, line in enumerate(lines_and_mask(content)[0]) if line[:1] == "#"]


_SHALL = LazyPattern(r"\b(SHALL|MUST)\b", re.ASCII)
_METADATA_LINE = js_re(r"^\*\*[^*]+\*\*:")
SCENARIO_HEADER = js_re(rf"^####{S}+")  # (a match is `hashes_then_space(line, 4, 4)`)


def contains_shall_or_must(text: str) -> bool:
    return _SHALL.search(text) is not None


def requirement_body(body_lines: list[str]) -> str:
    """The requirement's text: unfenced, non-blank lines up to the first header."""
    joined = "\n".join(body_lines)  # one search for a fence instead of one per line
    mask = fence_mask(body_lines) if "`" in joined or "~" in joined else None
    captured: list[str] = []
    metadata: list[str] = []
    for i, line in enumerate(body_lines):
        if mask is not None and mask[i]:
            continue
        if line[:1] == "#" and hashes_then_space(line, 1, 6):
            break
        trimmed = line.strip(JS_WS_CHARS)
        if not trimmed:
            continue
        if trimmed[:2] == "**" and _METADATA_LINE.match(trimmed):
            metadata.append(trimmed)
        else:
            captured.append(trimmed)
    return "\n".join(captured) if captured else "\n".join(metadata)


def requirement_text(title: str, body_lines: list[str]) -> str:
    return requirement_body(body_lines) or trim(title)


def scenario_bodies(body_lines: list[str]) -> list[str]:
    mask = fence_mask(body_lines)
    bodies: list[str] = []
    for i, line in enumerate(body_lines):
        if mask[i] or not hashes_then_space(line, 4, 4):
            continue
        end = i + 1
        while end < len(body_lines) and (mask[end] or not hashes_then_space(body_lines[end], 1, 4)):
            end += 1
        bodies.append("\n".join(body_lines[i + 1 : end]))
    return bodies


def count_scenarios(body_lines: list[str]) -> int:
    return sum(1 for body in scenario_bodies(body_lines) if trim(body))


def count_empty_scenarios(body_lines: list[str]) -> int:
    return sum(1 for body in scenario_bodies(body_lines) if not trim(body))
