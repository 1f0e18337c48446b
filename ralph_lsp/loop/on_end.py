"""``ralph.onRunEnd`` / ``--on-end CMD`` (SPEC §9): word when nobody watches.

A run's command is started by the engine that executed the run, once, as the run ends
(:class:`EndCommands`: ``loop/engine.py``'s ``Engine``, and ``remote/ray_runs.py``'s for a run
on Ray), whatever hosts the engine: the editor's server, a detached runner, the terminal. A
queue's command is started by the queue as it ends (``loop/queue.py``, through
:func:`queue_ended`), once its runs' commands have ended: runs first, then the queue. The host
awaits them (the engine's or the queue's ``ends_told``) before it exits.

When a run or a queue ends, the command is started (its argv already split like a shell line,
never run through a shell) in the OpenSpec root's folder with the end event as JSON on stdin.
It runs under a watchdog like an agent, for at most :data:`TIMEOUT` seconds; then its whole tree
is stopped. Whatever it does (fail to start, exit non-zero, hang) is said in the log and changes
nothing of the run or the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ralph_lsp.proc.process import AgentProcess, AgentStartError, SpawnSpec
from ralph_lsp.runs.status import EngineEvent, Level, LogEvent, RunStatus

#: Where an end command's word goes: (the run's final status, the text, its level).
Say = Callable[[RunStatus, str, Level], None]
#: Where a queue's end command's word goes: (the text, its level).
QueueSay = Callable[[str, Level], None]

TIMEOUT = 30.0
EVENT_VERSION = 1
_TAIL_LINES = 5


def run_end_event(status: RunStatus) -> dict[str, Any]:
    """A run's ``end`` event (the runner's event schema, SPEC §9)."""
    return {
        "v": EVENT_VERSION,
        "type": "end",
        "kind": "run",
        "state": str(status.state),
        "reason": status.reason,
        "status": status.to_json(),
    }


def queue_end_event(queue: Mapping[str, Any]) -> dict[str, Any]:
    """A queue's ``end`` event: its state, reason and every change's outcome."""
    return {
        "v": EVENT_VERSION,
        "type": "end",
        "kind": "queue",
        "state": queue.get("state"),
        "reason": queue.get("reason"),
        "queue": dict(queue),
    }


async def notify(
    argv: Sequence[str] | None,
    event: Mapping[str, Any],
    cwd: Path,
    log: Callable[[str, Level], None],
    *,
    timeout: float = TIMEOUT,
    env: Mapping[str, str] | None = None,
) -> int | None:
    """Run ``argv`` with ``event`` on stdin; its exit code (None: it did not start or hung).
    Never raises: the end of a run is already decided."""
    if not argv:
        return None
    line = " ".join(argv)
    data = (json.dumps(event, ensure_ascii=False) + "\n").encode()
    spec = SpawnSpec(list(argv), cwd, dict(env if env is not None else os.environ), data)
    try:
        proc = await AgentProcess.start(spec)
    except (AgentStartError, OSError, ValueError) as exc:  # nothing here may break an end
        log(f"onRunEnd: {line} could not start: {exc}", "warning")
        return None
    tail: list[str] = []

    async def pump() -> None:
        async for _stream, lines in proc.batches():
            tail.extend(lines)
            del tail[:-_TAIL_LINES]

    reader = asyncio.ensure_future(pump())
    try:
        code = await asyncio.wait_for(proc.wait(), timeout)
    except asyncio.TimeoutError:
        await proc.terminate(2.0)
        log(f"onRunEnd: {line} did not end within {timeout:g}s; stopped it", "warning")
        return None
    finally:
        await asyncio.wait({reader}, timeout=2)
        reader.cancel()
    if code != 0:
        said = f": {' | '.join(tail)}" if tail else ""
        log(f"onRunEnd: {line} exited {code}{said}", "warning")
    else:
        log(f"onRunEnd: {line} ran", "info")
    return code


class EndCommands:
    """The ``onRunEnd`` commands of the runs one engine executes: each started as its run ends
    (once per run), all awaited by :meth:`settled` (the engine's ``ends_told``). ``say`` may be
    replaced by the host (the terminal sends the word to stderr, after the final line)."""

    def __init__(self, emit: Callable[[EngineEvent], None]) -> None:
        # the word goes to the run's log by default (``emit``: the engine's events)
        self.say: Say = lambda status, text, level: emit(
            LogEvent(status.root, status.change, text, level)
        )
        self._told: set[str] = set()
        self._running: set[asyncio.Task[Any]] = set()

    def run_ended(self, argv: Sequence[str] | None, status: RunStatus) -> None:
        if not argv or status.run_id in self._told:
            return
        self._told.add(status.run_id)

        def said(text: str, level: Level) -> None:
            self.say(status, text, level)

        task = asyncio.ensure_future(notify(argv, run_end_event(status), status.root, said))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def settled(self) -> None:
        """Once every command started has ended (each is bounded by :data:`TIMEOUT`)."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)


def queue_ended(
    argv: Sequence[str] | None,
    queue: Mapping[str, Any],
    root: Path,
    say: QueueSay,
    runs_first: Callable[[], Awaitable[None]],
) -> asyncio.Task[None] | None:
    """Start a queue's command as the queue ends (``queue``: its final status), once its runs'
    commands have ended (``runs_first``: its run service's ``ends_told``); None without one."""
    if not argv:
        return None
    event = queue_end_event(queue)

    async def tell() -> None:
        with contextlib.suppress(Exception):  # a run's command must not keep the queue's back
            await runs_first()
        await notify(argv, event, root, say)

    return asyncio.ensure_future(tell())
