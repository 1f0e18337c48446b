"""Runs as Ray jobs on a real single-node cluster (conftest), with a bare repository on disk as
the git remote: the CLI's ``run --runner ray`` end to end, and :class:`RayRuns` directly for
progress, stop, guidance and a runner killed mid-run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from ralph_lsp.loop.engine import EngineError, EngineEvent, StatusEvent
from ralph_lsp.remote.ray_runs import RayRuns
from ralph_lsp.runs.events import GuidanceEvent, IterationEvent
from ralph_lsp.settings import Settings

REPO = Path(__file__).resolve().parents[2]
TOOLBOX = REPO / "examples" / "toolbox"

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A git copy of examples/toolbox whose origin is a bare repository beside it."""
    work = tmp_path / "toolbox"
    shutil.copytree(TOOLBOX, work)
    git(work, "init", "-q", "-b", "main")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    return work, bare


def remote_log(bare: Path, branch: str) -> list[str]:
    return git(bare, "log", "--format=%s", branch).splitlines()


def test_two_changes_run_at_once_as_two_jobs_and_both_succeed(
    ray_cluster: str, project: tuple[Path, Path]
) -> None:
    work, bare = project
    head, branches = git(work, "rev-parse", "HEAD"), git(work, "branch", "--list")
    env = {**os.environ, "RALPH_DEMO_DELAY": "0.05", "RALPH_DEMO_TASKS_PER_RUN": "2"}
    argv = [sys.executable, "-m", "ralph_lsp", "run", "add-slugify", "add-word-count"]
    argv += ["--root", str(work), "--parallel", "2", "--agent", "demo", "--runner", "ray"]
    argv += ["--ray-address", ray_cluster]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/2 succeeded" in done.stdout, done.stdout
    # The user's tree, HEAD and branches are as they were.
    assert git(work, "status", "--porcelain") == ""
    assert git(work, "rev-parse", "HEAD") == head
    assert git(work, "branch", "--list") == branches
    runs = sorted((work / ".ralph" / "runs").iterdir())
    assert len(runs) == 2
    for folder in runs:
        record = json.loads((folder / "record.json").read_text())
        assert record["state"] == "succeeded", record
        branch = record["worktree"]["branch"]
        assert branch == f"ralph/{record['change']}/{record['runId']}"
        subjects = remote_log(bare, branch)
        n = len(record["iterations"])
        assert n >= 1
        # One commit per iteration on the run branch, above the base.
        assert len(subjects) == n + 1, subjects
        assert all(f"{record['change']} iteration" in s for s in subjects[:n]), subjects
        # diff works on this side: the branch was fetched back.
        diff = subprocess.run(
            [sys.executable, "-m", "ralph_lsp", "diff", record["change"], "--root", str(work)],
            capture_output=True,
            text=True,
        )
        assert diff.returncode == 0, diff.stderr
        assert "tasks.md" in diff.stdout
    # Nothing outside ralph/… was written on the remote.
    refs = git(bare, "for-each-ref", "--format=%(refname)").splitlines()
    assert all(r == "refs/heads/main" or r.startswith("refs/heads/ralph/") for r in refs), refs


def slow(delay: float) -> Settings:
    """The demo agent, one task per iteration, ``delay`` seconds before each task: slow enough
    that the job's log (which Ray delivers in batches, up to about 2.5 s late here) shows an
    iteration while the next one still runs."""
    env = {"RALPH_DEMO_DELAY": str(delay), "RALPH_DEMO_TASKS_PER_RUN": "1"}
    return Settings(agent="demo", env=env)


def job_processes(run_id: str) -> list[psutil.Process]:
    """The processes of a run's job (the shell Ray starts it with, its runner, and the agents
    the runner started), by the run id."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if run_id in cmd and "ralph_lsp.remote.job" in cmd:
                found.append(p)
                found.extend(p.children(recursive=True))
        except psutil.Error:
            continue
    return found


def job_runner(run_id: str) -> psutil.Process:
    """The job's runner itself: the Python process, not the ``/bin/sh -c`` Ray starts it in."""
    for p in job_processes(run_id):
        with contextlib.suppress(psutil.Error):
            argv = p.cmdline()
            if "-m" in argv and "ralph_lsp.remote.job" in argv:
                return p
    raise AssertionError(f"no runner process of {run_id}")


async def until(predicate: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.2)


async def test_progress_guidance_and_stop_reach_a_running_job(
    ray_cluster: str, project: tuple[Path, Path]
) -> None:
    work, _bare = project
    seen: list[EngineEvent] = []
    runs = RayRuns(seen.append, address=ray_cluster)
    status = await runs.start(work, "add-title-case", slow(4.0))
    run_id = status.run_id

    def started(n: int) -> bool:
        return any(isinstance(e, IterationEvent) and e.phase == "start" and e.n >= n for e in seen)

    def delivered() -> list[GuidanceEvent]:
        return [e for e in seen if isinstance(e, GuidanceEvent)]

    await until(lambda: started(1))
    # Progress arrives while the job runs: a status of this run, running, with its counts.
    live = [e.status for e in seen if isinstance(e, StatusEvent) and not e.status.final]
    assert any(s.iteration >= 1 and s.total == 3 and s.run_id == run_id for s in live)
    await runs.guide(work, "add-title-case", "prefer short names")
    # The job takes it from the remote before its next spawn: in iteration 2's prompt (told at
    # that iteration's end), while the run still has iteration 3 to go.
    await until(lambda: bool(delivered()) or runs.statuses(work)[0].final)
    assert [(g.text, g.delivered_in) for g in delivered()] == [("prefer short names", 2)]
    assert not runs.statuses(work)[0].final
    final = await runs.stop(work, "add-title-case")
    assert final.final and final.state == "stopped", final
    await until(lambda: not job_processes(run_id), timeout=30)
    record = json.loads((work / ".ralph" / "runs" / run_id / "record.json").read_text())
    assert record["state"] == "stopped"
    assert record["guidance"][0]["text"] == "prefer short names"
    assert record["guidance"][0]["deliveredIn"] == 2


async def test_a_killed_job_runner_ends_the_run_interrupted_and_keeps_its_commits(
    ray_cluster: str, project: tuple[Path, Path]
) -> None:
    work, bare = project
    seen: list[EngineEvent] = []
    runs = RayRuns(seen.append, address=ray_cluster)
    status = await runs.start(work, "add-word-count", slow(4.0))
    run_id = status.run_id
    branch = f"ralph/add-word-count/{run_id}"

    def ended() -> int:
        return sum(1 for e in seen if isinstance(e, IterationEvent) and e.phase == "end")

    await until(lambda: ended() >= 1 and len(remote_log(bare, branch)) >= 2)
    assert ended() < 3, "the run ended before its runner could be killed"
    runner = job_runner(run_id)
    pushed = len(remote_log(bare, branch)) - 1
    runner.kill()
    final = await asyncio.wait_for(runs.wait(work, "add-word-count"), 120)
    assert final.state == "interrupted", final
    assert "Ray job" in (final.reason or ""), final.reason
    assert len(remote_log(bare, branch)) - 1 >= pushed >= 1
    await until(lambda: not job_processes(run_id), timeout=30)
    record = json.loads((work / ".ralph" / "runs" / run_id / "record.json").read_text())
    assert record["state"] == "interrupted" and record["reason"] == final.reason
    # Every iteration the branch holds is named by a local checkpoint, so diff works on it.
    assert len(record["iterations"]) >= pushed


async def test_uncommitted_changes_are_refused_before_anything_is_pushed_or_submitted(
    ray_cluster: str, project: tuple[Path, Path]
) -> None:
    from ray.job_submission import JobSubmissionClient

    work, bare = project
    (work / "toolbox" / "__init__.py").write_text("# edited, not committed\n")
    (work / "notes.txt").write_text("new, untracked\n")
    (work / "README.md").write_text("staged, not committed\n")
    git(work, "add", "README.md")
    refs = git(bare, "for-each-ref", "--format=%(refname)")
    jobs = len(JobSubmissionClient(ray_cluster).list_jobs())
    runs = RayRuns(address=ray_cluster)
    with pytest.raises(EngineError) as refused:
        await runs.start(work, "add-slugify", slow(0.1))
    message = str(refused.value)
    assert "uncommitted changes" in message, message
    for name in ("toolbox/__init__.py", "notes.txt", "README.md"):
        assert name in message, message
    # Nothing pushed, nothing submitted, no record.
    assert git(bare, "for-each-ref", "--format=%(refname)") == refs
    assert len(JobSubmissionClient(ray_cluster).list_jobs()) == jobs
    assert not (work / ".ralph" / "runs").exists() or not any((work / ".ralph" / "runs").iterdir())
    assert runs.statuses() == []


def test_one_change_on_ray_ends_as_a_single_run_does(
    ray_cluster: str, project: tuple[Path, Path]
) -> None:
    work, bare = project
    env = {**os.environ, "RALPH_DEMO_DELAY": "0.05", "RALPH_DEMO_TASKS_PER_RUN": "2"}
    argv = [sys.executable, "-m", "ralph_lsp", "run", "add-title-case", "--root", str(work)]
    argv += ["--agent", "demo", "--runner", "ray", "--ray-address", ray_cluster]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.rstrip("\n").splitlines()
    # The single run's ending, once, as the last line; no queue summary.
    assert lines[-1].startswith("succeeded: every task is checked"), done.stdout
    assert sum(1 for line in lines if line.startswith(("succeeded: ", "■ succeeded: "))) == 1
    assert not any(line.startswith("queue ") for line in lines), done.stdout
    assert "Ray job" in done.stdout
    # Its agent and checks ran in the worker's own sandbox (SPEC §10), said in the relayed lines.
    assert "sandbox: bwrap " in done.stdout, done.stdout
    (folder,) = (work / ".ralph" / "runs").iterdir()
    record = json.loads((folder / "record.json").read_text())
    assert record["state"] == "succeeded", record
    assert len(remote_log(bare, record["worktree"]["branch"])) == len(record["iterations"]) + 1


def test_a_worker_without_the_agent_fails_the_run_at_once_naming_the_node_and_program(
    ray_cluster: str, project: tuple[Path, Path]
) -> None:
    """SPEC §9: the worker lacks the agent program; the job ends before its run starts, telling
    only its end, and the run ends ``failed`` (not ``interrupted``) with that reason."""
    import socket

    work, _bare = project
    argv = [sys.executable, "-m", "ralph_lsp", "run", "add-slugify", "--root", str(work)]
    argv += ["--agent-command", "no-such-agent-xyz", "--runner", "ray"]
    argv += ["--ray-address", ray_cluster]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    reason = f"the worker node {socket.gethostname()} has no agent program 'no-such-agent-xyz'"
    assert done.stdout.rstrip().splitlines()[-1] == f"failed: {reason}", done.stdout
    assert done.returncode == 1, done.stdout + done.stderr
    [folder] = (work / ".ralph" / "runs").iterdir()
    record = json.loads((folder / "record.json").read_text())
    assert (record["state"], record["reason"]) == ("failed", reason)
