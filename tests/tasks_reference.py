"""The reference tasks.md parser: SPEC §2's rule stated plainly, top to bottom.

The product parses with :mod:`ralph_lsp.openspec.tasks_fast`, a measured one-pass version that
gives the same :class:`~ralph_lsp.openspec.tasks.TasksDoc`. This plain one lives with the tests
because only they call it: ``tests/test_tasks_fast.py`` checks that the two agree, on the corpus
and on generated text, and ``tests/test_tasks.py`` checks it against the OpenSpec CLI's counts.
Change the rule here first, then in ``tasks_fast``. Both build on the model and the line rules
(boxes, headings, ids, blocked marks, look-alikes) of :mod:`ralph_lsp.openspec.tasks`.
"""

from __future__ import annotations

import re

from ralph_lsp.openspec.tasks import (
    _TASK_ID_RE,
    JS_WHITESPACE,
    Finding,
    Story,
    Task,
    TasksDoc,
    _blocked_marks,
    _box_findings,
    _check_uncounted,
    _heading_text,
    _story_head,
    match_task,
)


def parse_tasks(text: str) -> TasksDoc:
    """Parse tasks.md text into tasks, stories and findings. Never raises.

    Each line is a task (by :func:`match_task`), a ``## `` heading that starts a story, or
    neither (then it may be a look-alike worth a warning). Blocked marks are read last.
    """
    lines = text.split("\n")
    reader = _Reader()
    for n, raw in enumerate(lines):
        m = match_task(raw)
        if m is not None:
            reader.task(n, raw, m)
            continue
        line = raw.removesuffix("\r")
        # a BOM may open the file: the CLI counts it as whitespace, a heading skips it
        heading = _heading_text(line.removeprefix("\ufeff") if n == 0 else line)
        if heading is not None:
            reader.heading(n, heading)
        else:
            _check_uncounted(n, line, reader.findings)
    return reader.finish(lines)


class _Reader:
    """What :func:`parse_tasks` knows part-way through a file."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.findings: list[Finding] = []
        self.before_headings = Story("0", "(before the first heading)", -1, None)
        self.stories: list[Story] = []  # one per heading
        self.story = self.before_headings  # the story new tasks go into
        self.story_ids: set[str] = set()
        self.first_line_of_id: dict[str, int] = {}
        # The tasks that may take a nested task, as (indent, index in tasks), indents rising:
        # a task's parent is the nearest one above it indented less.
        self.open_parents: list[tuple[int, int]] = []

    def heading(self, n: int, heading: str) -> None:
        sid, title, number = _story_head(heading, len(self.stories) + 1, self.story_ids)
        self.story = Story(sid, title, n, number)
        self.stories.append(self.story)
        self.open_parents = []  # a task never nests under one of another story

    def task(self, n: int, raw: str, m: re.Match[str]) -> None:
        indent_text, box, done, end = _box_findings(n, raw, m, self.findings)
        text = raw[end:].strip(JS_WHITESPACE)
        id_m = _TASK_ID_RE.match(text)
        tid = id_m.group(1) if id_m is not None else None
        if tid is not None:
            self._check_id(n, raw, end, tid)
        indent = len(indent_text) + 3 * indent_text.count("\t")  # a tab is four columns
        while self.open_parents and self.open_parents[-1][0] >= indent:
            self.open_parents.pop()
        parent = self.open_parents[-1][1] if self.open_parents else None
        self.open_parents.append((indent, len(self.tasks)))
        task = Task(
            line=n,
            done=done,
            box=box,
            text=text,
            id=tid,
            story_id=self.story.id,
            indent=indent,
            parent=parent,
        )
        self.tasks.append(task)
        self.story.tasks.append(task)

    def _check_id(self, n: int, raw: str, end: int, tid: str) -> None:
        """Findings about a task id: used before, or not under its story's number."""
        start = raw.find(tid, end)
        first = self.first_line_of_id.setdefault(tid, n)
        if first != n:
            message = f"duplicate task id {tid} (also on line {first + 1})"
            self.findings.append(Finding(n, start, start + len(tid), message, "duplicate-id"))
        number = self.story.number
        if number is not None and not tid.startswith(number.split(".", 1)[0] + "."):
            message = f"task {tid} sits under story {number} ({self.story.title})"
            self.findings.append(Finding(n, start, start + len(tid), message, "story-mismatch"))

    def finish(self, lines: list[str]) -> TasksDoc:
        stories = self.stories
        if self.before_headings.tasks:  # the implicit story is listed only when it has tasks
            stories = [self.before_headings, *stories]
        heading_lines = [s.line for s in self.stories]
        blocked = _blocked_marks(lines, self.tasks, heading_lines, self.findings)
        return TasksDoc(self.tasks, stories, self.findings, len(lines), blocked)
