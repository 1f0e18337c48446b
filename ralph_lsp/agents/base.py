"""Agent output events and the parser protocol (see docs/architecture.md, "agents/base.py").

An agent's output is fed to an :class:`OutputParser` one line at a time (already decoded with
replacement characters, without its newline). The parser turns it into :data:`AgentEvent` values:
readable :class:`LogLine` s for the operator, the agent's own :class:`ResultInfo`,
:class:`AgentProblem` s the engine acts on, and :class:`Activity` markers that prove the agent did
real work. Parsers never raise, whatever the input.

A parser may also take the lines of one read at once (``feed_many``, see :func:`feed_lines`) and
give a run of plain lines as one :class:`LogLines`; that must mean exactly what feeding the lines
one by one means. :func:`feed_lines` falls back to ``feed`` for parsers without it.

This module also holds the small text helpers every parser shares: :func:`clean_text` (strip ANSI
escapes and control characters, cap the length) and :func:`log_lines` (one :class:`LogLine` per
line of a multi-line text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

LogKind = Literal["text", "tool", "command", "stderr", "info", "summary", "raw"]
# offline: the agent is waiting for its service to be reachable again (it goes on by itself)
ProblemKind = Literal["auth", "rate_limit", "fatal", "offline"]
Stream = Literal["stdout", "stderr"]

#: The most characters of one line a :class:`LogLine` carries; longer text is cut and marked.
MAX_LINE_CHARS = 4000
#: The most lines one multi-line block (an assistant message, …) turns into.
MAX_BLOCK_LINES = 200


@dataclass(frozen=True)
class LogLine:
    """A readable line for the operator: single-line, printable, at most ~4000 characters."""

    text: str
    kind: LogKind


@dataclass(frozen=True)
class LogLines:
    """Several readable lines of one kind, in order: the same as one :class:`LogLine` per text
    (each single-line, printable, capped), in one object instead of one per line."""

    texts: tuple[str, ...]
    kind: LogKind


@dataclass(frozen=True)
class ResultInfo:
    """The agent's own summary of its run (fields it does not report are None)."""

    is_error: bool
    cost_usd: float | None
    num_turns: int | None
    usage: dict[str, Any] | None
    duration_ms: int | None
    text: str | None
    # The model the agent says it ran (Claude's modelUsage or init event, Gemini's stats.models):
    # the receipt's ``model`` (SPEC §15); None when its output names none (Codex).
    model: str | None = None


@dataclass(frozen=True)
class AgentProblem:
    """Why the agent cannot go on.

    ``auth``: not logged in or a bad key (the run fails). ``rate_limit``: a rate or usage limit
    (the engine waits until ``retry_at``, epoch seconds, or backs off; the iteration does not
    count). ``fatal``: the agent cannot work at all (e.g. it refused its flags).
    """

    kind: ProblemKind
    message: str
    retry_at: float | None = None


@dataclass(frozen=True)
class Activity:
    """The agent did real work (a tool call, a file change): this is no startup failure."""


@dataclass(frozen=True)
class Refusal:
    """A tool call the agent's own permissions refused (SPEC §4 v2): ``tool`` (e.g. ``Bash``)
    and ``input`` (the command, or the file, or "")."""

    tool: str
    input: str = ""

    @property
    def rule(self) -> str:
        """The permission rule that would allow it, e.g. ``Bash(make build)``."""
        return f"{self.tool}({self.input})" if self.input else self.tool

    def to_json(self) -> dict[str, str]:
        """As the history keeps it (``runs.records.RefusalRecord``)."""
        return {"tool": self.tool, "input": self.input, "rule": self.rule}


AgentEvent: TypeAlias = LogLine | LogLines | ResultInfo | AgentProblem | Activity | Refusal


class OutputParser(Protocol):
    """Turns one agent process's output into events. One instance per process; never raises."""

    def feed(self, stream: Stream, line: str) -> list[AgentEvent]: ...

    def finish(self, exit_code: int | None) -> list[AgentEvent]: ...


class LineParser:
    """An :class:`OutputParser` of a CLI whose stdout and stderr lines each mean something of
    their own: subclasses read them in ``feed_stdout`` and ``feed_stderr``. ``feed`` never raises
    (a line a subclass fails on is shown as it came), and the end of the process adds nothing."""

    def feed(self, stream: Stream, line: str) -> list[AgentEvent]:
        try:
            if stream == "stderr":
                return self.feed_stderr(line)
            return self.feed_stdout(line)
        except Exception:  # the last line of defence: a parser must never raise
            return unparsed_line(stream, line)

    def finish(self, exit_code: int | None) -> list[AgentEvent]:
        return []

    def feed_stdout(self, line: str) -> list[AgentEvent]:
        raise NotImplementedError

    def feed_stderr(self, line: str) -> list[AgentEvent]:
        raise NotImplementedError


def unparsed_line(stream: Stream, line: str) -> list[AgentEvent]:
    """A line a parser failed on, shown as it came (cleaned and capped)."""
    return [log_line(str(line), "stderr" if stream == "stderr" else "raw")]


def feed_lines(parser: OutputParser, stream: Stream, lines: list[str]) -> list[AgentEvent]:
    """The events of ``lines`` (in order, all of one stream): the parser's own ``feed_many`` if it
    has one, else ``feed`` line by line."""
    many = getattr(parser, "feed_many", None)
    if many is not None:
        events: list[AgentEvent] = many(stream, lines)
        return events
    out: list[AgentEvent] = []
    for line in lines:
        out.extend(parser.feed(stream, line))
    return out


# --- text helpers -------------------------------------------------------------------------

# ANSI/VT escape sequences: CSI (ESC [ … final), OSC (ESC ] … BEL or ST), DCS/SOS/PM/APC strings,
# two-character escapes, and the 8-bit CSI (U+009B).
_ANSI_RE = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]            # CSI
  | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)? # OSC, terminated by BEL or ST (or cut off)
  | \x1b[PX^_][^\x1b]*(?:\x1b\\)?      # DCS, SOS, PM, APC
  | \x1b[ -/]*[0-~]                    # other escapes (ESC ( B, ESC 7, ESC =, …)
  | \x9b[0-?]*[ -/]*[@-~]              # 8-bit CSI
    """,
    re.VERBOSE,
)
# What is left to drop: C0/C1 controls (a tab is kept), DEL, lone surrogates, bidirectional
# overrides and isolates (they make a line read differently from what it holds), and the BOM.
_CONTROL_RE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)
_LINE_SEPARATORS_RE = re.compile("[\u2028\u2029]")
# Before the regexes run, a huge line is cut to this many characters (the result is capped at
# MAX_LINE_CHARS anyway); this keeps cleaning cheap on multi-megabyte lines.
_PRECUT = MAX_LINE_CHARS * 4


def _cap(text: str, total_len: int, limit: int) -> str:
    if total_len <= limit and len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" … [cut: {total_len} characters in all]"


def clean_text(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """One printable line: ANSI escapes and control characters stripped, capped at ``limit``.

    A carriage return keeps what a terminal would show last (the text after the last non-empty
    ``\\r`` segment); U+2028/U+2029 become spaces; a tab stays a tab.
    """
    if not isinstance(line, str):  # defensive: callers pass str, but never raise
        line = str(line)
    total = len(line)
    if total <= limit and line.isprintable():
        # The common case: every character this function removes (controls, escapes, format
        # and separator characters, surrogates) is non-printable, so nothing is to be removed.
        return line.rstrip()
    text = line[:_PRECUT] if total > _PRECUT else line
    if "\r" in text:
        segments = [s for s in text.split("\r") if s.strip()]
        text = segments[-1] if segments else ""
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI_RE.sub("", text)
    text = _CONTROL_RE.sub("", text)
    text = _LINE_SEPARATORS_RE.sub(" ", text)
    return _cap(text.rstrip(), total, limit)


def log_line(text: str, kind: LogKind) -> LogLine:
    """A :class:`LogLine` of ``text`` cleaned and capped."""
    return LogLine(clean_text(text), kind)


def log_lines(text: str, kind: LogKind, max_lines: int = MAX_BLOCK_LINES) -> list[AgentEvent]:
    """One :class:`LogLine` per non-blank line of ``text`` (at most ``max_lines``, then a
    marker)."""
    if not isinstance(text, str):
        return []
    # Bound the work on a huge block before splitting it.
    budget = (MAX_LINE_CHARS + 1) * max_lines
    block = text[:budget] if len(text) > budget else text
    lines = [ln for ln in re.split(r"\r\n|\n|\r(?!\n)|\u2028|\u2029|\x85", block) if ln.strip()]
    cleaned = (log_line(ln, kind) for ln in lines[:max_lines])
    out: list[AgentEvent] = [ln for ln in cleaned if ln.text.strip()]
    if len(lines) > max_lines or len(text) > budget:
        out.append(LogLine("… (more lines cut)", kind))
    return out


def first_line(text: str, limit: int = 200) -> str:
    """The first non-blank line of ``text``, cleaned and capped at ``limit``; `` …`` marks that
    more lines followed (for one-line summaries of tool results and errors)."""
    if not isinstance(text, str):
        return ""
    lines = [ln for ln in text[:_PRECUT].splitlines() if ln.strip()]
    if not lines:
        return ""
    head = clean_text(lines[0], limit)
    return head + " …" if len(lines) > 1 else head
