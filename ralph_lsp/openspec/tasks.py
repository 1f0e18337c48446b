"""The tasks.md model: stories, tasks and counts, agreeing with the OpenSpec CLI (1.13.2).

Counting follows the CLI's rule exactly, with JavaScript's meanings (SPEC §2): the file is
split on ``\\n`` only and read line by line with no Markdown awareness. A task line is optional
whitespace, a bullet (``-``, ``*``, ``+`` or ``1.``/``1)`` with one to nine ASCII digits),
optional whitespace, a box holding at most one UTF-16 code unit (padding allowed, ``[]``
counts), then text. A box that holds a character and is directly followed by ``(`` or ``[``
is a link, not a task. Only ``x``/``X`` is done.

On top of the counts this module gives structure (stories from ``## `` headings, task ids,
nesting) and *findings*: lines the author most likely did not mean the way they count.
Nothing here does I/O except :func:`read_tasks_text`.

:func:`count_tasks` states the counting rule plainly. The one parser of the product is
:mod:`ralph_lsp.openspec.tasks_fast` (what the server, the engine and the CLI call); the pieces
here (boxes, headings, ids, blocked marks, look-alikes) are the line rules it builds on. The
reference parser that states the whole rule top to bottom lives with the tests that compare the
fast one against it (``tests/tasks_reference.py``, ``tests/test_tasks_fast.py``): nothing in the
product called it.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ralph_lsp.openspec.regular_files import READ_CHUNK as _READ_CHUNK
from ralph_lsp.openspec.regular_files import NotARegularFile as NotARegularFile
from ralph_lsp.openspec.regular_files import open_regular as open_regular
from ralph_lsp.openspec.regular_files import read_regular as read_regular
from ralph_lsp.openspec.regular_files import read_regular_text as read_regular_text
from ralph_lsp.openspec.task_rule import JS_WHITESPACE as JS_WHITESPACE
from ralph_lsp.openspec.task_rule import NOT_WS as _NOT_WS
from ralph_lsp.openspec.task_rule import WS as _WS
from ralph_lsp.openspec.task_rule import match_task as match_task

# A loose shape for "looks like a task": used only to warn about lines that do not count.
_BULLET = "(?:[-*+]|[0-9]+[.)])"
_LOOKS_LIKE_TASK_RE = re.compile(
    # maximal runs (`X*(?!X)`) and a bullet taken whenever it is there (`(?:B|(?!B))`): the
    # bullet is no whitespace, so the two runs around it never need to give back (they did,
    # quadratic in a long line of spaces holding a `[`). Not `*+`/`?+`: Python 3.11+ only.
    rf"{_WS}*(?!{_WS})(?:{_BULLET}|(?!{_BULLET})){_WS}*(?!{_WS})"
    rf"\[(?P<box>[^\]\n]{{0,4}})\]{_NOT_WS}?"
)
_STORY_NUM_RE = re.compile(
    r"(?:(?:Story|Phase|Part|Section|Step)[ \t]+|)([0-9]+(?:\.[0-9]+)*)[.):]?(?=[ \t]|$)", re.I
)
_TASK_ID = r"(?:\*\*|)([0-9]+(?:\.[0-9]+)+)(?:\*\*|)[.):]?"  # `(?:x|)`: quicker than `(?:x)?`
_TASK_ID_RE = re.compile(_TASK_ID + r"(?=[ \t]|$)")


class Task(NamedTuple):
    """One task line. Tasks and findings are named tuples, not dataclasses: a large tasks.md
    has thousands, and :mod:`ralph_lsp.openspec.tasks_fast` builds them without a Python-level
    ``__init__`` (2 of 25 ms on 1 MiB). They are read, never changed."""

    line: int  # 0-based line number
    done: bool
    box: str  # the character in the box ("" for a box of spaces)
    text: str  # the text after the box, stripped
    id: str | None  # e.g. "1.2" when the text starts with such a token
    story_id: str
    indent: int  # width of the leading whitespace
    parent: int | None = None  # index (in TasksDoc.tasks) of the task this one is nested under

    @property
    def label(self) -> str:
        """How messages name the task: its id, else the start of its text."""
        if self.id:
            return self.id
        return self.text if len(self.text) <= 60 else self.text[:59] + "…"

    @property
    def story_number(self) -> str | None:
        """The first component of a dotted id (``2`` for ``2.3``)."""
        return self.id.split(".", 1)[0] if self.id else None


class _Counted:
    """What a story and a whole document count of their ``tasks``."""

    tasks: list[Task]

    @property
    def total(self) -> int:
        return len(self.tasks)

    @property
    def completed(self) -> int:
        return sum(1 for t in self.tasks if t.done)

    @property
    def all_done(self) -> bool:
        return all(t.done for t in self.tasks)


@dataclass
class Story(_Counted):
    id: str
    title: str
    line: int  # 0-based line of the heading; -1 for the implicit story before any heading
    number: str | None  # the number written in the heading, if any
    tasks: list[Task] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.all_done


class Blocked(NamedTuple):
    """A task a person must unblock (SPEC §2): the ``- blocked: <why>`` line under it."""

    task: int  # index in TasksDoc.tasks
    line: int  # 0-based line of the `blocked:` item
    reason: str  # the text after `blocked:`, stripped ("" when none is given)


class Finding(NamedTuple):
    """Something in tasks.md the author most likely did not mean; the server makes it a warning."""

    line: int
    start: int
    end: int
    message: str
    code: str


@dataclass
class TasksDoc(_Counted):
    tasks: list[Task]
    stories: list[Story]  # only stories that are headings, plus story "0" when it has tasks
    findings: list[Finding]
    line_count: int
    # task index -> its `blocked:` line, for tasks marked blocked (done ones included)
    blocked: dict[int, Blocked] = field(default_factory=dict)

    def story(self, story_id: str) -> Story | None:
        for s in self.stories:
            if s.id == story_id:
                return s
        return None

    def blocked_reason(self, task: Task) -> str | None:
        """Why an open task is blocked, or None when it is done or not blocked."""
        if task.done or not self.blocked:
            return None
        mark = self.blocked.get(self._index(task))
        return None if mark is None else mark.reason

    def _index(self, task: Task) -> int:
        if self._indexes is None:
            self._indexes = {t.line: i for i, t in enumerate(self.tasks)}
        return self._indexes[task.line]

    _indexes: dict[int, int] | None = field(default=None, init=False, repr=False, compare=False)

    def workable(self, task: Task) -> bool:
        """An open task that is not blocked: one the agent may be asked for."""
        return not task.done and (not self.blocked or self.blocked_reason(task) is None)

    def blocked_open(self) -> list[tuple[Task, str]]:
        """The open tasks that are blocked, in file order, with their reasons."""
        out = []
        for index, mark in sorted(self.blocked.items()):
            task = self.tasks[index]
            if not task.done:
                out.append((task, mark.reason))
        return out

    def first_open_story(self) -> Story | None:
        """The first story with an unchecked task that is not blocked (SPEC §3)."""
        for s in self.stories:
            if any(self.workable(t) for t in s.tasks):
                return s
        return None


# -- the rule (SPEC §2) ---------------------------------------------------------------------
def is_done(box: str | None) -> bool:
    """Only ``x`` and ``X`` mark a task done."""
    return box in ("x", "X")


def count_tasks(text: str) -> tuple[int, int]:
    """(completed, total) exactly as ``openspec list`` counts them: the rule on every line."""
    completed = total = 0
    for line in text.split("\n"):
        m = match_task(line)
        if m is not None:
            total += 1
            if is_done(m.group(3)):
                completed += 1
    return completed, total


# A `blocked:` item: a list bullet, then `blocked:` in any case (SPEC §2). Group 1: the indent.
_BLOCKED_RE = re.compile(r"([ \t]*)(?:[-*+]|[0-9]{1,9}[.)])[ \t]+blocked:(.*)", re.I)


def _blocked_marks(
    lines: list[str],
    tasks: list[Task],
    head_lines: list[int],
    findings: list[Finding],
) -> dict[int, Blocked]:
    """The tasks marked blocked: a task is blocked when a ``- blocked: <why>`` item sits below
    it, indented deeper, before the next task or heading (notes between are allowed).
    ``head_lines`` are the lines of the ``## `` headings, in order."""
    task_lines = [t.line for t in tasks]
    found: dict[int, Blocked] = {}
    for n, raw in enumerate(lines):
        m = _BLOCKED_RE.match(raw) if ":" in raw else None
        if m is None:
            continue
        i = bisect_right(task_lines, n) - 1
        if i >= 0 and task_lines[i] == n:
            continue  # `- [ ] blocked: …` is a task, not a mark
        task = tasks[i] if i >= 0 else None
        h = bisect_right(head_lines, n) - 1
        indent = len(m.group(1)) + 3 * m.group(1).count("\t")
        if task is None or (h >= 0 and head_lines[h] > task.line) or indent <= task.indent:
            findings.append(
                Finding(
                    n,
                    0,
                    len(raw.rstrip("\r")),
                    "a `blocked:` line marks the task right above it: indent it under that task",
                    "blocked-orphan",
                )
            )
            continue
        reason = m.group(2).strip(JS_WHITESPACE)
        found.setdefault(i, Blocked(i, n, reason))
    return found


def _box_findings(
    n: int, raw: str, m: re.Match[str], findings: list[Finding]
) -> tuple[str, str, bool, int]:
    """(indent, box, done, end of the box) of a task line match_task matched as ``m``, and
    its findings about the box and the bullet."""
    end = m.end()
    b, bend = m.span(2)
    box = m.group(3)
    if box is None:
        box = ""
        done = False
        if raw[end - 2 : end] == "[]":
            findings.append(
                Finding(
                    n, end - 2, end, "`[]` counts as an unchecked task; write `[ ]`", "empty-box"
                )
            )
    else:
        done = is_done(box)
        if not done:
            findings.append(_odd_box(n, raw.find("[", b), end, box))
    if bend - b == 1 and raw[bend : bend + 1] == "[":  # `-[ ]`: a one-character bullet
        bullet = raw[b]
        findings.append(
            Finding(
                n,
                b,
                end,
                f"`{bullet}[` counts as a task, but Markdown will not render it as a checkbox;"
                f" write `{bullet} [`",
                "no-space",
            )
        )
    return raw[:b], box, done, end


def _odd_box(line: int, start: int, end: int, box: str) -> Finding:
    return Finding(
        line,
        start,
        end,
        f"`[{box}]` counts as an unchecked task: only `[x]` marks a task done",
        "odd-box",
    )


def _heading_text(line: str) -> str | None:
    """The text of a ``## `` heading, without the closing ``#``s (what ``##[ \\t]+(.*?)[ \\t#]*$``
    captures), or None when ``line`` is not one."""
    if line[:2] != "##" or line[2:3] not in (" ", "\t"):
        return None
    return line[3:].lstrip(" \t").rstrip(" \t#")


def _story_head(
    heading: str, heading_count: int, story_ids: set[str]
) -> tuple[str, str, str | None]:
    """(id, title, number) of the story a heading (its _heading_text) starts; takes the id."""
    title = heading.strip()
    num_m = _STORY_NUM_RE.match(title)
    if num_m is None:
        number = None
        sid = str(heading_count)
    else:
        number = sid = num_m.group(1)
        title = title[num_m.end() :].strip() or title
    if sid in story_ids:  # a second "## 2." (or a number that equals a position)
        sid = f"{sid}#{heading_count}"
    story_ids.add(sid)
    return sid, title, number


def _check_uncounted(n: int, line: str, findings: list[Finding]) -> None:
    if "[" not in line:
        return
    lm = _LOOKS_LIKE_TASK_RE.match(line)
    if lm is None:
        return
    box = lm.group("box")
    stripped = line.lstrip(JS_WHITESPACE)
    has_bullet = bool(re.match(r"(?:[-*+]|[0-9]+[.)])", stripped))
    inner = box.strip(JS_WHITESPACE)
    if not has_bullet:
        if len(box) <= 3 and len(inner) <= 1 and stripped.startswith("["):
            findings.append(
                Finding(
                    n,
                    0,
                    len(line),
                    "looks like a task but has no list bullet, so it is not counted; write `- [ ]`",
                    "not-counted",
                )
            )
        return
    after = line[lm.end("box") + 1 : lm.end("box") + 2]
    if len(inner) > 1 and len(inner) <= 3 and not inner.isdigit():
        reason = f"`[{box}]` holds more than one character, so it is not counted as a task"
    elif len(inner) == 1 and after in ("(", "["):
        reason = "a box followed directly by `(` or `[` is read as a link, not a task"
    elif len(inner) == 1 and ord(inner) > 0xFFFF:
        reason = f"`[{inner}]` is not a checkbox OpenSpec counts; write `[x]` or `[ ]`"
    elif re.match(r"[0-9]{10,}[.)]", stripped):
        reason = "a list number longer than nine digits is not counted by OpenSpec"
    else:
        return
    findings.append(Finding(n, 0, len(line), "not counted: " + reason, "not-counted"))


def decode_tasks_bytes(data: bytes) -> str:
    """Decode like the CLI's reader: UTF-8 with replacement characters, the BOM kept."""
    return data.decode("utf-8", errors="replace")


#: The largest tasks.md read; a larger one counts as 0/0 with a warning (real ones are < 64 KiB).
MAX_TASKS_BYTES = 16 * 1024 * 1024


def read_tasks_text(path: Path) -> str | None:
    """The text of a tasks.md, or None when it does not exist.

    Raises :class:`NotARegularFile` for a FIFO, a device, a folder or a file over
    :data:`MAX_TASKS_BYTES`, and OSError when it cannot be read.
    """
    # os.open/os.read: a third of the cost of Path.read_bytes (no buffered file object),
    # which counts when a listing reads a thousand of them.
    try:
        fd = open_regular(path, MAX_TASKS_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        chunks = []
        size = 0
        while size <= MAX_TASKS_BYTES and (chunk := os.read(fd, _READ_CHUNK)):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > MAX_TASKS_BYTES:  # it grew while being read
        raise NotARegularFile(f"{path} grew past {MAX_TASKS_BYTES >> 20} MiB while read: not read")
    return decode_tasks_bytes(chunks[0] if len(chunks) == 1 else b"".join(chunks))
