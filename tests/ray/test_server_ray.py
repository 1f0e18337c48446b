"""``ralph.runner: "ray"`` through a real language server (pytest-lsp) on a real Ray cluster: the
server starts the remote runner (``python -m ralph_lsp.remote``), whose job runs the change on
the cluster; the lenses follow the job's tasks.md (the user's own file is untouched), a new
server attaches to the run after the first one is killed, the end is told once, and the history
page's diff works on the iterations fetched back."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.runner.live import find_live
from tests.conftest import EXAMPLE, alive
from tests.lsp.conftest import CHANGE, Session, StartSession, plain, wait_until
from tests.ray.test_ray_runs import TOOLBOX, git, remote_log

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _committed_with_origin(work: Path, bare: Path) -> Path:
    git(work, "init", "-q", "-b", "main")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    git(work.parent, "init", "-q", "--bare", str(bare))
    # As a person often does for a remote beside the work tree: a path relative to it (the
    # job, cloning elsewhere, gets it made absolute).
    git(work, "remote", "add", "origin", os.path.relpath(bare, work))
    git(work, "push", "-q", "origin", "main")
    return bare


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path]:
    """A git copy of examples/hello whose origin is a bare repository beside it."""
    work = tmp_path / "hello"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    return work, _committed_with_origin(work, tmp_path / "remote.git")


def ray_settings(address: str, **more: Any) -> dict[str, Any]:
    # Four tasks an iteration, a second before each: two iterations of about four seconds,
    # long enough that the job's log (delivered in batches, up to ~2.5 s late) shows the
    # first iteration's tasks while the second still runs.
    env = {"RALPH_DEMO_DELAY": "1.0", "RALPH_DEMO_TASKS_PER_RUN": "4"}
    return {
        "runsOutliveEditor": True,
        "runner": "ray",
        "ray.address": address,
        "agent": "demo",
        "env": env,
        **more,
    }


def of_run(session: Session, run_id: str) -> list[dict[str, Any]]:
    return [s for s in session.statuses if s["runId"] == run_id]


def task_lenses(lenses: list[tuple[int, str, str, Any]], text: str) -> list[int]:
    """Lines of tasks.md that carry a lens ``text`` (story headings carry their own)."""
    return [line for line, title, _, _ in lenses if title == text]


async def test_a_ray_run_from_the_server_is_followed_attached_to_and_told_once(
    ray_cluster: str,
    repo: tuple[Path, Path],
    start_session: StartSession,
    runtime_dir: Path,
) -> None:
    work, bare = repo
    settings = ray_settings(ray_cluster)
    original = (work / "openspec" / "changes" / CHANGE / "tasks.md").read_text()
    first = await start_session(work, settings=settings)
    started = await first.command("ralph.run", {"change": CHANGE})
    run_id = started["runId"]
    await wait_until(lambda: bool(of_run(first, run_id)), what="the run's first status")
    assert of_run(first, run_id)[0]["worktree"]["branch"] == f"ralph/{CHANGE}/{run_id}"
    # A runner of this machine follows the job: found as a live run, like a local one.
    [live] = find_live(work)
    assert live.run_id == run_id and alive(live.pid)

    # The lenses follow the job's tasks.md while it runs: task lines turn done here although
    # the user's own tasks.md is not touched (the work happens on the cluster).
    done_lines: list[int] = []

    async def some_task_done() -> bool:
        done_lines[:] = task_lenses(await first.lenses(), "✓ done")
        return bool(done_lines)

    await _until_async(some_task_done, 120, "a task's lens to turn done while the job runs")
    assert not any(s["state"] != "running" for s in of_run(first, run_id))
    assert (work / "openspec" / "changes" / CHANGE / "tasks.md").read_text() == original

    # The editor goes away mid-run; the run goes on, and the next server attaches to it.
    first.process.kill()
    await first.process.wait()
    second = await start_session(work, settings=settings)
    await wait_until(
        lambda: any(s["state"] == "running" for s in of_run(second, run_id)),
        timeout=10,
        what="the live remote run's status from the new server",
    )
    await wait_until(
        lambda: any(s["state"] != "running" for s in of_run(second, run_id)),
        timeout=180,
        what="the remote run's end",
    )
    finals = [s for s in of_run(second, run_id) if s["state"] != "running"]
    assert [s["state"] for s in finals] == ["succeeded"], finals
    assert finals[0]["completed"] == finals[0]["total"] == 8
    await wait_until(lambda: find_live(work) == [], timeout=30, what="the live file to go")
    await wait_until(lambda: not alive(live.pid), timeout=10, what="the remote runner to exit")

    # The branch is on the remote with a commit per iteration; the history page's diff of an
    # iteration works here, on the commits fetched back.
    record = json.loads((work / ".ralph" / "runs" / run_id / "record.json").read_text())
    assert record["state"] == "succeeded" and record["remote"]["engine"] == "ray"
    n = len(record["iterations"])
    assert len(remote_log(bare, f"ralph/{CHANGE}/{run_id}")) == n + 1
    diff = await second.command("ralph.diff", {"change": CHANGE, "runId": run_id, "iteration": 1})
    assert any(f["path"].endswith("tasks.md") for f in diff["files"]), diff
    assert "+- [x] 1.1" in diff["patch"], diff["patch"]
    # The end says how to review and merge the work from here (not the job's own worktree).
    fetched = f"refs/ralph/@remote/{CHANGE}/{run_id}"
    await wait_until(lambda: f"fetched here as {fetched}" in second.logs(), what="the hint")
    assert git(work, "log", "--format=%s", f"HEAD..{fetched}").count("iteration") == n
    # The user's files and branches are as they were.
    assert git(work, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(work, "branch", "--list") == "* main"


def test_the_cli_detaches_a_ray_run_and_stop_ends_it(
    ray_cluster: str,
    repo: tuple[Path, Path],
    runtime_dir: Path,
) -> None:
    work, _ = repo
    env = {"RALPH_DEMO_DELAY": "2.0", "RALPH_DEMO_TASKS_PER_RUN": "1"}
    base = [sys.executable, "-m", "ralph_lsp"]
    argv = [*base, "run", CHANGE, "--root", str(work), "--detach", "--agent", "demo"]
    argv += ["--runner", "ray", "--ray-address", ray_cluster]
    full_env = {**os.environ, **env}
    done = subprocess.run(argv, capture_output=True, text=True, env=full_env, timeout=120)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    listed = subprocess.run(
        [*base, "runs", "--root", str(work), "--json"], capture_output=True, text=True
    )
    rows = json.loads(listed.stdout)["runs"]
    assert any(r["runId"] == run_id and r["state"] == "running" for r in rows), rows
    [live] = find_live(work)
    stopped = subprocess.run(
        [*base, "stop", CHANGE, "--root", str(work)], capture_output=True, text=True, timeout=120
    )
    assert stopped.returncode == 0, stopped.stderr
    record = json.loads((work / ".ralph" / "runs" / run_id / "record.json").read_text())
    assert record["state"] == "stopped", record
    assert find_live(work) == []
    deadline = time.monotonic() + 10
    while alive(live.pid):  # the runner exits once its stop is answered
        assert time.monotonic() < deadline, "the remote runner did not exit"
        time.sleep(0.1)


async def _until_async(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.3)


async def test_two_changes_queued_from_the_server_run_as_two_ray_jobs_at_once(
    ray_cluster: str, tmp_path: Path, start_session: StartSession, runtime_dir: Path
) -> None:
    """The issue's done-when from the editor: two changes with ``parallel: 2`` and
    ``ralph.runner: "ray"`` are two jobs at once, each with its branch on the remote, the queue
    told once, and the user's tree untouched."""
    work = tmp_path / "toolbox"
    shutil.copytree(TOOLBOX, work, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    bare = _committed_with_origin(work, tmp_path / "remote.git")
    env = {"RALPH_DEMO_DELAY": "0.3", "RALPH_DEMO_TASKS_PER_RUN": "2"}
    session = await start_session(work, settings=ray_settings(ray_cluster, env=env))
    queued: list[dict[str, Any]] = []
    session.client.protocol.fm.features["ralph/queueStatus"] = lambda p: queued.append(plain(p))
    changes = ["add-slugify", "add-word-count"]
    started = await session.command("ralph.run", {"changes": changes, "parallel": 2})
    assert started["state"] == "running" and started["total"] == 2
    # Both jobs run at once: each change has a running status before either ends.
    await wait_until(
        lambda: (
            {s["change"] for s in session.statuses if s["state"] == "running"} == set(changes)
            and not any(s["state"] != "running" for s in session.statuses)
        ),
        timeout=120,
        what="both changes running at once",
    )
    await wait_until(lambda: any(q["endedAt"] for q in queued), timeout=240, what="the end")
    ends = [q for q in queued if q["endedAt"]]
    assert len(ends) == 1 and ends[0]["reason"] == "2/2 succeeded", ends
    for item in ends[0]["items"]:
        run_id = item["runId"]
        record = json.loads((work / ".ralph" / "runs" / run_id / "record.json").read_text())
        assert record["state"] == "succeeded" and record["remote"]["engine"] == "ray"
        branch = f"ralph/{item['change']}/{run_id}"
        assert len(remote_log(bare, branch)) == len(record["iterations"]) + 1
    assert git(work, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(work, "branch", "--list") == "* main"


async def test_with_runs_that_do_not_outlive_the_editor_shutdown_stops_the_job(
    ray_cluster: str, repo: tuple[Path, Path], start_session: StartSession, runtime_dir: Path
) -> None:
    """``runsOutliveEditor: false``: the server follows the job itself (no runner process), and
    its shutdown stops the run on the cluster, as it stops a local run."""
    from tests.ray.test_ray_runs import job_processes

    work, _ = repo
    env = {"RALPH_DEMO_DELAY": "2.0", "RALPH_DEMO_TASKS_PER_RUN": "1"}
    settings = ray_settings(ray_cluster, runsOutliveEditor=False, env=env)
    session = await start_session(work, settings=settings)
    started = await session.command("ralph.run", {"change": CHANGE})
    run_id = started["runId"]
    await wait_until(lambda: bool(job_processes(run_id)), timeout=60, what="the job to run")
    [live] = find_live(work)
    assert live.pid == session.process.pid  # followed by the server itself, not by a runner
    await asyncio.wait_for(session.client.shutdown_session(), 60)
    record = json.loads((work / ".ralph" / "runs" / run_id / "record.json").read_text())
    assert record["state"] == "stopped", record
    deadline = time.monotonic() + 30
    while job_processes(run_id):
        assert time.monotonic() < deadline, "the job's processes outlived the stop"
        await asyncio.sleep(0.2)
