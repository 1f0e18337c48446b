"""tasks.md counting and structure (the reference parser, tests/tasks_reference.py); counting must
agree
with the OpenSpec CLI 1.13.2. tests/test_tasks_fast.py holds the fast path to the same results;
the strategies below feed both."""

from __future__ import annotations

import csv

from hypothesis import given, settings
from hypothesis import strategies as st

from ralph_lsp.openspec.tasks import count_tasks, decode_tasks_bytes
from tests.conftest import shared_path
from tests.tasks_reference import parse_tasks


def test_corpus_counts_match_openspec_cli_on_every_row() -> None:
    corpus = shared_path("corpus", "openspec-tasks")
    rows = list(csv.DictReader((corpus / "expected.tsv").open(), delimiter="\t"))
    assert len(rows) == 229
    mismatches = []
    for row in rows:
        text = decode_tasks_bytes((corpus / row["id"] / "tasks.md").read_bytes())
        got = count_tasks(text)
        doc = parse_tasks(text)
        assert (doc.completed, doc.total) == got
        if got != (int(row["completed"]), int(row["total"])):
            mismatches.append((row["id"], got, row["completed"], row["total"]))
    assert mismatches == []


def test_rule_edges() -> None:
    cases = {
        "- [ ] a": (0, 1),
        "- [x] a": (1, 1),
        "* [X] a": (1, 1),
        "+ [~] a": (0, 1),
        "1. [ ] a": (0, 1),
        "1) [x] a": (1, 1),
        "123456789. [ ] a": (0, 1),
        "1234567890. [ ] a": (0, 0),
        "- [] a": (0, 1),
        "-[ ] a": (0, 1),
        "- [xx] a": (0, 0),
        "- [x](http://x)": (0, 0),
        "- [](http://x)": (0, 0),
        "- [ ](http://x)": (0, 1),
        "- [x][ref]": (0, 0),
        "- [x] [ref]": (1, 1),
        "- [ x ] padded": (1, 1),
        "- [😀] emoji": (0, 0),
        "\ufeff- [ ] bom": (0, 1),
        "\u00a0- [ ] nbsp": (0, 1),
        "\u0085- [ ] nel": (0, 0),
        "\u001c- [ ] fs": (0, 0),
        "  - [x] nested": (1, 1),
        "[ ] no bullet": (0, 0),
        "```\n- [ ] in a fence\n```": (0, 1),
        "<!-- - [x] in a comment -->": (0, 0),
        "<!--\n- [x] in a comment\n-->": (1, 1),
        "- [ ] a\r\n- [x] b\r\n": (1, 2),
        "- [ ] a\r- [x] b": (0, 1),  # CR alone does not split lines
    }
    for text, expected in cases.items():
        assert count_tasks(text) == expected, text


STRUCTURE_DOC = (
    "- [ ] loose task\n"
    "## 1. First\n"
    "- [x] 1.1 Done thing\n"
    "  - [ ] sub of 1.1\n"
    "- [ ] 1.2 Open thing\n"
    "## Unnumbered\n"
    "- [ ] 3.1 Misplaced\n"
    "## 2. Second\n"
    "- [ ] 2.1 a\n"
    "- [ ] 2.1 duplicate\n"
    "- [] empty box\n"
    "- [~] tilde\n"
)


def test_structure_stories_ids_nesting() -> None:
    doc = parse_tasks(STRUCTURE_DOC)
    # an unnumbered heading takes its position (2nd); a later clash gets a suffix
    assert [s.id for s in doc.stories] == ["0", "1", "2", "2#3"]
    assert [(s.completed, s.total) for s in doc.stories] == [(0, 1), (1, 3), (0, 1), (0, 4)]
    assert doc.stories[1].line == 1
    sub = doc.tasks[2]
    assert sub.parent == 1 and sub.story_id == "1" and sub.line == 3
    assert doc.tasks[1].id == "1.1" and doc.tasks[1].done
    codes = sorted((f.line, f.code) for f in doc.findings)
    assert (9, "duplicate-id") in codes
    assert (10, "empty-box") in codes
    assert (11, "odd-box") in codes
    assert doc.first_open_story() is not None and doc.first_open_story().id == "0"  # type: ignore[union-attr]


def test_uncounted_lookalikes_warn() -> None:
    doc = parse_tasks("[ ] no bullet\n- [xx] two chars\n- [x](http://link)\n- [ ] fine\n")
    assert doc.total == 1
    assert {f.line for f in doc.findings if f.code == "not-counted"} == {0, 1, 2}


def test_bad_bytes_crlf_bom_nul_never_crash() -> None:
    data = b"\xef\xbb\xbf- [x] bom\r\n- [ ] \xff\xfe bad\r\n\x00- [ ] nul\r\n- [\xff] box\n"
    text = decode_tasks_bytes(data)
    assert count_tasks(text) == (1, 3)  # the NUL line does not count; a replaced byte is a box


@settings(max_examples=300)
@given(st.text())
def test_arbitrary_text_never_raises_and_parse_agrees_with_count(text: str) -> None:
    doc = parse_tasks(text)
    assert (doc.completed, doc.total) == count_tasks(text)
    assert sum(s.total for s in doc.stories) == doc.total


@settings(max_examples=200)
@given(st.text(), st.text().filter(lambda s: "\n" not in s))
def test_counts_are_monotone_when_a_line_is_appended(text: str, line: str) -> None:
    before_done, before_total = count_tasks(text)
    after_done, after_total = count_tasks(text + "\n" + line)
    assert after_total >= before_total and after_done >= before_done
    assert after_total - before_total <= 1


@settings(max_examples=200)
@given(st.binary())
def test_arbitrary_bytes_decode_and_parse(data: bytes) -> None:
    parse_tasks(decode_tasks_bytes(data))


def test_one_megabyte_file_parses() -> None:
    block = "## 1. Story\n" + "".join(
        f"- [{'x' if i % 3 else ' '}] 1.{i} task {i}\n" for i in range(60)
    )
    text = block * (1_000_000 // len(block) + 1)
    doc = parse_tasks(text)
    assert doc.total == count_tasks(text)[1] > 10_000


def test_heading_on_a_bom_first_line_is_a_story() -> None:
    doc = parse_tasks("\ufeff## 1. First\n- [ ] 1.1 a\n")
    assert [s.id for s in doc.stories] == ["1"]
    # One BOM opens a file; a second one is text, so the line is no heading, `[` or not (the
    # parse and the summary used to skip every BOM on a line holding a `[`, and one otherwise).
    for text in ("\ufeff\ufeff## 1. First\n- [ ] a\n", "\ufeff\ufeff## 1. [x]\n- [ ] a\n"):
        assert [s.id for s in parse_tasks(text).stories] == ["0"]


# Fragments that meet the rules where stories and counts are decided: headings (also on a
# BOM-first line, with CR, numbered or not, repeated), task shapes, links, look-alikes.
_FRAGMENTS = [
    "\ufeff",
    "## ",
    "##\t",
    "#",
    "1. ",
    "2.1 ",
    "Story 3: ",
    "Title",
    "- [ ] ",
    "- [x] ",
    "* [X] ",
    "1) [~] ",
    "-[] ",
    "[x]",
    "[",
    "]",
    "(",
    "\r",
    "\n",
    " ",
    "\t",
    "\u00a0",
]
fragment_text = st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join)


# Task-shaped lines for the two ways tasks_fast.parse_tasks reads a task line.
_TAILS = [" ", "\t", "\u00a0", "\r", "\u2028", "\ufeff", "x", "1", ".", "1.2", "3.4.5", "1..2"]
_TAILS += ["**", ")", ":", "(", "[", "]", "é", "😀", "\x85", "\x1c"]
_simple_ish_line = st.builds(
    lambda indent, bullet, space, box, tail: indent + bullet + space + box + "".join(tail),
    st.sampled_from(["", " ", "  ", "\t", " \t", "\u00a0", "\ufeff"]),
    st.sampled_from(["-", "*", "+", "1."]),
    st.sampled_from([" ", "", "  "]),
    st.sampled_from(
        ["[ ]", "[x]", "[X]", "[~]", "[\t]", "[\u00a0]", "[]", "[1]", "[[]", "[😀]", "[\ud800]"]
    ),
    st.lists(
        st.sampled_from(_TAILS),
        max_size=8,
    ),
)


# -- blocked tasks (SPEC §2 v2) ----------------------------------------------------------------

BLOCKED_DOC = """\
## 1. Build
- [ ] 1.1 Write the worker
  Some notes about it.
  - BLOCKED: needs the staging API token
- [ ] 1.2 Nested parent
  - [ ] 1.2.1 child
    - blocked: waiting for hardware
- [x] 1.3 Done already
  - blocked: stale mark on a done task
- [ ] blocked: this line is a task, not a mark
## 2. Deploy
- blocked: under a heading, no task above it
- [ ] 2.1 Deploy
- blocked: not indented under 2.1
"""


def test_blocked_marks_sit_under_their_task() -> None:
    doc = parse_tasks(BLOCKED_DOC)
    by_id = {t.id or t.text: t for t in doc.tasks}
    assert doc.blocked_reason(by_id["1.1"]) == "needs the staging API token"
    assert doc.blocked_reason(by_id["1.2"]) is None
    assert doc.blocked_reason(by_id["1.2.1"]) == "waiting for hardware"
    assert doc.blocked_reason(by_id["1.3"]) is None  # done: nothing to unblock
    assert doc.blocked_reason(by_id["blocked: this line is a task, not a mark"]) is None
    assert doc.blocked_reason(by_id["2.1"]) is None
    assert [(t.id, why) for t, why in doc.blocked_open()] == [
        ("1.1", "needs the staging API token"),
        ("1.2.1", "waiting for hardware"),
    ]
    assert [t.id for t in doc.tasks if doc.workable(t)] == ["1.2", None, "2.1"]
    orphans = [f.line for f in doc.findings if f.code == "blocked-orphan"]
    assert orphans == [11, 13]  # 0-based


def test_blocked_lines_are_not_tasks_so_counts_agree_with_the_cli() -> None:
    assert count_tasks(BLOCKED_DOC) == (1, 6)
    doc = parse_tasks(BLOCKED_DOC)
    assert (doc.completed, doc.total) == (1, 6)


def test_the_first_story_to_work_on_skips_a_blocked_story() -> None:
    doc = parse_tasks(
        "## 1. A\n- [ ] 1.1 a\n  - blocked: a person\n## 2. B\n- [x] 2.1 b\n## 3. C\n- [ ] 3.1 c\n"
    )
    story = doc.first_open_story()
    assert story is not None and story.id == "3"
    all_blocked = parse_tasks("## 1. A\n- [ ] 1.1 a\n  - blocked: a person\n")
    assert all_blocked.first_open_story() is None
