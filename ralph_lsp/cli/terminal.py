"""Engine events rendered to a terminal: log lines scroll, a status line stays at the bottom."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from typing import Any, TextIO


def bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


COLOURS = {  # the status line's colour by state, on a terminal
    "running": "\x1b[36m",
    "succeeded": "\x1b[32m",
    "stuck": "\x1b[33m",
    "exhausted": "\x1b[33m",
    "failed": "\x1b[31m",
    "stopped": "\x1b[35m",
}


def status_text(st: Any, elapsed: bool = True) -> str:
    """``[####....] 3/8 tasks · iteration 2/20 · running · 1m05s · $0.1234``."""
    from datetime import datetime, timezone

    doing = str(st.state)
    if st.phase == "waiting" and st.waiting:
        doing = "waiting for the network" if st.waiting.get("kind") == "network" else "rate limited"
    elif st.phase == "verifying":
        doing = "verifying"
    try:
        started = datetime.fromisoformat(str(st.started_at).replace("Z", "+00:00"))
        seconds = max(0, int((datetime.now(timezone.utc) - started).total_seconds()))
    except ValueError:
        seconds = 0
    text = (
        f"{bar(st.completed, st.total)} {st.completed}/{st.total} tasks"
        f" · iteration {st.iteration}/{st.max_iterations} · {doing}"
    )
    if elapsed:
        text += f" · {seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f" · {seconds}s"
    if st.cost_usd:
        text += f" · ${st.cost_usd:.4f}" + (" (estimate)" if st.cost_estimated else "")
    return text


class Renderer:
    """Engine events → a terminal: log lines scroll, a status line stays at the bottom.

    When standard output is closed (``ralph-lsp run … | head``), ``on_closed`` is called once
    and nothing more is written: the run is stopped quietly, with no traceback.
    """

    def __init__(self, out: TextIO, on_closed: Callable[[], None] = lambda: None) -> None:
        self.out = out
        self.tty = out.isatty()
        self.status_line = ""
        self.closed = False
        self._on_closed = on_closed
        self._last: Any = None
        self._prefix = ""

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in (errno.EPIPE, errno.EBADF, None):
                raise
            self._close()

    def close(self) -> None:
        """Nobody reads ``out`` any more: write nothing more, and say so (once)."""
        if not self.closed:
            self._close()

    def _close(self) -> None:
        self.closed = True
        # Python flushes stdout again at exit: point it at /dev/null so that cannot fail.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.out.fileno())
            os.close(devnull)
        self._on_closed()

    def _redraw(self, text: str) -> None:
        """``text`` (whole lines, or nothing) above the status line."""
        clear = "\r\x1b[2K" if self.tty and self.status_line else ""
        self._write(clear + text + (self.status_line if self.tty else ""))

    def line(self, text: str) -> None:
        self._redraw(text + "\n")

    def status(self, st: Any, prefix: str = "") -> None:
        """``prefix``: what names the run among several (a queue's ``change 2/3 · ``)."""
        from ralph_lsp.loop.engine import RunStatus

        assert isinstance(st, RunStatus)
        self._last = st
        self._prefix = prefix
        text = prefix + status_text(st, elapsed=self.tty)  # plain lines: only on a change
        if self.tty:
            self.status_line = self._fit(text, st.state)
            self._redraw("")
        elif text != self.status_line:
            self.status_line = text
            self._write(f"[ralph] {text}\n")

    def tick(self) -> None:
        """Redraw the status line (its elapsed time) on a terminal."""
        if self.tty and self._last is not None and self.status_line:
            self.status(self._last, self._prefix)

    def _fit(self, text: str, state: str) -> str:
        """The status line cut to the terminal's width (a wrapped line leaves stale copies
        behind), coloured unless NO_COLOR is set."""
        try:
            width = os.get_terminal_size(self.out.fileno()).columns
        except (OSError, ValueError):
            width = 80
        if len(text) > width - 1:
            text = text[: max(0, width - 2)] + "…"
        if os.environ.get("NO_COLOR") or not text:
            return text
        return f"{COLOURS.get(state, '')}{text}\x1b[0m"

    def done(self, final: str) -> None:
        """Clear the status line and print the final ``<state>: <reason>`` line, once."""
        clear = "\r\x1b[2K" if self.tty and self.status_line else ""
        self.status_line = ""
        self._write(clear + final + "\n")
