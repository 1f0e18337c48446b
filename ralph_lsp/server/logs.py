"""``window/logMessage`` without flooding: lines are queued, capped, and shed under overload.

pygls writes to stdout synchronously, so one message per agent output line would let a chatty
agent (or 100 000 lines at once) starve every request. The one batcher of agent output is the
engine's (``iteration.LogBatch``, 20 ms): its events already hold many lines, so this queue adds
no delay of its own (``delay`` 0: the loop's next turn). Lines queued by then go out as
one message (consecutive lines of the same level joined by newlines, at most ``max_message``
characters), at most ``max_per_flush`` messages per tick; the rest waits for the next tick, so
requests are served in between. ``delay`` only gathers fresh lines: what a tick could not send
goes out at the loop's next turn, so a flood goes out as fast as the client reads it, one
message per turn of the loop. A backlog larger than ``max_backlog`` drops its oldest lines and
says how many.

Python logging at warning and above reaches the client through :class:`LspLogHandler`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable

from lsprotocol.types import MessageType

from ralph_lsp.server.errors import CommandError

LEVELS = {"error": MessageType.Error, "warning": MessageType.Warning, "info": MessageType.Info}
MAX_LINE = 16 * 1024
# pygls warnings that are no news to a user: a client's late answer after `shutdown`.
PYGLS_NOISE = frozenset({"Server shutting down. No more requests!"})


class LogBatcher:
    def __init__(
        self,
        send: Callable[[MessageType, str], None],
        *,
        delay: float = 0.0,
        max_message: int = 64 * 1024,
        max_per_flush: int = 1,
        max_backlog: int = 8 * 1024 * 1024,
    ) -> None:
        self._send = send
        self.delay = delay
        self.max_message = max_message
        self.max_per_flush = max_per_flush
        self.max_backlog = max_backlog
        self._queue: deque[tuple[MessageType, str]] = deque()
        self._queued_chars = 0
        self._dropped = 0
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self.sending = False  # true while a message is written (logging from it is ignored)
        self.closed = False

    def add(self, text: str, level: MessageType = MessageType.Info) -> None:
        """Queue one line (or several, joined by newlines); call on the event loop's thread.

        A line longer than ``MAX_LINE`` characters is cut (and says so); the others are kept
        whole, however many one call brings.
        """
        if self.closed:
            return
        if len(text) > MAX_LINE:
            text = _cap_lines(text)
        self._queue.append((level, text))
        self._queued_chars += len(text) + 1
        while self._queued_chars > self.max_backlog and len(self._queue) > 1:
            _, old = self._queue.popleft()
            self._queued_chars -= len(old) + 1
            self._dropped += old.count("\n") + 1
        self._schedule()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Remember the event loop (call from its thread) so other threads can log too."""
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def add_threadsafe(self, text: str, level: MessageType) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            if threading.get_ident() == self._loop_thread:
                self.add(text, level)
            else:
                loop.call_soon_threadsafe(self.add, text, level)
        except RuntimeError:  # the loop is closing
            pass

    def _schedule(self, delay: float | None = None) -> None:
        if self._handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (shutting down): flush() sends what is left
        self._handle = loop.call_later(self.delay if delay is None else delay, self._tick)

    def _tick(self) -> None:
        self._handle = None
        self.flush(self.max_per_flush)
        if self._queue:
            # What is left is a backlog (the tick sent all it may): it goes on at the loop's
            # next turn, after requests and agent output waiting meanwhile, not after a delay.
            self._schedule(0.0)

    def flush(self, max_messages: int | None = None) -> None:
        """Send queued lines now (all of them, or ``max_messages`` messages' worth)."""
        sent = 0
        if self._dropped:
            note = (
                f"[ralph: {self._dropped} log lines dropped:"
                " output came faster than it could be shown]"
            )
            self._dropped = 0
            self._emit(MessageType.Warning, note)
        while self._queue and (max_messages is None or sent < max_messages):
            level, first = self._queue.popleft()
            parts = [first]
            size = len(first)
            while self._queue:
                next_level, text = self._queue[0]
                if next_level != level or size + 1 + len(text) > self.max_message:
                    break
                self._queue.popleft()
                parts.append(text)
                size += 1 + len(text)
            self._queued_chars -= size + 1
            self._emit(level, "\n".join(parts))
            sent += 1
        if not self._queue:
            self._queued_chars = 0

    def _emit(self, level: MessageType, message: str) -> None:
        self.sending = True
        try:
            self._send(level, message)
        except Exception:  # the client is gone: nothing more to say
            self.closed = True
            self._queue.clear()
        finally:
            self.sending = False

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self.closed = True


def _cap_lines(text: str) -> str:
    """``text`` with each of its lines longer than ``MAX_LINE`` cut (and marked)."""
    # Look for a line too long by jumping from newline to newline at most MAX_LINE apart: a few
    # searches for a long text of ordinary lines, instead of splitting it.
    start = 0
    while len(text) - start > MAX_LINE:
        newline = text.rfind("\n", start, start + MAX_LINE + 1)
        if newline < 0:
            break
        start = newline + 1
    else:
        return text
    return "\n".join(_cap(line) for line in text.split("\n"))


def _cap(line: str) -> str:
    if len(line) <= MAX_LINE:
        return line
    return f"{line[:MAX_LINE]}… [{len(line) - MAX_LINE} more characters]"


class LspLogHandler(logging.Handler):
    """Python logging (warning and above) → the client's log, through the batcher."""

    def __init__(self, batcher: LogBatcher) -> None:
        super().__init__(logging.WARNING)
        self.batcher = batcher
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def filter(self, record: logging.LogRecord) -> bool:
        if self.batcher.sending or self.batcher.closed:
            return False  # a failure while writing to the client: do not write about it
        if record.name.startswith("pygls.") and record.msg in PYGLS_NOISE:
            return False
        exc = record.exc_info[1] if record.exc_info else None
        # pygls logs every error a command answers with; those are answers, not failures.
        return not isinstance(exc, CommandError)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
        except Exception:
            return
        level = MessageType.Error if record.levelno >= logging.ERROR else MessageType.Warning
        self.batcher.add_threadsafe(message, level)
