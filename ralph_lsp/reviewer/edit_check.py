"""The host's check of a reviewer's edit of a task file (SPEC §13 "Review").

A reviewer approves by changing nothing and rejects by appending unchecked tasks: under a
``## Review`` story, or after the tasks of the story they belong to. Anything else it did to the
file (checking, unchecking, removing or rewriting an existing task or heading, or adding any
other text) is a refusal, and the caller puts the file's bytes back. The comparison is line by
line: the old lines must all be there, in order and unchanged, and every line added must be an
unchecked task, a blank line, a ``## Review`` heading, or an indented line of detail under a
task added just above it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ralph_lsp.openspec.task_rule import match_task

REVIEW_HEADING = "## Review"
MAX_SHOWN = 80  # characters of a line quoted in a refusal


@dataclass(frozen=True)
class EditCheck:
    """What a reviewer did to one task file: the tasks it added, and what it may not do."""

    added: tuple[str, ...] = ()  # the added task lines, stripped
    refusals: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return bool(self.added or self.refusals)


def _shown(line: str) -> str:
    text = line.strip()
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _unchecked_task(line: str) -> bool:
    m = match_task(line)
    return m is not None and m.group(3) is None


def _changed_lines(old: list[str], new: list[str], a: int, b: int, c: int, d: int) -> str:
    """One refusal for a replaced or deleted block: its first old line, and what became of it."""
    first = old[a] if a < b else ""
    if c == d:
        return f"removed line {a + 1} ({_shown(first)!r})"
    was = "checked or unchecked" if match_task(first) and match_task(new[c]) else "rewrote"
    return f"{was} line {a + 1} ({_shown(first)!r} became {_shown(new[c])!r})"


def _inserted(lines: list[str], at: int) -> tuple[list[str], list[str]]:
    """The added tasks of one inserted block, and the refusals for the lines it may not add.
    ``at`` is the block's first line number in the new file (0-based)."""
    added: list[str] = []
    refusals: list[str] = []
    under_task = False
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if _unchecked_task(line):
            added.append(line.strip())
            under_task = True
        elif line.strip() == REVIEW_HEADING and not line[:1].isspace():
            under_task = False
        elif under_task and line[:1] in (" ", "\t") and match_task(line) is None:
            pass  # detail under the task just added (its evidence, on lines of its own)
        else:
            what = "a checked task" if match_task(line) else "text that is no unchecked task"
            refusals.append(f"added {what} at line {at + i + 1} ({_shown(line)!r})")
            under_task = False
    return added, refusals


def check_edit(before: bytes, after: bytes) -> EditCheck:
    """What changed from ``before`` to ``after`` (a task file's bytes), judged by the rule above.
    Bytes that are not UTF-8 are compared as they are (undecodable bytes kept distinct)."""
    if before == after:
        return EditCheck()
    old = before.decode("utf-8", "surrogateescape").split("\n")
    new = after.decode("utf-8", "surrogateescape").split("\n")
    added: list[str] = []
    refusals: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, a, b, c, d in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "insert":
            tasks, refused = _inserted(new[c:d], c)
            added += tasks
            refusals += refused
        else:
            refusals.append(_changed_lines(old, new, a, b, c, d))
    return EditCheck(tuple(added), tuple(refusals))
