"""The fast path (ralph_lsp.openspec.tasks_fast, what the server, engine and CLI call) against the
reference parser that states the rule (tests/tasks_reference.py): the same TasksDoc, the same
summary,
and the OpenSpec CLI's counts, on every corpus file and on the generated inputs the other
tasks tests use."""

from __future__ import annotations

import csv
import gc

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ralph_lsp.openspec import tasks, tasks_fast
from ralph_lsp.openspec.tasks import JS_WHITESPACE, TasksDoc, decode_tasks_bytes
from ralph_lsp.openspec.tasks_fast import _SIMPLE_TASK_RE, TasksSummary
from tests import tasks_reference
from tests.conftest import shared_path
from tests.faults.test_fuzz_tasks import OTHER, document, task_line
from tests.test_tasks import BLOCKED_DOC, STRUCTURE_DOC, _simple_ish_line, fragment_text


def _doc(doc: TasksDoc) -> dict[str, object]:
    """Everything a TasksDoc holds, field by field (a failure shows which field differs)."""
    return {
        "tasks": doc.tasks,
        "stories": [(s.id, s.title, s.line, s.number, s.tasks) for s in doc.stories],
        "findings": doc.findings,
        "line_count": doc.line_count,
        "blocked": doc.blocked,
    }


def _stories_and_counts(doc: TasksDoc | TasksSummary) -> tuple[object, ...]:
    stories = [(s.id, s.title, s.line, s.completed, s.total) for s in doc.stories]
    return stories, doc.completed, doc.total


def assert_fast_path_agrees(text: str) -> TasksDoc:
    """tasks_fast's parse and summary give what the reference parser gives for ``text``."""
    reference = tasks_reference.parse_tasks(text)
    assert _doc(tasks_fast.parse_tasks(text)) == _doc(reference)
    assert _stories_and_counts(tasks_fast.summarize_tasks(text)) == _stories_and_counts(reference)
    assert tasks.count_tasks(text) == (reference.completed, reference.total)
    return reference


def test_both_parsers_agree_and_give_the_cli_counts_on_every_corpus_file() -> None:
    corpus = shared_path("corpus", "openspec-tasks")
    rows = list(csv.DictReader((corpus / "expected.tsv").open(), delimiter="\t"))
    assert len(rows) == 229
    for row in rows:
        text = decode_tasks_bytes((corpus / row["id"] / "tasks.md").read_bytes())
        reference = assert_fast_path_agrees(text)
        cli = (int(row["completed"]), int(row["total"]))
        assert (reference.completed, reference.total) == cli, row["id"]


# Whole files: task-shaped lines (both ways the fast path reads one), headings, blocked marks
# and look-alikes, line by line; fragments that cut across lines; any text.
_line = st.one_of(
    _simple_ish_line,
    task_line,
    st.sampled_from([*OTHER, "  - blocked: a person", "- blocked:", "\t* BLOCKED: x"]),
)
_files = st.one_of(
    st.lists(_line, max_size=40).map("\n".join),
    document,
    fragment_text,
    st.text(),
)


@settings(max_examples=1000, deadline=None)
@given(_files)
@example(STRUCTURE_DOC)
@example(BLOCKED_DOC)
@example("\ufeff## 1. First\n- [ ] 1.1 a\n## 1. Again\r\n- [x] 1.2 b\n## Plain\n")
@example("- [x] before any heading\n## [x] a heading with a box\n- [x](link)\n-[] 2.1 odd\n")
@example("- [ ] 1.1 a\n\t- [ ] 1.1.1 tab\n    - [ ] 1.1.2 spaces\n  - [x] 1.1.3 back\n")
@example("\ufeff\ufeff## 1. First\n- [ ] a\n")
@example("\ufeff\ufeff## 1. [x]\n- [ ] a\n")
def test_both_parsers_agree_on_generated_files(text: str) -> None:
    assert_fast_path_agrees(text)


def test_a_text_of_many_pieces_parses_as_the_reference_does() -> None:
    """The parse splits the text a piece at a time (_line_chunks): every corpus file one after
    another, a text of many pieces (1.2 million characters, 36 of them), parses as the reference
    does, and the pieces' lines are the text's lines."""
    corpus = shared_path("corpus", "openspec-tasks")
    text = "".join(
        decode_tasks_bytes(path.read_bytes()) + "\n" for path in sorted(corpus.glob("*/tasks.md"))
    )
    assert len(text) > 16 * tasks_fast._CHUNK
    assert [line for piece in tasks_fast._line_chunks(text) for line in piece] == text.split("\n")
    assert_fast_path_agrees(text)


@settings(max_examples=300, deadline=None)
@given(_files, st.integers(min_value=0, max_value=12))
def test_the_pieces_cut_anywhere_give_the_same_parse(text: str, chunk: int) -> None:
    """Pieces of any size (down to one line each, cut wherever a line ends) give the same
    lines, so the same document, as a whole text."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks_fast, "_CHUNK", chunk)
        pieces = list(tasks_fast._line_chunks(text))
        assert [line for piece in pieces for line in piece] == text.split("\n")
        assert_fast_path_agrees(text)


@settings(max_examples=300, deadline=None)
@given(st.binary())
def test_both_parsers_agree_on_any_bytes(data: bytes) -> None:
    assert_fast_path_agrees(decode_tasks_bytes(data))


@settings(max_examples=1000)
@given(_simple_ish_line)
def test_the_simple_shape_reads_a_line_as_the_rule_does(line: str) -> None:
    """The fast parse reads most task lines with _SIMPLE_TASK_RE alone; where it matches, it
    must give what match_task and _TASK_ID_RE give for the same line."""
    m = _SIMPLE_TASK_RE.match(line)
    if m is None:
        return
    indent, box, tid, text = m.groups()
    rule = tasks.match_task(line)
    assert rule is not None
    assert indent == line[: rule.start(2)] and rule.end() == len(indent) + 5
    assert box == rule.group(3)
    rest = line[rule.end() :].strip(JS_WHITESPACE)
    assert text == rest
    id_m = tasks._TASK_ID_RE.match(rest)
    assert tid == (id_m.group(1) if id_m else None)


def test_the_fast_parse_leaves_the_garbage_collector_as_it_found_it() -> None:
    assert gc.isenabled()
    tasks_fast.parse_tasks("- [ ] 1.1 a\n## 2. B\n- [x] 2.1 b\n")
    assert gc.isenabled()
    gc.disable()
    try:
        tasks_fast.parse_tasks("- [ ] 1.1 a\n")
        assert not gc.isenabled()
    finally:
        gc.enable()


@given(st.text(alphabet="bBlLoOcCkK\u212aeEdD: \n-x", max_size=60))
@example("blocked:")
@example("- [ ] a\n  - bloc\u212aed: waiting")
@example("xxblockedd:")
def test_the_quick_blocked_check_answers_as_the_case_insensitive_search(text: str) -> None:
    """The parse skips reading `blocked:` items when the text has none; its quick check must
    say so exactly when the case-insensitive search would (the Kelvin sign is a `k` there)."""
    import re

    expected = re.search(r"blocked:", text, re.I) is not None
    assert tasks_fast._mentions_blocked(text) is expected
