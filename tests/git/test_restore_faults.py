"""Issue 25's git faults, tried as a user would: real repositories, the real command line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.git.conftest import NEEDS_GIT, git
from tests.git.test_runs import CHANGE, TASKS, cli

pytestmark = NEEDS_GIT


def records(root: Path) -> list[dict[str, object]]:
    """The root's run records, oldest first."""
    found = [json.loads(p.read_text()) for p in (root / ".ralph" / "runs").glob("*/record.json")]
    return sorted(found, key=lambda r: str(r["startedAt"]))


def undo_command(proc: subprocess.CompletedProcess[str]) -> list[str]:
    words = proc.stdout.splitlines()[-1].split()
    assert words[:4] == ["ralph-lsp", "restore", CHANGE, "--checkpoint"], proc.stdout
    return words[1:]


def uncheck_all(root: Path) -> None:
    (root / TASKS).write_text((root / TASKS).read_text().replace("[x]", "[ ]"))


def run_with_retention(root: Path, keep: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One run through the engine (historyKeepRuns has no CLI flag)."""
    from ralph_lsp.loop.engine import Engine
    from ralph_lsp.settings import Settings

    async def one() -> None:
        engine = Engine()
        await engine.start(root, CHANGE, Settings(agent="demo", history_keep_runs=keep))
        await engine.wait(root, CHANGE)

    monkeypatch.setenv("RALPH_DEMO_DELAY", "0")
    asyncio.run(one())


# -- fault 1: an undo outlives later runs and retention ----------------------------------------
def test_the_undo_of_a_restore_by_commit_id_survives_two_later_runs(project: Path) -> None:
    cli(project, "run", CHANGE, "--agent", "demo")
    first = str(records(project)[0]["iterations"][0]["checkpoint"])  # type: ignore[index]
    (project / "scratch.txt").write_text("my work, not in any checkpoint yet\n")
    restored = cli(project, "restore", CHANGE, "--checkpoint", first)
    assert (project / "scratch.txt").read_text() == "untracked\n"
    undo = undo_command(restored)
    for _ in range(2):
        uncheck_all(project)
        cli(project, "run", CHANGE, "--agent", "demo")
    cli(project, *undo)
    assert (project / "scratch.txt").read_text() == "my work, not in any checkpoint yet\n"


def test_the_undo_of_an_iteration_restore_survives_retention(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli(project, "run", CHANGE, "--agent", "demo")
    (project / "scratch.txt").write_text("typed after the run\n")
    undo = undo_command(cli(project, "restore", CHANGE, "--iteration", "1"))
    for _ in range(2):
        uncheck_all(project)
        run_with_retention(project, 1, monkeypatch)  # the restored run's history goes
    assert len(records(project)) == 1
    cli(project, *undo)
    assert (project / "scratch.txt").read_text() == "typed after the run\n"


def test_retention_prunes_only_the_runs_it_removed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run of another root of this repository, whose record this root does not have.
    git(project, "update-ref", f"refs/ralph/{CHANGE}/r-someone-else/1", "HEAD")
    cli(project, "run", CHANGE, "--agent", "demo")
    uncheck_all(project)
    run_with_retention(project, 1, monkeypatch)
    assert git(project, "rev-parse", "--verify", "-q", f"refs/ralph/{CHANGE}/r-someone-else/1")


# -- fault 3: work trees (and roots) of one repository keep their own checkpoints --------------
def test_two_work_trees_of_one_repository_keep_their_own_checkpoints(
    project: Path, tmp_path: Path
) -> None:
    git(project, "commit", "-q", "-m", "staged work")
    other = tmp_path / "b"
    git(project, "worktree", "add", "-q", "-b", "b", str(other))
    cli(project, "run", CHANGE, "--agent", "demo")
    mine = str(records(project)[0]["runId"])
    cli(other, "run", CHANGE, "--agent", "demo")
    theirs = str(records(other)[0]["runId"])
    diff = cli(project, "diff", CHANGE, "--iteration", "1")
    assert f"run {mine} iteration 1" in diff.stderr, diff.stderr
    assert theirs not in diff.stderr
    refused = cli(project, "restore", CHANGE, "--iteration", "1", "--run", theirs, check=False)
    assert refused.returncode == 2 and "has no checkpoints" in refused.stderr
    (project / "scratch.txt").write_text("A's own\n")
    cli(project, "restore", CHANGE, "--iteration", "1")  # A's run: still there
    assert "- [x] 1.1" in (project / TASKS).read_text()


def test_two_openspec_roots_of_one_repository_do_not_see_each_others_runs(project: Path) -> None:
    from ralph_lsp.git import checkpoints as cp
    from ralph_lsp.git import refs
    from ralph_lsp.git.command import find_repo

    second = project / "sub"
    second.mkdir()
    notes: list[str] = []
    a = cp.open_checkpointer(project, CHANGE, "r-a", notes.append)
    b = cp.open_checkpointer(second, CHANGE, "r-b", notes.append)
    assert a is not None and b is not None
    a.record(0)
    b.record(0)
    repo = find_repo(project)
    assert repo is not None
    assert refs.run_ids(repo, CHANGE, project) == ["r-a"]
    assert refs.run_ids(repo, CHANGE, second) == ["r-b"]
    for ref, _ in refs.list_refs(repo, refs.REF_PREFIX):
        git(project, "check-ref-format", ref)


def test_checkpoints_written_by_v2_are_still_read(project: Path) -> None:
    cli(project, "run", CHANGE, "--agent", "demo")
    run = str(records(project)[0]["runId"])
    # As v2 named them: refs/ralph/<change>/<runId>/<n>, shared by every work tree.
    for line in git(project, "for-each-ref", "--format=%(refname) %(objectname)").splitlines():
        ref, commit = line.split()
        if ref.startswith("refs/ralph/"):
            old = f"refs/ralph/{CHANGE}/{run}/{ref.rsplit('/', 1)[1]}"
            if old != ref:
                git(project, "update-ref", old, commit)
                git(project, "update-ref", "-d", ref)
    diff = cli(project, "diff", CHANGE, "--iteration", "2")
    assert "+- [x] 2.1" in diff.stdout
    cli(project, "restore", CHANGE, "--iteration", "1")
    assert "- [ ] 2.1" in (project / TASKS).read_text()


# -- fault 4: no restore while any run is active in the work tree -------------------------------
HOLD = """
import sys, time
from pathlib import Path
from ralph_lsp.runs.claims import ChangeClaim
claim = ChangeClaim.take(Path(sys.argv[1]), sys.argv[2], "r-other-run")
print("holding", flush=True)
time.sleep(60)
"""


def test_restore_is_refused_while_another_change_runs(project: Path) -> None:
    cli(project, "run", CHANGE, "--agent", "demo")
    (project / "scratch.txt").write_text("keep me\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(project), "add-farewell"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        proc = cli(project, "restore", CHANGE, "--iteration", "1", check=False)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 2, proc.stdout
    assert "add-farewell" in proc.stderr and f"pid {holder.pid}" in proc.stderr
    assert "r-other-run" in proc.stderr
    assert (project / "scratch.txt").read_text() == "keep me\n"
    assert "- [x] 3.1" in (project / TASKS).read_text()


# -- fault 7: a stale registration of our worktree -------------------------------------------
def test_a_stale_worktree_registration_does_not_break_later_runs(
    project: Path, tmp_path: Path
) -> None:
    import shutil

    git(project, "commit", "-q", "-m", "staged work")
    common = project / ".git"
    ours = common / "ralph" / "worktrees" / CHANGE
    git(project, "worktree", "add", "-q", "-b", f"ralph/{CHANGE}", str(ours), "HEAD")
    shutil.rmtree(ours)  # a crashed run's worktree, deleted by hand
    users = tmp_path / "users-own"
    git(project, "worktree", "add", "-q", "-b", "mine", str(users))
    shutil.rmtree(users)  # the user's own stale registration: not ours to prune
    proc = cli(project, "run", CHANGE, "--agent", "demo", "--isolation", "worktree", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "stale" in proc.stdout
    listed = git(project, "worktree", "list", "--porcelain")
    assert str(users) in listed and str(ours) not in listed


# -- settle: an agent's own commits stay on the run's branch ------------------------------------
COMMITTING_AGENT = """
import re, subprocess, sys
from pathlib import Path
prompt = sys.argv[sys.argv.index("-p") + 1]
tasks = Path(next(l[12:] for l in prompt.splitlines() if l.startswith("Tasks file: ")))
text = tasks.read_text()
new = re.sub(r"^(\\s*- )\\[ \\]", r"\\1[x]", text, count=1, flags=re.M)
tasks.write_text(new)
n = new.count("[x]")
Path(f"agent_{n}.txt").write_text(f"agent commit {n}\\n")
ident = ["-c", "user.name=Agent", "-c", "user.email=agent@example.com"]
subprocess.run(["git", *ident, "add", "-A"], check=True)
subprocess.run(["git", *ident, "commit", "-q", "-m", f"agent: my commit {n}"], check=True)
Path(f"after_{n}.txt").write_text("left uncommitted by the agent\\n")
"""


def test_the_agents_own_commits_stay_on_the_worktree_branch(project: Path, tmp_path: Path) -> None:
    git(project, "commit", "-q", "-m", "staged work")
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent(COMMITTING_AGENT))
    cmd = f"{sys.executable} {agent} -p {{prompt}}"
    proc = cli(
        project,
        *("run", CHANGE, "--agent-command", cmd, "--isolation", "worktree"),
        *("--max-iterations", "2"),
        check=False,
    )
    assert "iteration 2" in proc.stdout, proc.stdout + proc.stderr
    log = git(project, "log", "--format=%s", f"main..ralph/{CHANGE}").splitlines()
    assert "agent: my commit 1" in log and "agent: my commit 2" in log, log
    assert log[0].startswith(f"ralph: {CHANGE} iteration 2"), log
    branch_files = git(project, "ls-tree", "-r", "--name-only", f"ralph/{CHANGE}").split()
    assert {"agent_1.txt", "agent_2.txt", "after_1.txt", "after_2.txt"} <= set(branch_files)
    diff = cli(project, "diff", CHANGE, "--iteration", "2")
    assert "agent_2.txt" in diff.stdout and "agent_1.txt" not in diff.stdout
    assert os.path.exists(project / "notes.txt")
