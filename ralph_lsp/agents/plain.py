"""Output of a ``custom`` agent command → agent events.

Plain text lines are shown as they are (``raw``). A stdout line that is a Claude Code
stream-json event (a JSON object whose ``type`` is ``system``, ``assistant``, ``user``,
``result`` or ``stream_event``) is read exactly as the ``claude`` preset reads it, so a wrapper
script around ``claude`` keeps the failure detection (not logged in, usage limits, refused
flags), the tool lines and the summary.

Claude's stderr patterns apply only to an agent that has shown itself to be Claude (it printed a
stream-json event): a custom agent's ordinary stderr, such as a failing test printing
"authentication failed", is shown and never read as a problem. Stderr lines that came before the
first Claude event are read again at that point, since the two pipes are read in no set order.
"""

from __future__ import annotations

from collections import deque
from operator import itemgetter
from typing import Any

from ralph_lsp.agents._json import get_str, parse_object
from ralph_lsp.agents.base import (
    MAX_LINE_CHARS,
    AgentEvent,
    LogLine,
    LogLines,
    Stream,
    log_line,
    unparsed_line,
)
from ralph_lsp.agents.claude import CLAUDE_EVENT_TYPES, ClaudeParser

_ASCII_CONTROLS = bytes(range(0x20)) + b"\x7f"  # the ASCII characters that are not printable
_last_char = itemgetter(-1)
_EARLY_STDERR_LINES = 20  # stderr lines kept until the agent shows whether it is Claude


def _need_no_cleaning(lines: list[str]) -> bool:
    """Whether ``feed`` would show every one of ``lines`` as it is, as a ``raw`` line: each is
    non-blank, printable, at most MAX_LINE_CHARS long, without trailing space, and cannot be a
    JSON object (it does not end with ``}``). Checked on the whole batch at C speed."""
    if not all(lines):
        return False
    whole = "".join(lines)
    if whole.isascii():  # O(1); the common case, where printable means no ASCII control
        raw = whole.encode("ascii")
        if len(raw.translate(None, _ASCII_CONTROLS)) != len(raw):
            return False
    elif not whole.isprintable():
        return False
    # A printable line's only whitespace is the space, so "no trailing space" leaves no blank.
    ends = "".join(map(_last_char, lines))
    return " " not in ends and "}" not in ends and max(map(len, lines)) <= MAX_LINE_CHARS


class PlainParser:
    """Plain text, with Claude stream-json lines recognised. Never raises."""

    def __init__(self, cwd: str | None = None) -> None:
        self._claude = ClaudeParser(cwd)
        self._wraps_claude = False
        self._early_stderr: deque[str] = deque(maxlen=_EARLY_STDERR_LINES)

    def feed(self, stream: Stream, line: str) -> list[AgentEvent]:
        try:
            if stream == "stderr":
                return self._stderr(line)
            obj = parse_object(line)
            if obj is not None and get_str(obj, "type") in CLAUDE_EVENT_TYPES:
                return self._claude_event(obj)
            return [log_line(line, "raw")] if line.strip() else []
        except Exception:  # the last line of defence: a parser must never raise
            return unparsed_line(stream, line)

    def _stderr(self, line: str) -> list[AgentEvent]:
        if self._wraps_claude:
            return self._claude.feed_stderr(line)
        self._early_stderr.append(line)
        return [log_line(line, "stderr")]

    def _claude_event(self, obj: dict[str, Any]) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        if not self._wraps_claude:
            self._wraps_claude = True
            for line in self._early_stderr:  # already shown: only their problems now
                events += [e for e in self._claude.feed_stderr(line) if not isinstance(e, LogLine)]
            self._early_stderr.clear()
        return events + self._claude.handle(obj)

    def feed_many(self, stream: Stream, lines: list[str]) -> list[AgentEvent]:
        """What ``feed`` gives for each of ``lines`` in turn, with runs of plain stdout lines that
        need no cleaning as one :class:`LogLines` (a flood costs little per line)."""
        if stream == "stderr" or not lines:
            return self._one_by_one(stream, lines)
        try:
            if _need_no_cleaning(lines):
                return [LogLines(tuple(lines), "raw")]
            return self._line_by_line(stream, lines)
        except Exception:  # never raise: the slowest way, which cannot fail
            return self._one_by_one(stream, lines)

    def _line_by_line(self, stream: Stream, lines: list[str]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        plain: list[str] = []
        for line in lines:
            if len(line) <= MAX_LINE_CHARS and line.isprintable():
                text = line.rstrip()
                if not text:
                    continue  # a blank line: feed gives nothing
                if not (text.endswith("}") and text.lstrip().startswith("{")):
                    plain.append(text)  # what clean_text gives for it, and no JSON
                    continue
            if plain:
                out.append(LogLines(tuple(plain), "raw"))
                plain = []
            out.extend(self.feed(stream, line))
        if plain:
            out.append(LogLines(tuple(plain), "raw"))
        return out

    def _one_by_one(self, stream: Stream, lines: list[str]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        for line in lines:
            out.extend(self.feed(stream, line))
        return out

    def finish(self, exit_code: int | None) -> list[AgentEvent]:
        return self._claude.finish(exit_code)
