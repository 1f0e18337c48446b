"""``ralph.onRunEnd`` / ``--on-end CMD`` (SPEC §9): word when nobody watches.

When a run or a queue ends, the command is started (its argv already split like a shell line,
never run through a shell) in the OpenSpec root's folder with the end event as JSON on stdin.
It runs under a watchdog like an agent, for at most :data:`TIMEOUT` seconds; then its whole tree
is stopped. Whatever it does (fail to start, exit non-zero, hang) is said in the log and changes
nothing of the run or the queue.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ralph_lsp.proc.process import AgentProcess, AgentStartError, SpawnSpec
from ralph_lsp.runs.status import Level, RunStatus

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
