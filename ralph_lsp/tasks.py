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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

# JavaScript's `\s`: includes U+FEFF, no-break space, U+2028/U+2029; excludes U+0085 and
# U+001C–U+001F, which Python's `\s` would match.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS = "[" + re.escape(JS_WHITESPACE) + "]"
_NOT_WS = "[^" + re.escape(JS_WHITESPACE) + "]"

# group 1: indent, group 2: bullet, group 3: the box's character (None for a box of spaces).
# A box character is one UTF-16 code unit: astral characters (two units) never match.
_TASK_RE = re.compile(
    rf"({_WS}*)([-*+]|[0-9]{{1,9}}[.)]){_WS}*\["
    rf"{_WS}*(?:(?!\])([^{re.escape(JS_WHITESPACE)}\U00010000-\U0010ffff]){_WS}*)?\]"
)
# A loose shape for "looks like a task": used only to warn about lines that do not count.
_LOOKS_LIKE_TASK_RE = re.compile(
    rf"{_WS}*(?:[-*+]|[0-9]+[.)])?{_WS}*\[(?P<box>[^\]\n]{{0,4}})\]{_NOT_WS}?"
)
_HEADING_RE = re.compile(r"##[ \t]+(.*?)[ \t#]*$")
_STORY_NUM_RE = re.compile(
    r"(?:(?:Story|Phase|Part|Section|Step)[ \t]+)?([0-9]+(?:\.[0-9]+)*)[.):]?(?=[ \t]|$)", re.I
)
_TASK_ID_RE = re.compile(r"(?:\*\*)?([0-9]+(?:\.[0-9]+)+)(?:\*\*)?[.):]?(?=[ \t]|$)")


@dataclass
class Task:
    line: int  # 0-based line number
    done: bool
    box: str  # the character in the box ("" for a box of spaces)
    text: str  # the text after the box, stripped
    id: str | None  # e.g. "1.2" when the text starts with such a token
    story_id: str
    indent: int  # width of the leading whitespace
    parent: int | None = None  # index (in TasksDoc.tasks) of the task this one is nested under

    @property
    def story_number(self) -> str | None:
        """The first component of a dotted id (``2`` for ``2.3``)."""
        return self.id.split(".", 1)[0] if self.id else None


@dataclass
class Story:
    id: str
    title: str
    line: int  # 0-based line of the heading; -1 for the implicit story before any heading
    number: str | None  # the number written in the heading, if any
    tasks: list[Task] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.tasks)

    @property
    def completed(self) -> int:
        return sum(1 for t in self.tasks if t.done)

    @property
    def done(self) -> bool:
        return all(t.done for t in self.tasks)


@dataclass(frozen=True)
class Finding:
    """Something in tasks.md the author most likely did not mean; the server makes it a warning."""

    line: int
    start: int
    end: int
    message: str
    code: str


@dataclass
class TasksDoc:
    tasks: list[Task]
    stories: list[Story]  # only stories that are headings, plus story "0" when it has tasks
    findings: list[Finding]
    line_count: int

    @property
    def total(self) -> int:
        return len(self.tasks)

    @property
    def completed(self) -> int:
        return sum(1 for t in self.tasks if t.done)

    @property
    def all_done(self) -> bool:
        return all(t.done for t in self.tasks)

    def story(self, story_id: str) -> Story | None:
        for s in self.stories:
            if s.id == story_id:
                return s
        return None

    def first_open_story(self) -> Story | None:
        """The first story that still has unchecked tasks."""
        for s in self.stories:
            if any(not t.done for t in s.tasks):
                return s
        return None


def count_tasks(text: str) -> tuple[int, int]:
    """(completed, total) exactly as ``openspec list`` counts them."""
    completed = total = 0
    for line in text.split("\n"):
        m = _match_task(line)
        if m is not None:
            total += 1
            if m.group(3) in ("x", "X"):
                completed += 1
    return completed, total


def _match_task(line: str) -> re.Match[str] | None:
    m = _TASK_RE.match(line)
    if m is None:
        return None
    # `[x](url)`, `[](url)` and `[x][ref]` are links, not tasks; only a box holding one or
    # more spaces and nothing else may be directly followed by `(` or `[`.
    if line[m.end() : m.end() + 1] in ("(", "[") and (
        m.group(3) is not None or line[m.end() - 2 : m.end()] == "[]"
    ):
        return None

    return m


def parse_tasks(text: str) -> TasksDoc:
    """Parse tasks.md text into tasks, stories and findings. Never raises."""
    lines = text.split("\n")
    tasks: list[Task] = []
    stories: list[Story] = []
    findings: list[Finding] = []
    implicit = Story(id="0", title="(before the first heading)", line=-1, number=None)
    current = implicit
    heading_count = 0
    seen_ids: dict[str, int] = {}
    # stack of (indent, task index) for nesting
    stack: list[tuple[int, int]] = []

    for n, raw in enumerate(lines):
        line = raw[:-1] if raw.endswith("\r") else raw
        m = _match_task(raw)
        if m is None:
            h = _HEADING_RE.match(line)
            if h is not None:
                heading_count += 1
                title = h.group(1).strip()
                num_m = _STORY_NUM_RE.match(title)
                number = num_m.group(1) if num_m else None
                if num_m is not None and title[num_m.end() :].strip():
                    title = title[num_m.end() :].strip()
                sid = number if number is not None else str(heading_count)
                if any(s.id == sid for s in stories):
                    sid = f"{sid}#{heading_count}"
                current = Story(id=sid, title=title, line=n, number=number)
                stories.append(current)
                stack.clear()
            else:
                _check_uncounted(n, line, findings)
            continue

        box = m.group(3) or ""
        indent_text = m.group(1)
        indent = sum(4 if c == "\t" else 1 for c in indent_text)
        rest = raw[m.end() :].strip(JS_WHITESPACE)
        tid_m = _TASK_ID_RE.match(rest)
        tid = tid_m.group(1) if tid_m else None
        task = Task(
            line=n,
            done=box in ("x", "X"),
            box=box,
            text=rest,
            id=tid,
            story_id=current.id,
            indent=indent,
        )
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if stack:
            task.parent = stack[-1][1]
        stack.append((indent, len(tasks)))
        tasks.append(task)
        current.tasks.append(task)
        _check_counted(n, line, m, task, current, seen_ids, findings)

    if implicit.tasks:
        stories.insert(0, implicit)
    return TasksDoc(tasks=tasks, stories=stories, findings=findings, line_count=len(lines))


def _check_counted(
    n: int,
    line: str,
    m: re.Match[str],
    task: Task,
    story: Story,
    seen_ids: dict[str, int],
    findings: list[Finding],
) -> None:
    box_start = line.find("[", m.start(2))
    box_end = m.end()
    bullet = m.group(2)
    if task.box == "" and line[box_start:box_end] == "[]":
        findings.append(
            Finding(
                n, box_start, box_end, "`[]` counts as an unchecked task; write `[ ]`", "empty-box"
            )
        )
    elif task.box not in ("", "x", "X"):
        findings.append(
            Finding(
                n,
                box_start,
                box_end,
                f"`[{task.box}]` counts as an unchecked task: only `[x]` marks a task done",
                "odd-box",
            )
        )
    if box_start == m.end(2) and bullet in ("-", "*", "+"):
        findings.append(
            Finding(
                n,
                m.start(2),
                box_end,
                f"`{bullet}[` counts as a task, but Markdown will not render it as a checkbox;"
                f" write `{bullet} [`",
                "no-space",
            )
        )
    if task.id is not None:
        id_start = line.find(task.id, box_end)
        id_end = id_start + len(task.id)
        if task.id in seen_ids:
            findings.append(
                Finding(
                    n,
                    id_start,
                    id_end,
                    f"duplicate task id {task.id} (also on line {seen_ids[task.id] + 1})",
                    "duplicate-id",
                )
            )
        else:
            seen_ids[task.id] = n
        if story.number is not None and task.story_number != story.number.split(".")[0]:
            findings.append(
                Finding(
                    n,
                    id_start,
                    id_end,
                    f"task {task.id} sits under story {story.number} ({story.title})",
                    "story-mismatch",
                )
            )


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


def read_tasks_text(path: Path) -> str | None:
    """The text of a tasks.md, or None when it does not exist or is not a readable file."""
    try:
        return decode_tasks_bytes(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
