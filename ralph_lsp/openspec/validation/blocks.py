"""The CLI's requirement-block reader: delta specs and a main spec's requirements section.

A port of OpenSpec's `requirement-blocks` parser, keeping the line of every block so the
server can place a diagnostic where the CLI names none.
"""

from __future__ import annotations

import bisect
import functools

from ralph_lsp.openspec.validation.record import Record
from ralph_lsp.openspec.validation.text import (
    DOT,
    JS_WS_CHARS,
    LINE_TERMINATORS,
    NS,
    LazyPattern,
    S,
    ci,
    dot_tail,
    drop_closing_run,
    hashes_then_space,
    header_lines,
    js_re,
    lazy_tail,
    lines_and_mask,
    normalize_newlines,
    strip_bom,
    trim,
    trim_end,
)

# The CLI's `^###S*Requirement:S*(DOT+)S*$` (any ASCII case), written so that it cannot
# backtrack over a run: each run is maximal (`X*(?!X)`: giving back one character leaves an
# `X` next, which the lookahead refuses at once) and the group starts at the first character
# that is no whitespace, or, for a tail of only whitespace, at its last character that is no
# line terminator (where the CLI's pattern ends up by giving back). As written by the CLI it
# was quadratic in a long run of spaces before a line terminator (a 40 KB header took 14 s;
# the authoring outline and archive read headers with it). No possessive quantifier or atomic
# group: Python's `re` has them from 3.11 on, and the package supports 3.10
# (`tests/test_regex_syntax.py`).
REQUIREMENT_HEADER = js_re(
    rf"^###{S}*(?!{S}){ci('Requirement:')}(?:{S}*(?={NS})|(?={S}*$){S}*(?={DOT}{S}*$))"
    rf"({DOT}+(?!{DOT})){S}*$"
)
# The CLI's `^S*[-*+]S*`?###S*Requirement:S*(DOT+?)`?S*$` and its FROM/TO kin: the part up
# to `Requirement:` is a pattern whose runs are maximal (each is followed by a character it
# cannot match, so giving back changes nothing but the time: two `S*` around an optional
# bullet were quadratic in a line of spaces), the rest is `lazy_tail`. `(?:X|(?!X))` is an
# optional `X` that is taken whenever it is there (`X?+` in Python 3.11 and later).
_REMOVED_BULLET = js_re(rf"^{S}*(?!{S})[-*+]{S}*(?!{S})(?:`|(?!`))###{S}*(?!{S})Requirement:")
_FROM = js_re(
    rf"^{S}*(?!{S})(?:[-*+]|(?![-*+])){S}*(?!{S})FROM:{S}*(?!{S})(?:`|(?!`))###{S}*(?!{S})Requirement:"
)
_TO = js_re(
    rf"^{S}*(?!{S})(?:[-*+]|(?![-*+])){S}*(?!{S})TO:{S}*(?!{S})(?:`|(?!`))###{S}*(?!{S})Requirement:"
)
_WS_RUN = js_re(rf"{S}+")
DELTA_TITLES = (
    "ADDED Requirements",
    "MODIFIED Requirements",
    "REMOVED Requirements",
    "RENAMED Requirements",
)
_DELTA_FOLDED = {t.lower() for t in DELTA_TITLES}


def ci_prefix(text: str, word: str) -> bool:
    """`text` starts with `word` (lower case) in any ASCII case, as `ci(word)` matches."""
    start = text[: len(word)]
    return start.isascii() and start.lower() == word


def requirement_header_name(line: str, *, spaced: bool = False) -> str | None:
    """`REQUIREMENT_HEADER`'s group (`^###S*Requirement:S*(DOT+)S*$`), or None, as string
    operations; `spaced`: `S+` after `###` (the structure check's variant). The patterns this
    module and `structure` try on every header line are string operations: compiling them cost
    about 2.5 ms of each `validate` call (`tests/openspec_validate/test_string_matchers.py`)."""
    if line[:16] == "### Requirement:":  # the usual header: `S+` then the exact keyword
        return dot_tail(line[16:])
    if line[:3] != "###":
        return None
    after = line[3:].lstrip(JS_WS_CHARS)
    if spaced and len(after) == len(line) - 3:
        return None
    if after[:12] != "Requirement:" and not ci_prefix(after, "requirement:"):  # (the usual first)
        return None
    return dot_tail(after[12:])


def section_title(line: str) -> str | None:
    """A `## ` header's title (the group of `^(##)S+(DOT+)$`), or None, as string operations."""
    if line[:2] != "##":
        return None
    tail = line[2:-1] if line.endswith("\n") else line[2:]  # `$` also matches before it
    title = tail.lstrip(JS_WS_CHARS)
    if len(title) == len(tail):
        return None
    if not title:  # backtracking: the last whitespace character, if it is no line terminator
        return tail[-1] if len(tail) >= 2 and tail[-1] not in LINE_TERMINATORS else None
    return None if any(t in title for t in LINE_TERMINATORS) else title


def is_requirements_header(line: str) -> bool:
    """`^##S+RequirementsS*$`, in any ASCII case, as string operations."""
    after = line[2:].lstrip(JS_WS_CHARS)
    return (
        line[:2] == "##"
        and len(after) < len(line) - 2
        and ci_prefix(after, "requirements")
        and not after[12:].strip(JS_WS_CHARS)
    )


def is_delta_header(line: str) -> bool:
    """`^##S+(ADDED|MODIFIED|REMOVED|RENAMED)S+RequirementsS*$`, in any ASCII case."""
    after = line[2:].lstrip(JS_WS_CHARS)
    if line[:2] != "##" or len(after) == len(line) - 2:
        return False
    for op in ("added", "modified", "removed", "renamed"):
        if ci_prefix(after, op):
            return is_requirements_header("##" + after[len(op) :])
    return False


def normalize_name(name: str) -> str:
    if "#" not in name:  # no closing run to drop (the common case)
        return trim(name)
    return trim(drop_closing_run(name))


def fold_name(name: str) -> str:
    return _WS_RUN.sub(" ", normalize_name(name).lower())


def normalize_content(content: str) -> str:
    return normalize_newlines(strip_bom(content))


class Block(Record):
    __slots__ = ("header_line", "line", "name", "raw")

    def __init__(self, header_line: str, name: str, raw: str, line: int) -> None:
        self.header_line, self.name, self.raw = header_line, name, raw
        self.line = line  # 1-based line of the header in the file


class Located(Record):
    __slots__ = ("line", "name", "section", "side")

    def __init__(self, name: str, line: int, section: str | None = None, side: str = "") -> None:
        self.name, self.line, self.section, self.side = name, line, section, side


class DeltaPlan:
    __slots__ = (
        "added",
        "modified",
        "orphans",
        "presence",
        "removed",
        "removed_blocks",
        "renamed",
        "section_lines",
        "skipped_headers",
        "unpaired_renames",
    )

    def __init__(self) -> None:
        self.added: list[Block] = []
        self.modified: list[Block] = []
        self.removed: list[Located] = []
        self.removed_blocks: list[Block] = []
        self.renamed: list[tuple[Located, Located]] = []
        self.unpaired_renames: list[Located] = []
        self.orphans: list[Located] = []
        self.skipped_headers: list[Located] = []
        self.presence: dict[str, bool] = {}
        self.section_lines: dict[str, int] = {}

    @property
    def entries(self) -> int:
        return len(self.added) + len(self.modified) + len(self.removed) + len(self.renamed)


class _Body:
    __slots__ = ("lines", "mask", "start")

    def __init__(self, lines: list[str], mask: list[bool], start: int) -> None:
        self.lines, self.mask = lines, mask
        self.start = start  # 1-based line of the body's first line


def _sections(lines: list[str], mask: list[bool]) -> list[tuple[str, _Body, int]]:
    heads = [
        (trim(title), i)
        for i, line in enumerate(lines)
        if line[:2] == "##" and not mask[i] and (title := section_title(line)) is not None
    ]
    out = []
    for k, (title, index) in enumerate(heads):
        end = heads[k + 1][1] if k + 1 < len(heads) else len(lines)
        out.append(
            (title, _Body(lines[index + 1 : end], mask[index + 1 : end], index + 2), index + 1)
        )
    return out


def _read_blocks(
    body: _Body, section: str | None, sink: list[Located] | None, hashed: list[int] | None = None
) -> list[Block]:
    """The `### Requirement:` blocks of a section body; each runs to the next requirement or
    `## ` header. Every other unfenced `###` header goes to `sink` (the CLI's skipped headers).
    `hashed`: the indices of the body's lines starting `#`, when the caller has them."""
    lines, mask = body.lines, body.mask
    if hashed is None:
        hashed = [i for i, line in enumerate(lines) if line[:1] == "#"]
    reqs: list[tuple[int, str]] = []
    ends: list[int] = []  # requirement headers and `## ` headers: where a block ends
    # `####…` (a scenario) can match none of the patterns below: each needs whitespace at the
    # third or fourth character, or `Requirement:` at the fourth
    for i in [i for i in hashed if lines[i][1:2] == "#" and lines[i][3:4] != "#"]:
        line = lines[i]
        if mask[i]:
            continue
        if line[:3] == "###" and (req := requirement_header_name(line)) is not None:
            reqs.append((i, req))
            ends.append(i)
        elif hashes_then_space(line, 2, 2):
            ends.append(i)
        elif sink is not None and (h3 := _h3_title(line)) is not None:
            sink.append(Located(trim(h3), body.start + i, section))
    blocks: list[Block] = []
    k = 0
    for r, name in reqs:
        while k < len(ends) and ends[k] <= r:
            k += 1
        end = ends[k] if k < len(ends) else len(lines)
        raw = trim_end("\n".join(lines[r:end]))
        blocks.append(Block(lines[r], normalize_name(name), raw, body.start + r))
    return blocks


def _h3_title(line: str) -> str | None:
    """The group of `^###S+(DOT+?)S*$`, or None."""
    return lazy_tail(line[3:], 1, False) if line[:3] == "###" else None


def _bulleted_name(head: LazyPattern, line: str) -> str | None:
    """The name of a `- ### Requirement: name` line (`head`: the pattern up to `Requirement:`)."""
    m = head.match(line)
    return None if m is None else lazy_tail(line[m.end() :], 0, True)


def removed_bullet_name(line: str) -> str | None:
    """The group of the CLI's `^S*[-*+]S*`?###S*Requirement:S*(DOT+?)`?S*$`, in linear time."""
    return _bulleted_name(_REMOVED_BULLET, line)


def renamed_from_name(line: str) -> str | None:
    """The group of the CLI's `- FROM: `### Requirement: name`` pattern, in linear time."""
    return _bulleted_name(_FROM, line)


def renamed_to_name(line: str) -> str | None:
    """The group of the CLI's `- TO: `### Requirement: name`` pattern, in linear time."""
    return _bulleted_name(_TO, line)


def _removed_names(body: _Body) -> list[Located]:
    names = []
    for i, line in enumerate(body.lines):
        if body.mask[i]:
            continue
        name = requirement_header_name(line)
        if name is None:
            name = _bulleted_name(_REMOVED_BULLET, line)
        if name is not None:
            names.append(Located(normalize_name(name), body.start + i))
    return names


def _renamed_pairs(body: _Body, unpaired: list[Located]) -> list[tuple[Located, Located]]:
    pairs = []
    pending: Located | None = None
    for i, line in enumerate(body.lines):
        if body.mask[i]:
            continue
        from_name = _bulleted_name(_FROM, line)
        to_name = _bulleted_name(_TO, line) if from_name is None else None
        if from_name is not None:
            if pending:
                unpaired.append(pending)
            pending = Located(normalize_name(from_name), body.start + i, side="FROM")
        elif to_name is not None:
            to = Located(normalize_name(to_name), body.start + i, side="TO")
            if pending is None:
                unpaired.append(to)
                continue
            pairs.append((pending, to))
            pending = None
    if pending:
        unpaired.append(pending)
    return pairs


def _orphans(lines: list[str], mask: list[bool]) -> list[Located]:
    orphans = []
    section: str | None = None
    for i, line in enumerate(lines):
        if line[:2] != "##" or mask[i]:  # (a section and a requirement header both start so)
            continue
        title = section_title(line)
        if title is not None:
            section = trim(title)
            continue
        if section is not None and section.lower() in _DELTA_FOLDED:
            continue
        name = requirement_header_name(line)
        if name is not None:
            orphans.append(Located(normalize_name(name), i + 1, section))
    return orphans


@functools.lru_cache(maxsize=256)
def parse_delta_spec(content: str) -> DeltaPlan:
    """The CLI's reading of a delta spec. Cached by text: an edit re-reads only the file it
    changed (callers must not modify the plan)."""
    lines, mask = lines_and_mask(content)
    sections = _sections(lines, mask)
    plan = DeltaPlan()
    for title in DELTA_TITLES:
        found = [(t, body, line) for t, body, line in sections if t.lower() == title.lower()]
        key = title.split()[0]
        plan.presence[key] = bool(found)
        if found:
            plan.section_lines[key] = found[0][2]
        shown = found[0][0] if found else title
        for _, body, _ in found:
            if key == "ADDED":
                plan.added += _read_blocks(body, shown, plan.skipped_headers)
            elif key == "MODIFIED":
                plan.modified += _read_blocks(body, shown, plan.skipped_headers)
            elif key == "REMOVED":
                plan.removed += _removed_names(body)
                plan.removed_blocks += _read_blocks(body, None, None)
            else:
                plan.renamed += _renamed_pairs(body, plan.unpaired_renames)
    plan.unpaired_renames.sort(key=lambda u: u.line)
    plan.skipped_headers.sort(key=lambda u: u.line)
    plan.orphans = _orphans(lines, mask)
    return plan


class RequirementsSection:
    __slots__ = ("blocks", "end", "found", "header")

    def __init__(self, found: bool, blocks: list[Block], header: int = -1, end: int = -1) -> None:
        # header, end: the 0-based lines of the `## Requirements` header and of the section's end
        self.found, self.blocks, self.header, self.end = found, blocks, header, end


@functools.lru_cache(maxsize=256)
def extract_requirements_section(content: str) -> RequirementsSection:
    """A main spec's requirement blocks, cached by text (callers must not modify them)."""
    lines, mask = lines_and_mask(content)
    hashed = header_lines(content)
    header = next(
        (
            i
            for i in hashed
            if lines[i][1:2] == "#" and not mask[i] and is_requirements_header(lines[i])
        ),
        -1,
    )
    if header == -1:
        return RequirementsSection(False, [])
    # `###…` is no top-level header (`##` then whitespace), so only the other `##` lines
    after = hashed[bisect.bisect_right(hashed, header) :]
    tops = [i for i in after if lines[i][1:2] == "#" and lines[i][2:3] != "#"]
    end = next((i for i in tops if not mask[i] and hashes_then_space(lines[i], 2, 2)), len(lines))
    body = _Body(lines[header + 1 : end], mask[header + 1 : end], header + 2)
    inside = [i - header - 1 for i in after if i < end]
    return RequirementsSection(True, _read_blocks(body, None, None, inside), header, end)


@functools.lru_cache(maxsize=256)
def blocks_by_name(content: str) -> dict[str, Block]:
    """A main spec's requirement blocks by normalised name (a later duplicate wins), cached by
    text: each edit of a change compares its deltas with the same main specs again (callers
    must not modify the dict)."""
    return {normalize_name(b.name): b for b in extract_requirements_section(content).blocks}
