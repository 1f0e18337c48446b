"""The watchdog's spawn runs in a thread (``proc/process.py`` ``_popen``): ``Popen`` waits
until the child has exec'd, which on a loaded machine took long enough to hold the event loop
(every other run, every request). Here ``Popen`` is slowed as such a machine slows it; the
loop goes on meanwhile, and a start cancelled meanwhile leaves no watchdog behind."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.proc.process import AgentProcess, SpawnSpec

SLOW_SPAWN = 0.3  # seconds before the child is made


@pytest.fixture
def slow_popen(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    """``subprocess.Popen`` starting :data:`SLOW_SPAWN` late; the processes it made."""
    real, made = subprocess.Popen, []

    def popen(*args: Any, **kw: Any) -> subprocess.Popen[bytes]:
        time.sleep(SLOW_SPAWN)
        made.append(real(*args, **kw))
        return made[-1]

    monkeypatch.setattr(subprocess, "Popen", popen)
    return made


async def test_a_slow_spawn_does_not_hold_the_event_loop(
    agent_env: dict[str, str], tmp_path: Path, slow_popen: list[subprocess.Popen[bytes]]
) -> None:
    lags: list[float] = []
    started = asyncio.Event()

    async def ticker() -> None:
        while not started.is_set():
            t0 = time.monotonic()
            await asyncio.sleep(0.005)
            lags.append(time.monotonic() - t0 - 0.005)

    ticking = asyncio.create_task(ticker())
    spec = SpawnSpec([sys.executable, "-c", "print('hi')"], tmp_path, agent_env, None)
    proc = await AgentProcess.start(spec)
    started.set()
    await ticking
    assert [line async for line in proc.lines()] == [("stdout", "hi")]
    assert await proc.wait() == 0
    assert len(lags) >= 10 and max(lags) < SLOW_SPAWN / 2, sorted(lags)[-3:]


async def test_a_start_cancelled_during_its_spawn_leaves_no_watchdog(
    agent_env: dict[str, str], tmp_path: Path, slow_popen: list[subprocess.Popen[bytes]]
) -> None:
    spec = SpawnSpec(
        [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path, agent_env, None
    )
    starting = asyncio.create_task(AgentProcess.start(spec))
    await asyncio.sleep(SLOW_SPAWN / 3)
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    deadline = time.monotonic() + 10
    while not (slow_popen and slow_popen[0].returncode is not None):
        assert time.monotonic() < deadline, "the watchdog of a cancelled start is still alive"
        await asyncio.sleep(0.05)
