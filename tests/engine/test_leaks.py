"""What held up in the review stays held up: many iterations and many runs in one process leave
no file descriptor and no zombie behind (the server lives for days)."""

from __future__ import annotations

import asyncio
import gc
import os
import tracemalloc
from pathlib import Path

import pytest

from ralph_lsp.loop.engine import Engine
from ralph_lsp.runs.events import IterationEvent
from ralph_lsp.runs.history import load_records
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings
from tests.engine.conftest import CHANGE

# Soaks (fifty iterations then forty runs; forty iterations traced), about 12 s each: they run
# with the full suite (`make test`), not in the inner loop.
pytestmark = pytest.mark.slow

# An agent that says something and checks nothing, as cheap as a spawn gets.
IDLE = Settings(
    agent="custom",
    agent_command=("/bin/sh", "-c", "echo thinking; cat >/dev/null"),
    verify_when="off",
    checkpoints=False,
)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def children() -> set[int]:
    """This process's children, alive or not."""
    return {pid for pid, state in _child_states()}


def zombies() -> list[int]:
    """Children of this process that have exited and were never reaped."""
    return [pid for pid, state in _child_states() if state == "Z"]


def _child_states() -> list[tuple[int, str]]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            found.append((int(entry), fields[0]))
    return found


async def run(engine: Engine, project: Path, settings: Settings = IDLE, **kw: object) -> str:
    await engine.start(project, CHANGE, settings, RunRequest(**kw))  # type: ignore[arg-type]
    status = await asyncio.wait_for(engine.wait(project, CHANGE), 120)
    return status.state


async def test_fifty_iterations_then_forty_runs_leave_no_fd_or_zombie(project: Path) -> None:
    engine = Engine()
    assert await run(engine, project, max_iterations=2) == "exhausted"  # warm up lazy imports
    fds = open_fds()
    # A process an earlier test in this pytest process left behind (a cancelled run's watchdog
    # finishing its own grace) may end meanwhile; only children born here count.
    earlier = children()
    fifty = IDLE.replace(max_iterations=50, stuck_after=50)
    assert await run(engine, project, fifty) == "stuck"  # after the 50th
    for _ in range(40):  # a run each: the change claim, the history folder, the record
        assert await run(engine, project, max_iterations=1) == "exhausted"
    await asyncio.sleep(0.2)
    assert [pid for pid in zombies() if pid not in earlier] == []
    assert open_fds() <= fds + 2, f"{open_fds() - fds} more open file descriptors"


async def test_a_long_run_keeps_no_more_in_memory_for_each_iteration(project: Path) -> None:
    """Issue: a 1000-iteration run grew its process by ~5 KiB an iteration, its record's lists
    (iterations, transitions, raw-log bookkeeping) all held in memory. Now the older entries
    live on disk: what the run's own code keeps between iteration 10 and 40 stays flat, while
    the record on disk has every iteration."""
    snapshots: dict[int, tracemalloc.Snapshot] = {}

    def on_event(event: object) -> None:
        if isinstance(event, IterationEvent) and event.phase == "end" and event.n in (10, 40):
            gc.collect()
            snapshots[event.n] = tracemalloc.take_snapshot()

    engine = Engine(on_event)
    assert await run(engine, project, max_iterations=2) == "exhausted"  # warm up lazy imports
    forty = IDLE.replace(max_iterations=40, stuck_after=50)
    tracemalloc.start(25)
    try:
        assert await run(engine, project, forty) == "exhausted"
    finally:
        tracemalloc.stop()
    # Not asyncio's own: a cancelled timer (each spawn's start timeout) stays in the loop's heap
    # until its time comes, whoever set it; the slower a spawn (sandboxed), the more are there.
    mine = [
        tracemalloc.Filter(True, "*/ralph_lsp/*", all_frames=True),
        tracemalloc.Filter(False, "*/asyncio/*"),
    ]
    before, after = (snapshots[n].filter_traces(mine) for n in (10, 40))
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # 30 iterations: the old lists held ~1.7 KiB an iteration (~50 KiB); 4-17 KiB now, the
    # ledgers' bounded windows of recent entries filling (more of them sandboxed, and more under
    # load, where phases change more often): 24 KiB keeps half the old growth as margin.
    assert grown < 24 * 1024, f"{grown / 1024:.1f} KiB kept for 30 iterations"
    newest = load_records(project, CHANGE)[0]
    assert [it["n"] for it in newest["iterations"]] == list(range(1, 41))
    assert sum(t["reason"].startswith("iteration ") for t in newest["transitions"]) == 40
