"""The authoring readers are linear on every input too (issue 46, fault 5): the server reads a
spec's outline on its event loop for document symbols, completion, definition, hover and code
actions, and the CLI's header patterns it used backtracked over long whitespace runs (a 40 KB
`- FROM:` line of spaces: 7.9 s), a line's section was found by a walk over every section above
it, and a completion's column was converted to an index by converting every index before it.

As in `test_linear.py`: the string matchers answer as the patterns they replace did (the
patterns are the slow reference), and on adversarial texts 8x the text costs at most 16x the CPU
time (best of three of this thread's CPU time, the garbage collector paused, the small size
taken as at least 2 ms)."""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from ralph_lsp.openspec.authoring import assist, fixes, outline
from ralph_lsp.openspec.validation import blocks
from ralph_lsp.openspec.validation.text import DOT, S, ci, trim
from tests.openspec_validate.test_linear import ALPHABET, FROM, LINES, REMOVED, TO, _group, js

# the patterns the outline used, as it used them
SECTION_HEADER = js(rf"^##{S}+({DOT}+)$")
REQUIREMENT_HEADER = js(rf"^###{S}*{ci('Requirement:')}{S}*({DOT}+){S}*$")
SCENARIO_NAME = re.compile(rf"^####{S}+(?:Scenario:{S}*)?({DOT}*?){S}*$", re.ASCII | re.I)


def _old_scenario_name(line: str) -> str:
    m = SCENARIO_NAME.match(line)
    return trim(m.group(1)) if m else trim(line[4:])


@settings(max_examples=2000)
@given(LINES)
def test_the_outline_reads_headers_as_the_patterns_did(line: str) -> None:
    for prefix in ("##", "## ", "###", "### Requirement:", "####", "#### ", "#### Scenario: "):
        text = prefix + line
        assert blocks.section_title(text) == _group(SECTION_HEADER, text), text
        assert blocks.requirement_header_name(text) == _group(REQUIREMENT_HEADER, text), text
        assert outline.scenario_name(text) == _old_scenario_name(text), text
        assert outline.scenario_name(text.swapcase()) == _old_scenario_name(text.swapcase())
    for prefix in ("- ### Requirement:", "* `### Requirement: ", " - FROM: ", "TO: `###"):
        text = prefix + line
        assert blocks.removed_bullet_name(text) == _group(REMOVED, text), text
        assert blocks.renamed_from_name(text) == _group(FROM, text), text
        assert blocks.renamed_to_name(text) == _group(TO, text), text


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["## A", "## B", "x", "", "### Requirement: r"]), max_size=30))
def test_a_lines_section_is_the_last_above_it(lines: list[str]) -> None:
    o = outline.outline("\n".join(lines))
    for line in range(len(lines) + 1):
        above = [title for title, at in o.sections if at <= line]
        assert o.section_at(line) == (above[-1] if above else None)


def _old_index(text: str, character: int, encoding: str) -> int:
    from ralph_lsp.server.render import column

    for i in range(len(text) + 1):
        if column(text, i, encoding) >= character:
            return i
    return len(text)


def _doc(text: str, encoding: str) -> Any:
    from ralph_lsp.server.authoring import Doc

    ls = SimpleNamespace(workspace=SimpleNamespace(position_encoding=encoding))
    return Doc(ls, Path("spec.md"), text)  # type: ignore[arg-type]


ENCODINGS = [types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf8, "utf-32"]


@settings(max_examples=500)
@given(st.text(alphabet="a é\u3000😀\ud800", max_size=12), st.integers(0, 30))
def test_a_column_is_the_index_it_was(text: str, character: int) -> None:
    for encoding in ENCODINGS:
        doc = _doc(text, encoding)
        assert doc.index(types.Position(0, character)) == _old_index(text, character, encoding)


# -- linear time on adversarial texts ----------------------------------------------------------

MAIN = "## Requirements\n### Requirement: a\nThe system SHALL x.\n\n#### Scenario: s\n- ok\n"
DELTA = Path("openspec/changes/c/specs/a/spec.md")
CONTEXTS = [
    ("## ADDED Requirements\n### Requirement: a", "\nSHALL\n#### Scenario: s\n- ok\n"),
    ("## ADDED Requirements\n### Requirement: a\nSHALL\n\n#### Scenario: a", "b\n"),
    ("## ADDED Requirements\n### Requirement: a\nSHALL\n\n####", "b\n"),
    ("## MODIFIED Requirements\n### Requirement: a", "\nx\n"),
    ("## REMOVED Requirements\n- ### Requirement: a", "b\n"),
    ("## RENAMED Requirements\n- FROM: `### Requirement: a", "b\n- TO: x\n"),
    ("## RENAMED Requirements\n", "x\n"),
    ("##", "x\n### Requirement: a\n"),
    ("", "\n"),
]
FRAGMENTS = st.lists(
    st.sampled_from([*ALPHABET, "\n", "\r\n", "## A\n", "### Requirement: r\n"]),
    min_size=1,
    max_size=6,
).map("".join)
CLOSERS = st.sampled_from(["", "x", "\u2028", "x\u2028y", "`b", " #x", "]"])
SIZE = 24_000


def _read_all(text: str) -> None:
    """What the server's requests read of a delta: its outline (document symbols), the names
    it refers to (definition, hover), the code actions over the whole file, a completion at its
    end and a client column at the end of its longest line."""
    lines = text.split("\n")
    o = outline.outline(text)
    outline.refs(o)
    fixes.fixes(DELTA, text, 0, len(lines) - 1, lambda _: MAIN)
    assist.complete(DELTA, text, len(lines) - 1, lines[-1][:40], lambda _: MAIN)
    longest = max(range(len(lines)), key=lambda i: len(lines[i]))
    _doc(text, types.PositionEncodingKind.Utf16).index(types.Position(longest, 10**9))


def _cpu(read: Callable[[str], None], text: str) -> float:
    best = float("inf")
    for _ in range(3):
        gc.disable()
        try:
            start = time.thread_time()
            read(text)
            best = min(best, time.thread_time() - start)
        finally:
            gc.enable()
    return best


# 40 examples of 24 KB and 192 KB texts, each read three times: about 16 s, a benchmark's
# length, so it runs with the full suite (`make test`) and not in the inner loop.
@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(context=st.sampled_from(CONTEXTS), fragment=FRAGMENTS, closer=CLOSERS)
def test_the_authoring_readers_time_grows_linearly(
    context: tuple[str, str], fragment: str, closer: str
) -> None:
    before, after = context
    small = fragment * (SIZE // len(fragment))
    little = _cpu(_read_all, before + small + closer + after)
    big = _cpu(_read_all, before + small * 8 + closer + after)
    assert big <= 16 * max(little, 0.002), (context, fragment, closer, little, big)


def test_the_crafted_lines_of_the_report_are_linear() -> None:
    """The shapes found quadratic: a `- FROM:` line, a scenario name and a bulleted REMOVED
    name of spaces, and sections alternating with requirements."""
    crafted = [
        ("## RENAMED Requirements\n", " - FROM: `### Requirement: a", " ", "b\n"),
        ("## RENAMED Requirements\n", "", " ", "x\n"),
        ("## ADDED Requirements\n### Requirement: a\n", "#### a", " ", "x\n"),
        ("## REMOVED Requirements\n", "- ", " ", "`x\n"),
        ("", "", "## A\n### Requirement: r\n", ""),
    ]
    for before, head, run, after in crafted:
        n = 5_000 // len(run)
        little = _cpu(_read_all, before + head + run * n + after)
        big = _cpu(_read_all, before + head + run * n * 8 + after)
        assert big <= 16 * max(little, 0.002), (head, run, little, big)
