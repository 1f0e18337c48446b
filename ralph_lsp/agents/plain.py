"""Output of a ``custom`` agent command → agent events.

Plain text lines are shown as they are (``raw``). A stdout line that is a Claude Code
stream-json event (a JSON object whose ``type`` is ``system``, ``assistant``, ``user``,
``result`` or ``stream_event``) is read exactly as the ``claude`` preset reads it, and stderr goes
through the Claude parser's stderr rules, so a wrapper script around ``claude`` keeps the failure
detection (not logged in, usage limits, refused flags), the tool lines and the summary.
"""

from __future__ import annotations

from ralph_lsp.agents._json import get_str, parse_object
from ralph_lsp.agents.base import AgentEvent, Stream, log_line
from ralph_lsp.agents.claude import CLAUDE_EVENT_TYPES, ClaudeParser


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

    def finish(self, exit_code: int | None) -> list[AgentEvent]:
        return self._claude.finish(exit_code)
