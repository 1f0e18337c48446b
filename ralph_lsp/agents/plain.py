"""Output of a ``custom`` agent command → agent events.

Plain text lines are shown as they are (``raw``). A stdout line that is a Claude Code
stream-json event (a JSON object whose ``type`` is ``system``, ``assistant``, ``user``,
``result`` or ``stream_event``) is read exactly as the ``claude`` preset reads it, and stderr goes
through the Claude parser's stderr rules, so a wrapper script around ``claude`` keeps the failure
detection (not logged in, usage limits, refused flags), the tool lines and the summary.
"""

from __future__ import annotations

from operator import itemgetter

from ralph_lsp.agents._json import get_str, parse_object
from ralph_lsp.agents.base import MAX_LINE_CHARS, AgentEvent, LogLines, Stream, log_line
from ralph_lsp.agents.claude import CLAUDE_EVENT_TYPES, ClaudeParser

_ASCII_CONTROLS = bytes(range(0x20)) + b"\x7f"  # the ASCII characters that are not printable
_last_char = itemgetter(-1)


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

    def feed(self, stream: Stream, line: str) -> list[AgentEvent]:
        try:
            if stream == "stderr":
                return self._claude.feed_stderr(line)
            obj = parse_object(line)
            if obj is not None and get_str(obj, "type") in CLAUDE_EVENT_TYPES:
                return self._claude.handle(obj)
            return [log_line(line, "raw")] if line.strip() else []
        except Exception:  # the last line of defence: a parser must never raise
            return [log_line(str(line), "stderr" if stream == "stderr" else "raw")]

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
