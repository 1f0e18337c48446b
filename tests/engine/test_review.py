"""The review round (SPEC §13 "Review") through real processes: a fake reviewer (a real
program) spawned by the engine where the run would succeed, its edit checked by the host, and
the run's end, record and events."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

from ralph_lsp.loop.engine import Engine
from ralph_lsp.runs.events import ReviewEvent
from ralph_lsp.runs.history import load_records
from ralph_lsp.settings import Settings
from tests.engine.conftest import CHANGE, FAKES, fake, spawns
from tests.engine.test_engine import run_to_end, tasks_text
from tests.git.conftest import git, init_repo
from tests.tags import TEST_VAR, programs

REVIEWER = FAKES / "reviewer.py"


def reviewing(mode: str, **kw: object) -> Settings:
    """The worker checks one task per spawn; the reviewer is the fake in ``mode``."""
    base = Settings(
        agent="custom",
        agent_command=tuple(fake("check_one.py")),
        verify_when="off",
        review_agent=(sys.executable, str(REVIEWER), mode),
    )
    return base.replace(**kw)


def reviews_of(project: Path) -> list[dict[str, object]]:
    return list(load_records(project, CHANGE)[0]["reviews"])  # type: ignore[arg-type]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_review_task_is_worked_then_the_reviewer_approves(
    project: Path, spawn_log: Path
) -> None:
    rec, status = await run_to_end(project, reviewing("once"))
    assert status.state == "succeeded", status.reason  # type: ignore[attr-defined]
    assert status.reason.endswith("; review approved")  # type: ignore[attr-defined]
    assert status.reason.startswith("every task is checked (9/9)")  # type: ignore[attr-defined]
    text = tasks_text(project)
    assert "## Review" in text and "- [x] R.1 Scenario Greeting is not met" in text
    assert len(spawns(spawn_log)) == 9  # eight tasks, then the one the review appended
    rounds = reviews_of(project)
    assert [r["verdict"] for r in rounds] == ["rejected", "approved"]
    assert rounds[0]["tasksAdded"] == [
        "- [ ] R.1 Scenario Greeting is not met: hello/cli.py:1 (fake reviewer)"
    ]
    assert rounds[0]["reviewer"] == Path(sys.executable).name and rounds[1]["tasksAdded"] == []
    events = [e for e in rec.events if isinstance(e, ReviewEvent)]
    assert [e.record["verdict"] for e in events] == ["rejected", "approved"]
    # the prompt file and raw output of each round are kept beside the iterations
    folder = project / ".ralph" / "runs" / load_records(project, CHANGE)[0]["runId"]
    prompt = (folder / "review-1.md").read_text()
    assert "Role: reviewer" in prompt and "## proposal.md" in prompt
    assert "fake reviewer once: done" in (folder / "review-1.log").read_text()


async def test_a_change_done_before_the_run_is_reviewed_before_it_succeeds(
    project: Path, spawn_log: Path
) -> None:
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("[ ]", "[x]"))
    _, status = await run_to_end(project, reviewing("once"))
    assert status.state == "succeeded", status.reason  # type: ignore[attr-defined]
    assert status.reason == "every task is checked (9/9); review approved"  # type: ignore[attr-defined]
    assert len(spawns(spawn_log)) == 1  # only the task the review appended was worked
    assert [r["verdict"] for r in reviews_of(project)] == ["rejected", "approved"]


async def test_a_reviewer_that_never_approves_ends_exhausted_after_max_rounds(
    project: Path, spawn_log: Path
) -> None:
    _, status = await run_to_end(project, reviewing("never", review_max_rounds=2))
    assert status.state == "exhausted", status.reason  # type: ignore[attr-defined]
    assert status.reason == "review still finds 1 unmet item after 2 rounds"  # type: ignore[attr-defined]
    assert [r["verdict"] for r in reviews_of(project)] == ["rejected", "rejected"]
    assert len(spawns(spawn_log)) == 9  # round 2's task is left for a person
    assert tasks_text(project).count("- [ ] R.") == 1


async def test_a_hostile_reviewer_in_the_sandbox_is_undone_and_refused(
    project: Path, spawn_log: Path
) -> None:
    source = project / "hello" / "__init__.py"
    # beside the task file: its folder is writable inside (an editor's rename), so the host
    # removes what the reviewer made there (a new file elsewhere fails: tests/sandbox)
    created = project / "openspec" / "changes" / CHANGE / "notes.md"
    before_source = digest(source)
    env = {"FAKE_REVIEW_SOURCE": str(source), "FAKE_REVIEW_CREATE": str(created)}
    settings = reviewing("hostile", review_max_rounds=1, env=env)
    _, status = await run_to_end(project, settings)
    assert status.state == "exhausted", status.reason  # type: ignore[attr-defined]
    assert status.reason.startswith("the reviewer's edit was refused (")  # type: ignore[attr-defined]
    assert digest(source) == before_source and not created.exists()
    text = tasks_text(project)
    assert "- [ ]" not in text and "R.1" not in text  # the uncheck and the append undone
    [round_] = reviews_of(project)
    assert round_["verdict"] == "refused" and round_["tasksAdded"] == []
    refusals = round_["refusals"]
    assert any("line" in r for r in refusals)  # type: ignore[union-attr]
    assert f"the reviewer created openspec/changes/{CHANGE}/notes.md" in refusals  # type: ignore[operator]
    assert any("Read-only file system" in r for r in refusals)  # type: ignore[union-attr]
    record = load_records(project, CHANGE)[0]
    assert record["sandbox"] is not None  # this ran sandboxed: the writes failed inside
    raw = (project / ".ralph" / "runs" / record["runId"] / "review-1.log").read_text()
    assert "write a source file: [Errno 30] Read-only file system" in raw


async def test_a_link_in_the_task_files_place_is_never_written_through(
    project: Path, spawn_log: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    settings = reviewing("link", review_max_rounds=1, env={"FAKE_REVIEW_VICTIM": str(victim)})
    _, status = await run_to_end(project, settings)
    assert status.state == "exhausted", status.reason  # type: ignore[attr-defined]
    assert victim.read_text() == "the user's own file\n"
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    assert not tasks.is_symlink() and "- [ ]" not in tasks.read_text()  # made again, as it was
    [round_] = reviews_of(project)
    assert round_["refusals"] == ["tasks.md: removed, or replaced by a link or no file"]


def _git_project(project: Path) -> None:
    init_repo(project)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "start")


@pytest.mark.unsandboxed("the sandbox off: the reviewer's writes are found against git")
async def test_a_hostile_reviewer_without_the_sandbox_is_undone_against_git(
    project: Path, spawn_log: Path
) -> None:
    _git_project(project)
    source = project / "hello" / "__init__.py"
    created = project / "hello" / "evil.py"
    before_source = digest(source)
    env = {"FAKE_REVIEW_SOURCE": str(source), "FAKE_REVIEW_CREATE": str(created)}
    settings = reviewing("hostile", review_max_rounds=1, env=env, sandbox="off")
    _, status = await run_to_end(project, settings)
    assert status.state == "exhausted", status.reason  # type: ignore[attr-defined]
    assert digest(source) == before_source and not created.exists()
    assert "- [ ]" not in tasks_text(project)
    [round_] = reviews_of(project)
    refusals = round_["refusals"]
    assert round_["verdict"] == "refused"
    assert "the reviewer created hello/evil.py" in refusals  # type: ignore[operator]
    assert "the reviewer wrote hello/__init__.py" in refusals  # type: ignore[operator]
    # nothing changed but what the worker did to the task file (its checked boxes)
    assert git(project, "status", "--porcelain") == f" M openspec/changes/{CHANGE}/tasks.md\n"


@pytest.mark.unsandboxed("the sandbox off and no git: the review is refused, never unconfined")
async def test_without_sandbox_or_git_the_review_is_refused(
    project: Path, spawn_log: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "reviewer-ran"
    env = {"FAKE_REVIEW_SOURCE": str(marker), "FAKE_REVIEW_CREATE": str(marker)}
    _, status = await run_to_end(project, reviewing("hostile", env=env, sandbox="off"))
    assert status.state == "failed", status.reason  # type: ignore[attr-defined]
    assert status.reason.startswith("review refused: the sandbox is off")  # type: ignore[attr-defined]
    assert "never run unconfined" in status.reason  # type: ignore[attr-defined]
    assert not marker.exists()  # the reviewer never started


async def test_a_reviewer_that_does_not_finish_never_approves(
    project: Path, spawn_log: Path
) -> None:
    _, status = await run_to_end(project, reviewing("crash", review_max_rounds=2))
    assert status.state == "exhausted", status.reason  # type: ignore[attr-defined]
    assert status.reason == "the reviewer did not finish (it exited 3) after 2 rounds"  # type: ignore[attr-defined]
    rounds = reviews_of(project)
    assert [(r["verdict"], r["exitCode"]) for r in rounds] == [("failed", 3), ("failed", 3)]
    assert len(spawns(spawn_log)) == 8  # no task was added: review again at once, no worker


async def test_a_stop_during_the_review_ends_the_run_stopped_and_undoes_nothing_it_may_keep(
    project: Path, spawn_log: Path
) -> None:
    engine = Engine(lambda _e: None)
    await engine.start(project, CHANGE, reviewing("hang", stop_grace_seconds=0.5))
    deadline = time.monotonic() + 60
    while "R.1" not in tasks_text(project) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    status = await asyncio.wait_for(engine.stop(project, CHANGE), 15)
    assert status.state == "stopped" and status.reason == "stopped by the user"
    assert programs(REVIEWER, os.environ[TEST_VAR]) == []  # the reviewer's tree is gone
    # what it appended was an unchecked task: it stands, for the next run to work
    assert "- [ ] R.1 Scenario Greeting, said before the reviewer was stopped" in tasks_text(
        project
    )


async def test_no_review_agent_means_no_review(project: Path, spawn_log: Path) -> None:
    _, status = await run_to_end(project, reviewing("never", review_agent=None))
    assert status.state == "succeeded", status.reason  # type: ignore[attr-defined]
    assert "review" not in status.reason  # type: ignore[attr-defined]
    assert reviews_of(project) == []


async def test_the_demo_reviewer_approves_a_run_without_a_conformance_table(
    project: Path,
) -> None:
    os.environ.setdefault("RALPH_DEMO_DELAY", "0")
    settings = Settings(agent="demo", verify_when="off", review_agent="same")
    _, status = await run_to_end(project, settings)
    assert status.state == "succeeded", status.reason  # type: ignore[attr-defined]
    assert status.reason.endswith("review approved")  # type: ignore[attr-defined]
    [round_] = reviews_of(project)
    assert round_["reviewer"] == "demo" and round_["verdict"] == "approved"
