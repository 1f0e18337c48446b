"""The tasks.md parser's measured fast path: the same results as the reference parser, faster.

The reference parser that states SPEC §2's rule plainly is the tests' own
(``tests/tasks_reference.py``), built on the line rules of :mod:`ralph_lsp.openspec.tasks`. The
server re-parses tasks.md on every edit and ``ralph-lsp changes`` reads every change, so
what they call lives here, tuned by measurement (``python -m bench --only parse``: 1 MiB in
~16 ms; the reference takes about 1.6 times as long):

- :func:`parse_tasks` gives the reference's :class:`~ralph_lsp.openspec.tasks.TasksDoc` in one
  pass. A line of the common ``- [ ] text`` shape is read by one regex (:data:`_SIMPLE_TASK_RE`);
  every other line with a ``[`` goes to the rule itself
  (:func:`ralph_lsp.openspec.tasks.match_task`). The lines are split a piece of the text at a
  time (:func:`_line_chunks`), so that a large file's lines reuse memory instead of faulting in
  fresh pages.
- :func:`summarize_tasks` gives only the counts and stories, for listing many changes.

``tests/test_tasks_fast.py`` checks both against the reference on the corpus and on
generated text. Change the rule in the reference and :mod:`ralph_lsp.openspec.tasks` first, then
here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain

from ralph_lsp.bursts import collector_paused
from ralph_lsp.openspec.task_rule import NOT_WS as _NOT_WS
from ralph_lsp.openspec.task_rule import WS as _WS
from ralph_lsp.openspec.tasks import (
    _TASK_ID,
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
    _odd_box,
    _story_head,
    match_task,
)

# The shape almost every task line has: spaces or tabs, `-`, `*` or `+`, one space, a box of
# one character, not followed by `(` or `[` (a link) unless the character is whitespace.
# Group 1: the indent; group 2: the box's character (None when it is whitespace). A line it
# matches is a task, as match_task would say; every other line goes to match_task's rule.
_SIMPLE_TASK_RE = re.compile(
    rf"([ \t]*)[-*+] \[(?:([^{re.escape(JS_WHITESPACE)}\]\U00010000-\U0010ffff])\](?![(\[])"
    rf"|{_WS}\])"
    # then the text: group 3 is its id (what _TASK_ID_RE finds in the stripped text), group 4
    # the text stripped of whitespace on both sides (the greedy `.*` backs off to the last
    # character that is not whitespace)
    rf"{_WS}*(?:(?={_TASK_ID}(?:[ \t]|{_WS}*$))|)(.*{_NOT_WS}|)"
)


_BULLETS = ("-", "*", "+")
_HEAD_TAILS = ("# ", "#\t")  # what follows the first `#` of a `## ` heading
_BOM_HEADS = ("\ufeff## ", "\ufeff##\t")  # a heading on a first line that opens with a BOM
# The parse splits the text into lines this many characters at a time (see _line_chunks).
_CHUNK = 1 << 15
_WS_SET = frozenset(JS_WHITESPACE)
# `blocked:` in any case, searched for from its colon: a pattern that starts with a literal
# character is searched for that character in C, and the case-insensitive look-behind is tried
# only at each `:` (a case-insensitive pattern has no literal to look for, so its search tries
# every position of the text).
_BLOCKED_COLON = re.compile(r":(?<=(?i:blocked:))").search


def _mentions_blocked(text: str) -> bool:
    """Whether ``blocked:`` (any case, the Kelvin sign a ``k`` too) is in ``text``: a quick no
    for the common text without it, which :func:`_blocked_marks` would read line by line. A
    case-insensitive search of a whole megabyte costs 6 ms (a third of a parse); two searches
    for ``d:`` and ``D:`` with the pattern tried at each, 2 ms (the text is as wide as its widest
    character, four bytes each once it holds an emoji, and was read twice); this one search, at
    each of the megabyte's 5,600 colons, 0.6 ms."""
    return _BLOCKED_COLON(text) is not None


def _line_chunks(text: str) -> Iterator[list[str]]:
    """``text.split("\\n")`` in pieces of about :data:`_CHUNK` characters, each cut at a line
    end, split one at a time (chained, the same lines in the same order).

    A megabyte's 19,000 lines, split at once, were 2 MB of strings alive beside the document
    being built, in new memory: the allocator took fresh 1 MiB arenas for them, which the
    kernel fills page by page on first touch (about 1,000 page faults, 2.5 ms of system time
    a parse), and handed them back when the parse ended. Split a piece at a time, the lines of
    one piece are freed before the next is split, which reuses their memory: a third of the
    faults. A text shorter than a piece is split as it is, uncopied."""
    start = 0
    while (stop := text.find("\n", start + _CHUNK)) != -1:
        yield text[start:stop].split("\n")
        start = stop + 1
    yield text[start:].split("\n")


@collector_paused  # an object or more per task and finding, no reference cycle
def parse_tasks(text: str) -> TasksDoc:
    """What the reference parser (``tests/tasks_reference.py``) gives (tasks, stories, findings),
    in one measured pass. Never raises."""
    return _parse_tasks(text)


# Long: one measured pass over the lines (bench: 1 MiB in ~16 ms); split, it is slower.
def _parse_tasks(text: str) -> TasksDoc:
    # One tight pass: the server re-parses on every edit, and a 1 MB file must take
    # milliseconds. A line of the common `- [ ] text` shape is read by one regex
    # (_SIMPLE_TASK_RE); every other line with a `[` goes to the rule itself (match_task).
    # Findings are built only where there are some. Stories are built at the end: a
    # story's tasks are a run of doc.tasks, sliced out. The lines are split a piece of the
    # text at a time (_line_chunks).
    tasks: list[Task] = []
    # for each heading: (id, title, line, number, index in tasks of the story's first task)
    heads: list[tuple[str, str, int, str | None, int]] = []
    story_ids: set[str] = set()
    findings: list[Finding] = []
    story_id = "0"  # the current story's id, title and number
    title = ""
    number: str | None = None
    major_dot: str | None = None  # "2." under story 2: a task id must start with it
    heading_count = 0
    seen_ids: dict[str, int] = {}
    # nesting: the story's last task at indent 0, and the (indent, index) of the indented
    # tasks under it that may still take children
    top: int | None = None
    nested: list[tuple[int, int]] = []
    simple_match = _SIMPLE_TASK_RE.match
    ws = JS_WHITESPACE
    add_task = tasks.append
    new_tuple = tuple.__new__  # Task(...), Finding(...) without the Python-level __new__
    add_finding = findings.append
    m: re.Match[str] | None
    tid: str | None
    n = 0

    for n, raw in enumerate(chain.from_iterable(_line_chunks(text))):
        if "[" in raw:
            m = simple_match(raw)
            if m is not None:
                indent_text, box, tid, rest = m.groups()
                end = -1  # where the box ends, for the findings that need it: len(indent) + 5
                if box is None:
                    box = ""
                    done = False
                else:
                    done = box == "x" or box == "X"
                    if not done:
                        end = len(indent_text) + 5
                        add_finding(_odd_box(n, end - 3, end, box))
            else:
                m = match_task(raw)
                if m is not None:
                    indent_text, box, done, end = _box_findings(n, raw, m, findings)
                    rest = raw[end:].strip(ws)
                    tid_m = _TASK_ID_RE.match(rest)
                    tid = tid_m.group(1) if tid_m is not None else None
            if m is not None:  # a task
                if tid is not None:
                    if end < 0:
                        end = len(indent_text) + 5
                    first = seen_ids.setdefault(tid, n)
                    if first != n:
                        id_start = raw.find(tid, end)
                        message = f"duplicate task id {tid} (also on line {first + 1})"
                        add_finding(
                            new_tuple(
                                Finding, (n, id_start, id_start + len(tid), message, "duplicate-id")
                            )
                        )
                    if major_dot is not None and not tid.startswith(major_dot):
                        id_start = raw.find(tid, end)
                        message = f"task {tid} sits under story {number} ({title})"
                        add_finding(
                            new_tuple(
                                Finding,
                                (n, id_start, id_start + len(tid), message, "story-mismatch"),
                            )
                        )
                if indent_text:
                    indent = len(indent_text) + 3 * indent_text.count("\t")
                    while nested and nested[-1][0] >= indent:
                        nested.pop()
                    parent = nested[-1][1] if nested else top
                    nested.append((indent, len(tasks)))
                else:
                    indent = 0
                    parent = None
                    top = len(tasks)
                    if nested:
                        nested = []
                add_task(new_tuple(Task, (n, done, box, rest, tid, story_id, indent, parent)))
                continue
        elif ("#" not in raw or raw[:1] != "#" or raw[1:3] not in _HEAD_TAILS) and (
            n or raw[:4] not in _BOM_HEADS
        ):
            continue  # neither a task, nor a look-alike, nor a heading (`## ` or `##\t`)

        line = raw[:-1] if raw[-1:] == "\r" else raw
        heading = _heading_text(line.removeprefix("\ufeff") if n == 0 else line)
        if heading is not None:
            heading_count += 1
            story_id, title, number = _story_head(heading, heading_count, story_ids)
            heads.append((story_id, title, n, number, len(tasks)))
            major_dot = number.split(".", 1)[0] + "." if number else None
            top = None
            if nested:
                nested = []
        elif "[" in line:
            _check_uncounted(n, line, findings)

    stories: list[Story] = []
    stop = len(tasks)
    for story_id, title, head_line, number, start in reversed(heads):
        stories.append(Story(story_id, title, head_line, number, tasks[start:stop]))
        stop = start
    if stop:  # tasks before the first heading
        stories.append(Story("0", "(before the first heading)", -1, None, tasks[:stop]))
    stories.reverse()
    blocked = (
        _blocked_marks(text.split("\n"), tasks, [h[2] for h in heads], findings)
        if _mentions_blocked(text)
        else {}
    )
    return TasksDoc(
        tasks=tasks, stories=stories, findings=findings, line_count=n + 1, blocked=blocked
    )


@dataclass
class StoryCount:
    """A story's heading and counts, without its tasks (see :func:`summarize_tasks`)."""

    id: str
    title: str
    line: int
    completed: int = 0
    total: int = 0


@dataclass
class TasksSummary:
    """What a listing of changes shows: the counts and the stories of :func:`parse_tasks`."""

    stories: list[StoryCount]
    completed: int
    total: int


def summarize_tasks(text: str) -> TasksSummary:
    """The counts and stories (id, title, line, counts) that :func:`parse_tasks` gives, built
    without tasks, ids, nesting or findings: about three times faster, for listing many changes
    at once (``ralph-lsp changes``). Agrees with ``parse_tasks`` on every text."""
    implicit = StoryCount(id="0", title="(before the first heading)", line=-1)
    current = implicit
    stories: list[StoryCount] = []
    story_ids: set[str] = set()
    heading_count = 0
    done = total = 0  # the current story's counts
    for n, raw in enumerate(text.split("\n")):
        if "[" in raw:
            # a shortcut for `- [ ] text` (the shape _SIMPLE_TASK_RE reads), then the rule itself
            b = len(raw) - len(raw.lstrip(" \t"))
            c = raw[b + 3 : b + 4]
            if (
                raw[b + 1 : b + 3] == " ["
                and raw[b + 4 : b + 5] == "]"
                and raw[b : b + 1] in _BULLETS
                and c != "]"
                and c <= "\uffff"
            ):
                if c in _WS_SET:
                    total += 1
                    continue
                if raw[b + 5 : b + 6] not in ("(", "["):  # else a link: not a task
                    total += 1
                    if c == "x" or c == "X":
                        done += 1
                    continue
            else:
                m = match_task(raw)
                if m is not None:
                    total += 1
                    if m.group(3) in ("x", "X"):
                        done += 1
                    continue
        elif raw[:2] != "##" and (n or raw[:3] != "\ufeff##"):
            continue  # neither a task nor a heading
        line = raw[:-1] if raw[-1:] == "\r" else raw
        heading = _heading_text(line.removeprefix("\ufeff") if n == 0 else line)
        if heading is not None:
            current.completed, current.total = done, total
            done = total = 0
            heading_count += 1
            sid, title, _number = _story_head(heading, heading_count, story_ids)
            current = StoryCount(id=sid, title=title, line=n)
            stories.append(current)
    current.completed, current.total = done, total
    if implicit.total:
        stories.insert(0, implicit)
    return TasksSummary(
        stories=stories,
        completed=sum(s.completed for s in stories),
        total=sum(s.total for s in stories),
    )
