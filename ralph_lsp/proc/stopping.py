"""Stopping an agent's whole tree: through its watchdog when it can, by signals to its session,
its process group and every tagged or re-parented orphan when it must; and at this process's
exit, every tree it still has (``kill_all_now``)."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import subprocess
import time
import weakref

from ralph_lsp.proc import inspection, tree

log = logging.getLogger(__name__)


STOP_MARGIN = tree.KILL_CAP + 5.0


live: weakref.WeakSet[TreeStopping] = weakref.WeakSet()


def kill_all_now() -> None:
    """SIGKILL every agent tree this process still has running (for atexit and signal handlers)."""
    for proc in list(live):
        proc.kill_now()


atexit.register(kill_all_now)


def kill_watchdog(
    popen: subprocess.Popen[bytes],
    control: int,
    status: asyncio.BaseTransport,
    stdin_w: int | None,
) -> None:
    """Clean up after a start that failed: the watchdog may have started nothing, or hung."""
    tree.signal_tree(popen.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        popen.kill()
    popen.wait()
    for fd in (control, stdin_w):
        if fd is not None:
            os.close(fd)
    status.close()
    for pipe in (popen.stdout, popen.stderr):
        if pipe is not None:
            pipe.close()


async def reap(popen: subprocess.Popen[bytes]) -> None:
    delay = 0.001
    for _ in range(200):
        if popen.poll() is not None:
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
    popen.kill()
    await asyncio.to_thread(popen.wait)


_subreaper = False


def become_subreaper() -> None:
    """Make this process a child subreaper (once): should a watchdog be killed, its agent's
    offspring re-parent here instead of to init, where :func:`end_orphans` finds them."""
    global _subreaper
    if not _subreaper:
        _subreaper = tree.become_subreaper()


def kill_tagged(tag: str) -> None:
    """SIGKILL every process carrying the tree ``tag``, until none has shown in any scan for
    0.3 s (at most 2 s): one empty scan proves nothing against a process that hops pids. The
    world is stopped first (``tree.stop_the_world``): each one found is SIGSTOPped at once,
    so that it cannot fork while the scans go on."""
    if tag:
        tree.stop_the_world(tag, cap=2.0)
    quiet = time.monotonic()
    deadline = quiet + 2.0
    while tag and time.monotonic() < deadline and time.monotonic() - quiet < 0.3:
        proc = inspection.current()
        found = proc.tagged(tag)
        if found:
            quiet = time.monotonic()
        for pid in found:
            stat = proc.stat(pid)
            with contextlib.suppress(OSError):
                if stat is not None and stat.pgid > 1 and stat.pgid != os.getpgrp():
                    os.killpg(stat.pgid, signal.SIGKILL)  # a child it just forked, too
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


async def end_orphans(since: float | None) -> None:
    """SIGKILL (and reap) what a dead watchdog's tree left: processes that re-parented to this
    process (a subreaper) and started after that watchdog, with their descendants. Live
    watchdogs are kept. Looked for until none has turned up for 0.3 s (at most 2 s), since
    each killed parent hands its children over in turn."""
    if not _subreaper or inspection.choice() != "linux":
        return
    me = os.getpid()
    start_time = inspection.current().start_time
    quiet = time.monotonic()
    deadline = quiet + 2.0
    while time.monotonic() < deadline and time.monotonic() - quiet < 0.3:
        keep = {p.watchdog_pid for p in live}
        table = tree.process_table()
        mine = [pid for pid, st in table.items() if st[1] == me and pid not in keep]
        mine = [pid for pid in mine if since is None or (start_time(pid) or since) >= since]
        for pid in mine:
            if table[pid][0] != "Z":
                quiet = time.monotonic()
                tree.signal_tree(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        await asyncio.sleep(0.02)


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (the agent's, since it was started with setsid)."""
    for _ in range(20):
        table = tree.process_table()
        members = [pid for pid, stat in table.items() if stat[3] == sid and stat[0] != "Z"]
        if not members:
            return
        for pid in members:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


class TreeStopping:
    """The stopping half of an ``AgentProcess``."""

    pid: int
    watchdog_pid: int
    tag: str
    _popen: subprocess.Popen[bytes]
    _control: int | None
    _exit_code: int | None
    _done: asyncio.Future[int]
    _discard: bool
    _tasks: list[asyncio.Task[None]]
    _transports: list[asyncio.BaseTransport]

    async def terminate(self, grace: float) -> int:
        """SIGTERM the tree, SIGKILL whatever is left after ``grace`` seconds; returns the exit
        code once every process of the tree is gone. Idempotent; safe concurrently and after exit.
        """
        if not self._done.done():
            self._send(f"stop {max(0.0, grace):.3f}")
            try:
                await asyncio.wait_for(asyncio.shield(self._done), max(0.0, grace) + STOP_MARGIN)
            except asyncio.TimeoutError:
                log.error("watchdog %d did not end agent %d in time; killing", *self._pids())
                self.kill_now()
                with contextlib.suppress(ProcessLookupError):
                    self._popen.kill()
                await asyncio.shield(self._done)
        return self._done.result()

    def kill_now(self) -> None:
        """Synchronous, best effort: SIGKILL the agent and every descendant of the watchdog.

        For atexit and signal handlers. The watchdog is left alive to reap the tree: closing the
        control pipe tells it to finish and exit.
        """
        if self._done.done():
            return
        for _ in range(20):
            found = tree.signal_tree(
                self.watchdog_pid, signal.SIGKILL, self._agent_group(), self.tag
            )
            if not found:
                break
        self._close_control()

    async def aclose(self, grace: float = 0.0) -> None:
        """Stop the tree if it still runs, then stop reading and release every pipe."""
        await self.terminate(grace)
        self._discard = True
        for task in self._tasks:
            task.cancel()
        for transport in self._transports:
            transport.close()

    def _agent_group(self) -> tuple[int, ...]:
        # Only used without /proc. The agent may already be reaped (its exit not yet read
        # here), so its pid could in theory be reused; without /proc there is no better guess.
        return (self.pid,) if self._exit_code is None else ()

    def _pids(self) -> tuple[int, int]:
        return self.watchdog_pid, self.pid

    def _send(self, command: str) -> None:
        if self._control is None:
            return
        try:
            os.write(self._control, command.encode() + b"\n")
        except OSError:  # the watchdog is gone; _follow_status finishes up
            pass

    def _close_control(self) -> None:
        if self._control is not None:
            fd, self._control = self._control, None
            with contextlib.suppress(OSError):
                os.close(fd)
