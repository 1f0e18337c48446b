"""Stopping agents: no process of the tree may survive a stop, an exit, or the engine's death."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from proc_helpers import alive, read_pids

from ralph_lsp.proc.process import AgentProcess, SpawnSpec, kill_all_now

# Once per process inspection (linux, portable): see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("inspection")


async def wait_for_line(proc: AgentProcess, wanted: str) -> None:
    async for _stream, line in proc.lines():
        if line == wanted:
            return
    raise AssertionError(f"the agent ended without printing {wanted!r}")


async def start_stubborn(spec: Callable[..., SpawnSpec], pid_file: Path) -> AgentProcess:
    proc = await AgentProcess.start(spec("ignore_sigterm_with_children.py"))
    await asyncio.wait_for(wait_for_line(proc, "ready"), 10)
    assert len(read_pids(pid_file)) == 3
    return proc


def assert_all_gone(pids: list[int]) -> None:
    assert pids
    assert [pid for pid in pids if alive(pid)] == []


async def test_cooperative_agent_stops_fast(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("sleep_forever.py"))
    await asyncio.sleep(0.2)  # let it get to its sleep
    started = time.monotonic()
    code = await proc.terminate(5.0)
    elapsed = time.monotonic() - started
    assert code == -signal.SIGTERM
    assert elapsed < 2.0, elapsed  # ~20 ms here; a default SIGTERM does not wait for the grace
    assert not alive(proc.pid)


async def test_stubborn_tree_is_killed_after_grace(
    spec: Callable[..., SpawnSpec], pid_file: Path
) -> None:
    proc = await start_stubborn(spec, pid_file)
    started = time.monotonic()
    code = await proc.terminate(1.0)
    elapsed = time.monotonic() - started
    assert code == -signal.SIGKILL
    assert 0.9 < elapsed < 3.0, elapsed  # the grace is honoured, then SIGKILL ends it
    assert_all_gone([*read_pids(pid_file), proc.watchdog_pid])


async def test_terminate_is_idempotent_and_concurrent(
    spec: Callable[..., SpawnSpec], pid_file: Path
) -> None:
    proc = await start_stubborn(spec, pid_file)
    codes = await asyncio.gather(proc.terminate(0.3), proc.terminate(0.3), proc.wait())
    assert codes == [-signal.SIGKILL] * 3
    assert await proc.terminate(0.3) == -signal.SIGKILL
    proc.kill_now()  # harmless after the end
    assert_all_gone(read_pids(pid_file))


async def test_terminate_after_exit_returns_the_exit_code(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("crash.py", "exit", "7"))
    assert await proc.wait() == 7
    assert await proc.terminate(1.0) == 7


async def test_zero_grace_kills_at_once(spec: Callable[..., SpawnSpec], pid_file: Path) -> None:
    proc = await start_stubborn(spec, pid_file)
    started = time.monotonic()
    await proc.terminate(0)
    assert time.monotonic() - started < 2.0  # ~15 ms here: no grace, straight to SIGKILL
    assert_all_gone(read_pids(pid_file))


async def test_escaped_grandchild_holding_stdout_does_not_hang(
    spec: Callable[..., SpawnSpec], pid_file: Path
) -> None:
    proc = await AgentProcess.start(spec("exit_leaving_child.py"))

    async def read_all() -> list[str]:
        return [line async for _stream, line in proc.lines()]

    lines, code = await asyncio.wait_for(asyncio.gather(read_all(), proc.wait()), 3.0)
    assert code == 0
    assert "agent done" in lines
    assert_all_gone(read_pids(pid_file))


async def test_wait_does_not_need_the_output_read(
    spec: Callable[..., SpawnSpec], pid_file: Path
) -> None:
    proc = await AgentProcess.start(spec("exit_leaving_child.py"))
    assert await asyncio.wait_for(proc.wait(), 3.0) == 0
    assert_all_gone(read_pids(pid_file))
    await proc.aclose()


async def test_kill_now_is_synchronous_and_total(
    spec: Callable[..., SpawnSpec], pid_file: Path
) -> None:
    proc = await start_stubborn(spec, pid_file)
    proc.kill_now()
    # The tree was SIGKILLed before kill_now returned; the watchdog only reaps and reports.
    assert_all_gone(read_pids(pid_file))
    assert await asyncio.wait_for(proc.wait(), 3.0) == -signal.SIGKILL


async def test_kill_all_now_covers_every_live_agent(
    spec: Callable[..., SpawnSpec], pid_file: Path
) -> None:
    procs = [await AgentProcess.start(spec("sleep_forever.py")) for _ in range(3)]
    kill_all_now()
    assert_all_gone([proc.pid for proc in procs])
    for proc in procs:
        assert await asyncio.wait_for(proc.wait(), 3.0) == -signal.SIGKILL


async def test_watchdog_ignores_sigint(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("sleep_forever.py"))
    os.kill(proc.watchdog_pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    await asyncio.sleep(0.3)
    assert alive(proc.watchdog_pid) and alive(proc.pid)
    await proc.terminate(1.0)


async def test_sigterm_to_the_watchdog_stops_the_tree(
    spec: Callable[..., SpawnSpec], pid_file: Path
) -> None:
    proc = await start_stubborn(spec, pid_file)
    os.kill(proc.watchdog_pid, signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 5.0) == -signal.SIGKILL
    assert_all_gone(read_pids(pid_file))


async def test_watchdog_killed_outright(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("sleep_forever.py"))
    os.kill(proc.watchdog_pid, signal.SIGKILL)
    # The engine notices and ends the agent's session itself.
    assert await asyncio.wait_for(proc.wait(), 3.0) == -signal.SIGKILL
    assert not alive(proc.pid)


@pytest.mark.parametrize("target", ["process", "process_group"])
def test_sigkill_of_the_engine_leaves_nothing(
    agent_env: dict[str, str], pid_file: Path, target: str
) -> None:
    driver = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("engine_driver.py"))],
        stdout=subprocess.PIPE,
        env=agent_env,
        cwd=pid_file.parent,
        start_new_session=True,  # so that killing its group spares pytest
    )
    try:
        assert driver.stdout is not None
        watchdog_pid, agent_pid = map(int, driver.stdout.readline().split())
        pids = [watchdog_pid, *read_pids(pid_file)]
        assert agent_pid in pids and len(pids) == 4
        assert all(alive(pid) for pid in pids)
    finally:
        if target == "process_group":  # as a terminal or a supervisor killing the whole job
            os.killpg(driver.pid, signal.SIGKILL)
        else:
            driver.kill()
        driver.wait()
    killed = time.monotonic()
    while any(alive(pid) for pid in pids) and time.monotonic() - killed < 2.0:
        time.sleep(0.02)
    assert_all_gone(pids)  # within 2 s of the SIGKILL (SPEC §3)


def test_engine_exiting_without_stopping_leaves_nothing(
    agent_env: dict[str, str], pid_file: Path
) -> None:
    driver = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("engine_driver.py")), "return"],
        stdout=subprocess.PIPE,
        env=agent_env,
        cwd=pid_file.parent,
    )
    assert driver.stdout is not None
    watchdog_pid, _agent_pid = map(int, driver.stdout.readline().split())
    pids = [watchdog_pid, *read_pids(pid_file)]
    assert driver.wait(timeout=10) == 0
    ended = time.monotonic()
    while any(alive(pid) for pid in pids) and time.monotonic() - ended < 2.0:
        time.sleep(0.02)
    assert_all_gone(pids)


async def test_engine_with_many_open_files(spec: Callable[..., SpawnSpec]) -> None:
    # A long-running server may hold more than FD_SETSIZE (1024) descriptors; the pipes to the
    # watchdog then get numbers select() cannot watch.
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("cannot open more than 1200 files here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    padding = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        proc = await AgentProcess.start(spec("sleep_forever.py"))
    finally:
        for fd in padding:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    await asyncio.sleep(0.3)
    assert alive(proc.watchdog_pid) and alive(proc.pid)
    assert await proc.terminate(1.0) == -signal.SIGTERM
