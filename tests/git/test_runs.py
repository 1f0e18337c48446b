"""Whole runs of the demo agent in real git repositories, through the real command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.git.conftest import NEEDS_GIT, fingerprint, git

CHANGE = "add-greeting-cli"
RUN = [sys.executable, "-m", "ralph_lsp", "run"]
TASKS = f"openspec/changes/{CHANGE}/tasks.md"

pytestmark = NEEDS_GIT


def cli(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RALPH_DEMO_DELAY="0", NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "ralph_lsp", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"ralph-lsp {' '.join(args)}: {proc.returncode}\n{proc.stderr}")
    return proc


def here(root: Path) -> str:
    """Where the root's checkpoints of CHANGE are: refs/ralph/@<rootId>/<change>."""
    from ralph_lsp.git.refs import change_prefix

    return change_prefix(root, CHANGE)


def record(root: Path) -> dict[str, object]:
    folder = next((root / ".ralph" / "runs").iterdir())
    data: dict[str, object] = json.loads((folder / "record.json").read_text())
    return data


def test_a_run_leaves_the_users_git_state_alone_and_each_iteration_can_be_seen(
    project: Path,
) -> None:
    before = fingerprint(project)
    proc = cli(project, "run", CHANGE, "--agent", "demo")
    assert proc.stdout.splitlines()[-1].startswith("succeeded:")
    after = fingerprint(project)
    # The user's index, HEAD, branches and stash are byte-identical; their files too, except
    # what the agent edited.
    for key in ("index", "HEAD", "head_commit", "branches", "stash", "stash_log"):
        assert after[key] == before[key], key
    iterations = record(project)["iterations"]
    assert isinstance(iterations, list) and len(iterations) == 3
    edited = {p for it in iterations for p in it["filesChanged"]}
    changed = {
        p
        for p in set(before["files"]) | set(after["files"])  # type: ignore[call-overload]
        if before["files"].get(p) != after["files"].get(p)  # type: ignore[attr-defined]
    }
    assert changed == edited and TASKS in edited
    # git status shows what it showed before, plus the agent's own edits (the demo agent writes
    # the example's code and tests, and checks the boxes).
    status_lines = set(str(after["status"]).splitlines())
    added = status_lines - set(str(before["status"]).splitlines())
    assert {line[3:] for line in added} <= edited and f" M {TASKS}" in added
    # Iteration 2's diff holds exactly the files iteration 2 changed.
    diff = cli(project, "diff", CHANGE, "--iteration", "2")
    two = iterations[1]
    files = sorted(
        line[len("+++ b/") :] for line in diff.stdout.splitlines() if line.startswith("+++ b/")
    )
    assert files == sorted(two["filesChanged"])
    assert "+- [x] 2.1" in diff.stdout and "+- [x] 1.1" not in diff.stdout
    assert (
        two["checkpoint"]
        == git(project, "rev-parse", f"{here(project)}/{record(project)['runId']}/2").strip()
    )


def test_restore_an_iteration_then_undo_it(project: Path) -> None:
    cli(project, "run", CHANGE, "--agent", "demo")
    finished = fingerprint(project)
    proc = cli(project, "restore", CHANGE, "--iteration", "1")
    text = (project / TASKS).read_text()
    assert "- [x] 1.3" in text and "- [ ] 2.1" in text
    undo = proc.stdout.splitlines()[-1].split()
    assert undo[:3] == ["ralph-lsp", "restore", CHANGE] and undo[3] == "--checkpoint"
    restored = fingerprint(project)
    assert restored["index"] == finished["index"] and restored["HEAD"] == finished["HEAD"]
    cli(project, *undo[1:])
    assert fingerprint(project) == finished


def test_outside_git_a_run_works_with_a_note(tmp_path: Path) -> None:
    from tests.conftest import EXAMPLE

    root = tmp_path / "plain"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".ralph"))
    proc = cli(root, "run", CHANGE, "--agent", "demo")
    assert proc.stdout.splitlines()[-1].startswith("succeeded:")
    assert "checkpoints are off: the project is not in a git work tree" in proc.stdout
    assert all(it["checkpoint"] is None for it in record(root)["iterations"])  # type: ignore[union-attr]
    refused = cli(root, "run", CHANGE, "--agent", "demo", "--isolation", "worktree", check=False)
    assert refused.returncode == 2 and "needs a git work tree" in refused.stderr
    nodiff = cli(root, "diff", CHANGE, check=False)
    assert nodiff.returncode == 2 and "not in a git work tree" in nodiff.stderr


def test_no_checkpoints_flag(project: Path) -> None:
    cli(project, "run", CHANGE, "--agent", "demo", "--no-checkpoints")
    assert git(project, "for-each-ref", "refs/ralph") == ""


def add_second_change(repo: Path) -> str:
    other = "add-farewell"
    src = repo / "openspec" / "changes" / CHANGE
    shutil.copytree(src, src.parent / other)
    git(repo, "add", "openspec")
    return other


def test_two_worktree_runs_in_parallel_leave_the_main_work_tree_untouched(project: Path) -> None:
    other = add_second_change(project)
    git(project, "commit", "-q", "-m", "two changes")  # commits the staged notes.txt too
    before = fingerprint(project)
    env = dict(os.environ, RALPH_DEMO_DELAY="0.05")
    procs = [
        subprocess.Popen(
            [*RUN, name, "--agent", "demo", "--isolation", "worktree"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in (CHANGE, other)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for (stdout, stderr), p in zip(outputs, procs, strict=True):
        assert p.returncode == 0, stderr + stdout
        assert "nothing was merged" in stdout and "git merge ralph/" in stdout
    after = fingerprint(project)
    new_branches = str(after.pop("branches")).replace(str(before.pop("branches")), "")
    assert after == before  # not one file of the main work tree changed, nor its index
    assert sorted(line.split("\t")[1] for line in new_branches.splitlines()) == [
        f"refs/heads/ralph/{other}",
        f"refs/heads/ralph/{CHANGE}",
    ]
    for name in (CHANGE, other):
        log = git(project, "log", "--format=%s", f"main..ralph/{name}").splitlines()
        assert log[0] == f"ralph: {name} iteration 3 · 8/8 tasks", log
        assert len(log) == 3
        tasks = git(project, "show", f"ralph/{name}:openspec/changes/{name}/tasks.md")
        assert "- [ ]" not in tasks
        assert name in git(project, "diff", "--name-only", f"main...ralph/{name}")
    # The worktrees are gone when the runs end; the branches stay for review.
    assert "ralph/worktrees" not in git(project, "worktree", "list")


def test_a_second_worktree_run_continues_the_branch(project: Path) -> None:
    git(project, "commit", "-q", "-m", "staged work")
    env_stop = ("--max-iterations", "1")
    first = cli(
        project, "run", CHANGE, "--agent", "demo", "--isolation", "worktree", *env_stop, check=False
    )
    assert first.returncode == 4, first.stdout  # exhausted after one iteration
    second = cli(project, "run", CHANGE, "--agent", "demo", "--isolation", "worktree")
    assert "continuing the existing branch" in second.stdout
    log = git(project, "log", "--format=%s", f"main..ralph/{CHANGE}").splitlines()
    assert log == [
        f"ralph: {CHANGE} iteration 2 · 8/8 tasks",
        f"ralph: {CHANGE} iteration 1 · 5/8 tasks",
        f"ralph: {CHANGE} iteration 1 · 3/8 tasks",
    ]


def test_a_worktree_run_that_commits_nothing_leaves_no_branch(project: Path) -> None:
    git(project, "commit", "-q", "-m", "staged work")
    missing = project / "no-such-agent"
    proc = cli(
        project,
        *("run", CHANGE, "--agent-command", str(missing), "--isolation", "worktree"),
        check=False,
    )
    assert proc.returncode != 0
    assert git(project, "branch", "--list", f"ralph/{CHANGE}") == ""
    assert "ralph/worktrees" not in git(project, "worktree", "list")


def test_a_branch_checked_out_elsewhere_is_refused(project: Path, tmp_path: Path) -> None:
    git(project, "commit", "-q", "-m", "staged work")
    git(project, "worktree", "add", "-q", "-b", f"ralph/{CHANGE}", str(tmp_path / "mine"))
    proc = cli(project, "run", CHANGE, "--agent", "demo", "--isolation", "worktree", check=False)
    assert proc.returncode == 1
    last = proc.stdout.splitlines()[-1]
    assert last.startswith("failed: branch ralph/") and str(tmp_path / "mine") in last


def test_restore_is_refused_while_the_change_runs(project: Path) -> None:
    from ralph_lsp.runs.history import _process_identity

    cli(project, "run", CHANGE, "--agent", "demo")
    folder = next((project / ".ralph" / "runs").iterdir())
    data = json.loads((folder / "record.json").read_text())
    data["state"] = "running"
    (folder / "record.json").write_text(json.dumps(data))
    (folder / "owner.pid").write_text(_process_identity(os.getpid()))  # alive: this test
    before = fingerprint(project)
    proc = cli(project, "restore", CHANGE, "--iteration", "1", check=False)
    assert proc.returncode == 2 and "is running" in proc.stderr
    assert fingerprint(project) == before


def test_a_worktree_runs_iterations_are_seen_with_diff_but_not_restored_here(
    project: Path,
) -> None:
    git(project, "commit", "-q", "-m", "staged work")
    cli(project, "run", CHANGE, "--agent", "demo", "--isolation", "worktree")
    diff = cli(project, "diff", CHANGE, "--iteration", "2")
    assert "+- [x] 2.1" in diff.stdout
    before = fingerprint(project)
    proc = cli(project, "restore", CHANGE, "--iteration", "1", check=False)
    assert proc.returncode == 2 and "worked in its own worktree on branch ralph/" in proc.stderr
    assert fingerprint(project) == before


def test_history_retention_drops_the_checkpoints_of_runs_it_removes(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from ralph_lsp.loop.engine import Engine
    from ralph_lsp.settings import Settings

    def runs_with_refs() -> set[str]:
        refs = git(project, "for-each-ref", "--format=%(refname)", here(project)).split()
        return {ref.split("/")[4] for ref in refs}

    for _ in range(3):
        cli(project, "run", CHANGE, "--agent", "demo", "--max-iterations", "1", check=False)
    assert len(runs_with_refs()) == 3
    (project / TASKS).write_text((project / TASKS).read_text().replace("[x]", "[ ]"))

    async def one_more() -> None:  # historyKeepRuns has no CLI flag: through the engine
        engine = Engine()
        await engine.start(project, CHANGE, Settings(agent="demo", history_keep_runs=2))
        await engine.wait(project, CHANGE)

    monkeypatch.setenv("RALPH_DEMO_DELAY", "0")
    asyncio.run(one_more())
    kept = {p.name for p in (project / ".ralph" / "runs").iterdir()}
    assert len(kept) == 2 and runs_with_refs() == kept


def test_a_worktree_run_in_a_repository_without_commits_is_refused(tmp_path: Path) -> None:
    from tests.conftest import EXAMPLE
    from tests.git.conftest import init_repo

    root = init_repo(tmp_path / "fresh")
    shutil.copytree(EXAMPLE, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".ralph"))
    proc = cli(root, "run", CHANGE, "--agent", "demo", "--isolation", "worktree", check=False)
    assert proc.returncode == 2 and "needs a commit to start from" in proc.stderr
    assert not (root / ".ralph" / "runs").exists() or not any((root / ".ralph" / "runs").iterdir())
