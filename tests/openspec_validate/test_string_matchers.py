"""The validation's string matchers against the JavaScript patterns they stand for.

A `ralph-lsp validate` call is mostly process start, and compiling a pattern with the CLI's
whitespace class costs about 0.2 ms, so the most used patterns became string operations
(issue 38's `validate_vs_openspec`). Each must answer exactly as its pattern does: these
tests compare them on lines drawn from the characters that matter (JavaScript whitespace and
line terminators, Python-only whitespace, `#`, fences, the case of keywords)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ralph_lsp.openspec.validation.text import DOT, S, fence, hashes_then_space

ALPHABET = [
    "#", "#", "#", " ", "\t", "\u3000", "\ufeff", "\u00a0", "\r", "\u2028", "\u2029", "\n",
    "\x1c", "\u0085", "`", "~", "R", "r", "e", "q", "u", "i", "m", "n", "t", "s", ":", "x", "K",
    "\u212a", "A", "D", "M", "O", "I", "F", "E", "V", "N", "d", "L", "S", "Requirement:",
    "requirements", "ADDED", "renamed",
]  # fmt: skip
LINES = st.lists(st.sampled_from(ALPHABET), max_size=14).map("".join)


def js(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII)


FENCE_OPEN = js(rf"^{S}*(`{{3,}}|~{{3,}})")
FENCE_CLOSE = js(rf"^{S}*(`{{3,}}|~{{3,}}){S}*$")
HEADER_START = js(rf"^(#{{1,6}}){S}+")


@settings(max_examples=1500)
@given(LINES)
def test_fence_is_the_fence_patterns(line: str) -> None:
    f = fence(line)
    opened = FENCE_OPEN.match(line)
    assert (f[0] * f[1] if f else None) == (opened.group(1) if opened else None)
    closed = FENCE_CLOSE.match(line)
    mine = f[0] * f[1] if f and not f[2].strip("".join(_ws())) else None
    assert mine == (closed.group(1) if closed else None)


def _ws() -> list[str]:
    return [c for c in map(chr, range(0x3001)) if re.fullmatch(S, c)] + ["\ufeff"]


@settings(max_examples=1500)
@given(LINES)
def test_hashes_then_space_is_its_pattern(line: str) -> None:
    for least, most in ((1, 6), (4, 4), (1, 4)):
        expected = js(rf"^#{{{least},{most}}}{S}").match(line) is not None
        assert hashes_then_space(line, least, most) == expected, (line, least, most)


@settings(max_examples=1500)
@given(LINES)
def test_the_section_parser_reads_headers_as_its_pattern(line: str) -> None:
    from ralph_lsp.openspec.validation.markdown import parse_sections

    line = line.replace("\n", "")  # its lines come from splitting on "\n"
    sections = parse_sections([line], [False])
    m = HEADER_START.match(line)
    full = js(rf"^(#{{1,6}}){S}+({DOT}+)$").match(line)
    assert [(s.level, s.title) for s in sections] == (
        [(len(full.group(1)), full.group(2).strip("".join(_ws())))] if m and full else []
    )


def _group(pattern: re.Pattern[str], line: str, group: int = 1) -> str | None:
    m = pattern.match(line)
    return m.group(group) if m else None


@settings(max_examples=1500)
@given(LINES)
def test_the_header_matchers_are_their_patterns(line: str) -> None:
    from ralph_lsp.openspec.validation.blocks import (
        is_delta_header,
        is_requirements_header,
        requirement_header_name,
        section_title,
    )
    from ralph_lsp.openspec.validation.text import ci

    ops = "|".join(ci(op) for op in ("ADDED", "MODIFIED", "REMOVED", "RENAMED"))
    for prefix in ("###", "### ", "## ", "##", "### Requirement:", "## ADDED "):
        text = prefix + line
        requirement = js(rf"^###{S}*{ci('Requirement:')}{S}*({DOT}+){S}*$")
        assert requirement_header_name(text) == _group(requirement, text), text
        spaced = js(rf"^###{S}+{ci('Requirement:')}{S}*({DOT}+){S}*$")
        assert requirement_header_name(text, spaced=True) == _group(spaced, text), text
        assert section_title(text) == _group(js(rf"^(##){S}+({DOT}+)$"), text, 2), text
        requirements = js(rf"^##{S}+{ci('Requirements')}{S}*$")
        assert is_requirements_header(text) == bool(requirements.match(text)), text
        delta = js(rf"^##{S}+({ops}){S}+{ci('Requirements')}{S}*$")
        assert is_delta_header(text) == bool(delta.match(text)), text


def test_the_header_matchers_on_the_usual_lines() -> None:
    from ralph_lsp.openspec.validation.blocks import (
        is_delta_header,
        requirement_header_name,
        section_title,
    )

    assert requirement_header_name("### Requirement: Greets  ") == "Greets  "
    assert requirement_header_name("### requirement:   ") == " "  # the pattern backtracks
    assert requirement_header_name("#### Requirement: x") is None
    assert section_title("## ADDED Requirements") == "ADDED Requirements"
    assert is_delta_header("## modified   REQUIREMENTS \t")
    assert not is_delta_header("## MODIFIEDRequirements")


TASK_TEXT = st.lists(
    st.sampled_from(["1", "0", "9", ".", "a", "Z", "\u0661", " ", "\u3000", "\x1c", "-", "\n"]),
    max_size=10,
).map("".join)


@settings(max_examples=1500)
@given(TASK_TEXT)
def test_leading_task_id_is_its_pattern(text: str) -> None:
    from ralph_lsp.openspec.validation.task_lint import leading_task_id

    pattern = re.compile(rf"^([0-9]+(?:\.[0-9]+)+(?:[A-Za-z]+)?)(?={S}|$)")
    assert leading_task_id(text) == _group(pattern, text), text


@settings(max_examples=1500)
@given(LINES)
def test_scenario_names_are_read_as_the_patterns_read_them(line: str) -> None:
    from ralph_lsp.openspec.validation.scenario_diff import scenario_names
    from ralph_lsp.openspec.validation.text import ci, trim

    header = js(rf"^####{S}+")
    text = "#### " + line.replace("\n", "").replace("\r", "")
    name = js(r"[ \t]+#+[ \t]*$").sub("", header.sub("", text, count=1), count=1)
    expected = trim(js(rf"^{ci('Scenario:')}{S}*").sub("", name, count=1))
    assert scenario_names(text) == [expected], text


@settings(max_examples=1500)
@given(st.lists(st.sampled_from(["T", "t", "B", "b", "D", "O", "o", "D", "\u0130", "K", " ", ":"])))
def test_only_a_purpose_starting_tbd_or_tod_can_be_a_leading_placeholder(words: list[str]) -> None:
    from ralph_lsp.openspec.validation.structure import _PUNCTUATED, _SHOUTED

    prose = "".join(words)
    if _SHOUTED.match(prose) or _PUNCTUATED.match(prose):
        assert prose[:3].isascii() and prose[:3].lower() in ("tbd", "tod")
