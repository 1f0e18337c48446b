"""Fuzzing the tasks.md parser with task-shaped input (tests/test_tasks.py already covers
arbitrary text and bytes, agreement of parse and count, and appending a line).

These properties are the ones the engine relies on: an agent's one-box edit is exactly one more
task done; line endings do not change what counts; every task sits in exactly one story; and
what the server turns into diagnostics stays inside the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralph_lsp.openspec.tasks import count_tasks, decode_tasks_bytes, read_tasks_text
from tests.tasks_reference import parse_tasks

INDENTS = ["", " ", "  ", "    ", "\t", "\u00a0", "\ufeff", "\u2028", "\x85", "\x1c"]
BULLETS = ["-", "*", "+", "1.", "2)", "123456789.", "1234567890.", "a.", ""]
BOXES = ["[ ]", "[x]", "[X]", "[~]", "[]", "[ x ]", "[  ]", "[xx]", "[😀]", "[-]", "[\t]", "["]
AFTER = ["", " ", " text", " 1.2 Task", " **2.1** Bold", "(link)", "[ref]", " [x] nested box"]
OTHER = ["## 1. Story", "## Story", "##", "# Title", "## 2.3 Sub", "```", "<!-- x -->", "text", ""]

task_line = st.builds(
    lambda i, b, sp, box, after: f"{i}{b}{sp}{box}{after}",
    st.sampled_from(INDENTS),
    st.sampled_from(BULLETS),
    st.sampled_from(["", " ", "  ", "\t"]),
    st.sampled_from(BOXES),
    st.sampled_from(AFTER),
)
line = st.one_of(task_line, st.sampled_from(OTHER), st.text(max_size=12))
document = st.lists(line, max_size=40).map("\n".join)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(document, st.data())
def test_checking_one_box_is_exactly_one_more_task_done(text: str, data: st.DataObject) -> None:
    doc = parse_tasks(text)
    lines = text.split("\n")
    # `- [ ](x)` counts but `- [x](x)` is a link, as in the OpenSpec CLI: not a one-box edit.
    open_tasks = [
        t
        for t in doc.tasks
        if t.box == "" and re.search(r"\[ \](?![(\[])", lines[t.line]) is not None
    ]
    if not open_tasks:
        return
    task = data.draw(st.sampled_from(open_tasks))
    lines[task.line] = re.sub(r"\[ \](?![(\[])", "[x]", lines[task.line], count=1)
    after = parse_tasks("\n".join(lines))
    assert (after.completed, after.total) == (doc.completed + 1, doc.total)
    assert after.tasks[doc.tasks.index(task)].done


@FAST
@given(document)
def test_crlf_changes_nothing_that_counts(text: str) -> None:
    lf, crlf = parse_tasks(text), parse_tasks(text.replace("\n", "\r\n"))
    assert (crlf.completed, crlf.total) == (lf.completed, lf.total)
    assert [(t.line, t.done, t.id, t.story_id) for t in crlf.tasks] == [
        (t.line, t.done, t.id, t.story_id) for t in lf.tasks
    ]
    assert [(s.id, s.line) for s in crlf.stories] == [(s.id, s.line) for s in lf.stories]


@FAST
@given(document)
def test_structure_is_consistent(text: str) -> None:
    doc = parse_tasks(text)
    lines = text.split("\n")
    assert doc.line_count == len(lines)
    # Every task is in exactly one story, in file order; story ids are unique.
    in_stories = [t for s in doc.stories for t in s.tasks]
    assert sorted(id(t) for t in in_stories) == sorted(id(t) for t in doc.tasks)
    assert len({s.id for s in doc.stories}) == len(doc.stories)
    assert [t.line for t in doc.tasks] == sorted({t.line for t in doc.tasks})
    for story in doc.stories:
        assert all(story.line < t.line for t in story.tasks)
        assert all(t.story_id == story.id for t in story.tasks)
    for n, task in enumerate(doc.tasks):
        if task.parent is not None:
            parent = doc.tasks[task.parent]
            assert task.parent < n and parent.indent < task.indent
            assert parent.story_id == task.story_id
    first = doc.first_open_story()
    assert (first is None) == doc.all_done or doc.total == 0
    # Findings point inside the file.
    for f in doc.findings:
        assert 0 <= f.line < len(lines)
        assert 0 <= f.start <= f.end <= len(lines[f.line]) + 1


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "tasks.md"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(task_line, max_size=20), junk=st.binary(max_size=64))
def test_a_file_of_any_bytes_reads_as_it_counts(
    scratch: Path, lines: list[str], junk: bytes
) -> None:
    data = "\r\n".join(lines).encode("utf-8", "surrogatepass") + junk
    path = scratch
    path.write_bytes(data)
    text = read_tasks_text(path)
    assert text == decode_tasks_bytes(data)
    assert (parse_tasks(text).completed, parse_tasks(text).total) == count_tasks(text)
