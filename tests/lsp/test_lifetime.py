"""No agent outlives the server, however the editor leaves; a log flood never starves requests."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path

from tests.lsp.conftest import CHANGE, Session, StartSession, exited, pid_alive, wait_until
from tests.tags import running, scratch

SLEEPER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"


async def start_sleeping_run(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> tuple[Session, list[int]]:
    """A run whose agent sleeps; the host's pids of the agent and of the sandbox around it
    (found by the test's tag: the pid the agent writes is its PID namespace's)."""
    pidfile = scratch(workspace) / "agent.pid"
    agent = [sys.executable, "-c", SLEEPER, str(pidfile)]
    s = await start_session(workspace, settings={"agent": "custom", "agentCommand": agent})
    await s.command("ralph.run", {"change": CHANGE})
    await wait_until(lambda: pidfile.exists() and pidfile.read_text(), what="the agent's pid")
    pids = running(str(pidfile))
    assert pids and all(map(pid_alive, pids))
    return s, pids


async def test_stdin_closed_without_shutdown_leaves_no_agent(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    s, pids = await start_sleeping_run(start_session, workspace, tmp_path)
    assert s.process.stdin is not None
    s.process.stdin.close()
    await wait_until(lambda: not any(map(pid_alive, pids)), timeout=2, what="the agent to be gone")
    await exited(s)


async def test_exit_without_shutdown_leaves_no_agent(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    s, pids = await start_sleeping_run(start_session, workspace, tmp_path)
    s.client.exit(None)
    await wait_until(lambda: not any(map(pid_alive, pids)), timeout=2, what="the agent to be gone")
    assert await exited(s) == 1  # exit without shutdown


async def test_shutdown_stops_the_run_and_reports_it(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    s, pids = await start_sleeping_run(start_session, workspace, tmp_path)
    await asyncio.wait_for(s.client.shutdown_async(None), 15)
    assert not any(map(pid_alive, pids))
    assert s.statuses[-1]["state"] == "stopped"
    [(_, values)] = s.client.progress_reports.items()
    assert values[-1].kind == "end"
    s.client.exit(None)
    assert await exited(s) == 0


async def test_sigterm_leaves_no_agent(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    s, pids = await start_sleeping_run(start_session, workspace, tmp_path)
    s.process.send_signal(signal.SIGTERM)
    await wait_until(lambda: not any(map(pid_alive, pids)), timeout=2, what="the agent to be gone")
    await exited(s)


FLOOD = """\
import sys, time
out = sys.stdout
for i in range(100_000):
    out.write(f"flood line {i}\\n")
out.flush()
time.sleep(60)
"""


async def test_a_log_flood_is_batched_and_requests_stay_quick(
    start_session: StartSession, workspace: Path
) -> None:
    agent = [sys.executable, "-c", FLOOD]
    s = await start_session(workspace, settings={"agent": "custom", "agentCommand": agent})
    await s.command("ralph.run", {"change": CHANGE})
    latencies = []
    deadline = time.monotonic() + 30

    def last_log() -> str:
        return s.client.log_messages[-1].message if s.client.log_messages else ""

    while "flood line 99999" not in last_log():
        assert time.monotonic() < deadline, "the flood never fully arrived"
        start = time.monotonic()
        await s.command("ralph.status", {"change": CHANGE})
        latencies.append(time.monotonic() - start)
        await asyncio.sleep(0.005)
    assert latencies, "no request was made during the flood"
    assert max(latencies) < 1.0, latencies
    log = s.logs()
    assert log.count("flood line ") == 100_000 or "log lines dropped" in log
    assert len(s.client.log_messages) < 2_000  # batched, not one message per line
    assert all(len(m.message) <= 70 * 1024 for m in s.client.log_messages)
    stopped = await s.command("ralph.stop", {"change": CHANGE})
    assert stopped["state"] == "stopped"
