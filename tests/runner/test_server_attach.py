"""Runs that outlive the editor, through a real language server (pytest-lsp) and real runners:
the run goes on when its server is SIGKILLed, the next server attaches to it within a second and
follows it live, stops it with nothing left behind, and a run that ended unwatched is told once.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from ralph_lsp.runner.live import find_live
from tests.conftest import alive
from tests.lsp.conftest import CHANGE, Session, StartSession, wait_until
from tests.runner.conftest import children_of, cli, wait_for

# A real language server and real runners, as tests/lsp (outside the unit tests): about 30 s in
# all, one test 15 s by design (two iterations of 3 s a task). The full suite runs them.
pytestmark = pytest.mark.slow

RUNNER = {"runsOutliveEditor": True, "agent": "demo", "verifyWhen": "off", "checkpoints": False}
DETACHED = ("--detach", "--agent", "demo", "--verify-when", "off", "--no-checkpoints")


def of_run(session: Session, run_id: str) -> list[dict[str, Any]]:
    return [s for s in session.statuses if s["runId"] == run_id]


def top_lens(lenses: list[tuple[int, str, str, Any]]) -> str:
    return next(title for line, title, _, _ in lenses if line == 0)


async def test_a_run_outlives_its_server_and_the_next_server_follows_and_stops_it(
    workspace: Path, start_session: StartSession, runtime_dir: Path
) -> None:
    slow = {"RALPH_DEMO_DELAY": "0.6"}
    first = await start_session(workspace, settings=RUNNER, env=slow)
    started = await first.command("ralph.run", {"change": CHANGE})
    run_id = started["runId"]
    await wait_until(
        lambda: any(s["iteration"] >= 1 for s in of_run(first, run_id)), what="iteration 1"
    )
    first.process.kill()  # the editor's server dies, with no shutdown
    await first.process.wait()
    [live] = find_live(workspace)
    assert live.run_id == run_id and alive(live.pid)

    second = await start_session(workspace, settings=RUNNER, env=slow)
    ready = time.monotonic()
    await wait_until(
        lambda: any(s["state"] == "running" for s in of_run(second, run_id)),
        timeout=1.0,
        what="the live run's status from the new server",
    )
    took = time.monotonic() - ready
    # The lens follows tasks.md live: the count of checked tasks grows on it.
    before = top_lens(await second.lenses())
    assert before.startswith("■ Stop · iteration"), before

    async def moved() -> bool:
        return top_lens(await second.lenses()) != before

    deadline = time.monotonic() + 20
    while not await moved():
        assert time.monotonic() < deadline, "the lens did not follow the run"
    tree = [live.pid, *children_of(live.pid)]
    stopped = await second.command("ralph.stop", {"change": CHANGE})
    assert stopped["state"] == "stopped"
    await wait_until(
        lambda: not any(alive(p) for p in tree), timeout=5, what="every process of the run to end"
    )
    assert find_live(workspace) == []
    assert took < 1.0


async def test_detach_from_the_cli_attach_from_the_server_guide_from_another_cli(
    workspace: Path, start_session: StartSession, runtime_dir: Path
) -> None:
    # 3 s a task: iteration 1 (three tasks) surely outlasts the server's start and the guide,
    # even on a loaded machine, so the guidance lands in iteration 2's prompt.
    env = {"RALPH_DEMO_DELAY": "3"}
    started = cli(
        "run",
        CHANGE,
        "--root",
        str(workspace),
        "--detach",
        "--agent",
        "demo",
        "--verify-when",
        "off",
        "--no-checkpoints",
        "--env",
        "RALPH_DEMO_DELAY=3",
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    session = await start_session(workspace, settings=RUNNER, env=env)
    await wait_until(lambda: of_run(session, run_id), timeout=15, what="the attached status")
    assert not any(s["iteration"] >= 2 for s in of_run(session, run_id)), "guided too late"
    guided = cli("guide", CHANGE, "Name things plainly", "--root", str(workspace))
    assert guided.returncode == 0, guided.stderr
    await wait_until(
        lambda: any(s["iteration"] >= 2 for s in of_run(session, run_id)),
        timeout=45,
        what="iteration 2",
    )
    prompt = workspace / ".ralph" / "runs" / run_id / "prompt-2.md"
    # the status says iteration 2 as it begins, a moment before its prompt file is written
    await wait_until(prompt.exists, timeout=10, what="iteration 2's prompt file")
    assert "Name things plainly" in prompt.read_text()
    assert "Name things plainly" not in (prompt.parent / "prompt-1.md").read_text()
    stopped = await session.command("ralph.stop", {"change": CHANGE})
    assert stopped["state"] == "stopped"


async def test_live_runs_are_found_from_initialize_and_told_only_after_its_answer(
    workspace: Path, start_session: StartSession, runtime_dir: Path
) -> None:
    """Attaching begins when ``initialize`` arrives (issue 27: attach latency), yet LSP allows
    nothing but log messages before the answer to it: a run that ended unwatched (told at once,
    from its ended note) and a live run's status both come after."""
    other = workspace / "openspec" / "changes" / "other"
    other.mkdir()
    (other / "tasks.md").write_text("## 1. One\n- [ ] 1.1 one\n", encoding="utf-8")
    ended = cli(
        "run", "other", *DETACHED, "--root", str(workspace), "--env", "RALPH_DEMO_DELAY=0.01"
    )
    assert ended.returncode == 0, ended.stderr
    ended_id = ended.stdout.strip()
    wait_for(lambda: not find_live(workspace), timeout=60)
    live_one = cli(
        "run", CHANGE, *DETACHED, "--root", str(workspace), "--env", "RALPH_DEMO_DELAY=0.8"
    )
    assert live_one.returncode == 0, live_one.stderr
    run_id = live_one.stdout.strip()

    async def told_after_the_answer(*run_ids: str) -> Session:
        session = await start_session(workspace, settings=RUNNER)
        await wait_until(
            lambda: all(of_run(session, r) for r in run_ids), what=f"the statuses of {run_ids}"
        )
        answer = session.arrivals.index("response")
        early = [m for m in session.arrivals[:answer] if m != "window/logMessage"]
        assert early == [], session.arrivals
        return session

    await told_after_the_answer(ended_id, run_id)
    for _ in range(2):  # the answer and the first statuses are written a moment apart
        session = await told_after_the_answer(run_id)
    stopped = await session.command("ralph.stop", {"change": CHANGE})
    assert stopped["state"] == "stopped"


async def test_a_run_that_ended_unwatched_is_told_once_at_the_next_attach(
    workspace: Path, start_session: StartSession, runtime_dir: Path
) -> None:
    started = cli(
        "run",
        CHANGE,
        "--root",
        str(workspace),
        "--detach",
        "--agent",
        "demo",
        "--verify-when",
        "off",
        "--no-checkpoints",
        "--env",
        "RALPH_DEMO_DELAY=0.01",
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    deadline = time.monotonic() + 60
    while find_live(workspace):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    first = await start_session(workspace, settings=RUNNER)
    await wait_until(
        lambda: any(s["state"] == "succeeded" for s in of_run(first, run_id)),
        timeout=5,
        what="the final status of the run that ended unwatched",
    )
    states = [s["state"] for s in of_run(first, run_id)]
    assert states == ["running", "succeeded"]  # a client says once that it ended
    second = await start_session(workspace, settings=RUNNER)
    time.sleep(1.0)
    assert of_run(second, run_id) == []  # told already: not again


async def test_shutdown_detaches_and_the_run_goes_on(
    workspace: Path, start_session: StartSession, runtime_dir: Path
) -> None:
    session = await start_session(workspace, settings=RUNNER, env={"RALPH_DEMO_DELAY": "0.5"})
    started = await session.command("ralph.run", {"change": CHANGE})
    await wait_until(lambda: of_run(session, started["runId"]), what="the run's status")
    t0 = time.monotonic()
    await session.client.shutdown_session()
    assert time.monotonic() - t0 < 3.0  # no waiting for a final status that will not come
    [live] = find_live(workspace)
    assert live.run_id == started["runId"]
    assert cli("stop", CHANGE, "--root", str(workspace)).returncode == 0


async def test_two_windows_on_one_folder_both_follow_the_run_and_either_steers_it(
    workspace: Path, start_session: StartSession, runtime_dir: Path
) -> None:
    slow = {"RALPH_DEMO_DELAY": "0.8"}
    one = await start_session(workspace, settings=RUNNER, env=slow)
    started = await one.command("ralph.run", {"change": CHANGE})
    run_id = started["runId"]
    await wait_until(lambda: of_run(one, run_id), what="the first window's status")
    two = await start_session(workspace, settings=RUNNER, env=slow)
    await wait_until(lambda: of_run(two, run_id), timeout=5, what="the other window's status")
    queued = await two.command("ralph.guide", {"change": CHANGE, "text": "Short names"})
    assert queued == {"queued": True}
    stopped = await one.command("ralph.stop", {"change": CHANGE})
    assert stopped["state"] == "stopped"
    await wait_until(
        lambda: any(s["state"] == "stopped" for s in of_run(two, run_id)),
        timeout=10,
        what="the other window to see the stop",
    )
    [guidance] = json.loads((workspace / ".ralph" / "runs" / run_id / "record.json").read_text())[
        "guidance"
    ]
    assert guidance["text"] == "Short names"


async def test_a_workspace_folder_added_later_is_searched_for_live_runs(
    workspace: Path, start_session: StartSession, runtime_dir: Path, tmp_path: Path
) -> None:
    at = ("--root", str(workspace))
    started = cli("run", CHANGE, *DETACHED, *at, "--env", "RALPH_DEMO_DELAY=0.8")
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    empty = tmp_path / "empty"
    empty.mkdir()
    session = await start_session(empty, settings=RUNNER)
    await asyncio.sleep(0.5)
    assert of_run(session, run_id) == []  # not in the workspace yet
    session.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
                removed=[],
            )
        )
    )
    await wait_until(lambda: of_run(session, run_id), timeout=5, what="the live run's status")
    assert cli("stop", CHANGE, *at).returncode == 0


def _saver(to: Path) -> str:
    save = "import sys, pathlib; pathlib.Path(sys.argv[1]).open('a').write(sys.stdin.read())"
    return shlex.join([sys.executable, "-c", save, str(to)])


async def test_onrunend_runs_once_in_the_runner_watched_or_not(
    workspace: Path, start_session: StartSession, runtime_dir: Path, tmp_path: Path
) -> None:
    """ralph.onRunEnd of a run in a runner of its own: the runner starts it as the run ends,
    once, whether the editor that started the run watches to the end or is gone before."""
    watched, unwatched = tmp_path / "watched.jsonl", tmp_path / "unwatched.jsonl"
    session = await start_session(workspace, settings={**RUNNER, "onRunEnd": _saver(watched)})
    started = await session.command("ralph.run", {"change": CHANGE})
    await wait_until(
        lambda: any(s["state"] == "succeeded" for s in of_run(session, started["runId"])),
        timeout=60,
        what="the watched run's end",
    )
    await wait_until(watched.exists, timeout=30, what="its onRunEnd")
    await asyncio.sleep(1.0)
    [event] = [json.loads(line) for line in watched.read_text().splitlines()]
    assert event["status"]["runId"] == started["runId"] and event["state"] == "succeeded"
    await session.client.shutdown_session()

    tasks = workspace / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("- [x]", "- [ ]"))  # work to do again
    slow = {"RALPH_DEMO_DELAY": "1.0"}
    settings = {**RUNNER, "onRunEnd": _saver(unwatched)}
    gone = await start_session(workspace, settings=settings, env=slow)
    again = await gone.command("ralph.run", {"change": CHANGE})
    [runner] = find_live(workspace)
    await gone.client.shutdown_session()  # the editor closes while the run goes on
    assert not unwatched.exists()
    wait_for(unwatched.exists, 90)  # the unwatched run's onRunEnd, from its runner
    [event] = [json.loads(line) for line in unwatched.read_text().splitlines()]
    assert event["status"]["runId"] == again["runId"] == runner.run_id
    wait_for(lambda: not alive(runner.pid), 20)  # and then the runner is gone
