"""The server's lifetime: ``shutdown``, ``exit`` and a client that closes the pipe. Whatever
way the server ends, no agent process outlives it (SPEC §3, Stop)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading

from ralph_lsp.server.feed import RunFeed
from ralph_lsp.server.roots import RootWatch
from ralph_lsp.server.session import CLIENT_TIMEOUT, Session

log = logging.getLogger(__name__)

EXIT_GRACE = 3.0  # seconds for the runs to end after their agents were killed at exit
EXIT_DEADLINE = 8.0  # seconds after exit when the process ends, whatever still runs


class Lifetime:
    def __init__(self, session: Session, watch: RootWatch, feed: RunFeed) -> None:
        self.session = session
        self.watch = watch
        self.feed = feed
        self.shutdown_requested = False
        self._exited: threading.Event | None = None  # set once on_exit has ended every run

    async def on_shutdown(self) -> None:
        """Stop every run (each agent tree gone) and tell the client how they ended."""
        session = self.session
        session.stopping = True
        self.shutdown_requested = True
        self.watch.stop_watching()
        await session.engine.shutdown()  # runs in runners of their own go on: only detached
        self.feed.forget(session.engine.unfinished())
        try:
            await asyncio.wait_for(self.feed.all_reported(), CLIENT_TIMEOUT)
        except asyncio.TimeoutError:
            log.warning("the final run statuses could not all be sent before shutdown")
        session.logs.flush()

    async def on_exit(self) -> None:
        """``exit`` (with or without ``shutdown``) or the pipe closed: no agent may outlive us.

        Every agent tree is killed at once; then the runs are let to end while the event loop
        still runs, because ``asyncio.run`` cancelling them midway can wait forever. If the end
        still does not come, a deadline ends the process (the agents are dead by then).
        """
        if self._exited is not None:
            return  # already ending (exit, then the pipe closed)
        session = self.session
        self._exited = threading.Event()
        session.stopping = True
        session.engine.shutdown_now()
        self.watch.stop_watching()
        self._arm_exit_deadline()
        try:
            await asyncio.wait_for(session.engine.shutdown(), EXIT_GRACE)
        except Exception as exc:  # TimeoutError, or a run that failed to end cleanly
            log.warning("runs did not end cleanly at exit: %r", exc)
        finally:
            session.logs.flush()
            session.logs.close()
            self._exited.set()

    def _arm_exit_deadline(self) -> None:
        code = 0 if self.shutdown_requested else 1

        def force() -> None:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            os._exit(code)

        timer = threading.Timer(EXIT_DEADLINE, force)
        timer.daemon = True
        timer.start()

    def on_stdin_eof(self) -> None:
        """The client closed the pipe (called from pygls's reader thread): end every run on the
        event loop's thread, and return (so that pygls sees EOF) once that is done."""
        engine = self.session.engine
        loop = self.session.loop
        if loop is None or loop.is_closed():
            engine.shutdown_now()
            return
        if self._exited is not None:  # `exit` came first and is ending the runs
            if not self._exited.wait(EXIT_GRACE + 1):
                engine.shutdown_now()
            return
        done = threading.Event()

        async def end() -> None:
            try:
                await self.on_exit()
            finally:
                done.set()

        try:
            asyncio.run_coroutine_threadsafe(end(), loop)
        except RuntimeError:  # the loop is closing
            engine.shutdown_now()
            return
        if not done.wait(EXIT_GRACE + 1):
            engine.shutdown_now()
