"""The reviewer's sandbox profile (SPEC §13), with real bubblewrap, as an ordinary user: the
whole work tree read-only but the change's task file (its folder writable for an editor's
rename, everything else in it read-only). A hostile reviewer (a real program) that
writes a source file, creates a file, unchecks and checks tasks and appends one leaves the
source as it was and no new file, has its edit of the task file undone, and its round refused."""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralph_lsp.sandbox.policy import SandboxPolicy, reviewer_policy
from tests.sandbox.conftest import Tools, User, as_user, chown_tree, user_env, user_git

pytestmark = pytest.mark.slow
CHANGE = "reviewed"


def test_the_reviewers_policy_keeps_only_the_task_files_and_git_writable(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / ".git" / "objects").mkdir(parents=True)
    tasks = root / "openspec" / "changes" / "c" / "tasks.md"
    tasks.parent.mkdir(parents=True)
    tasks.write_text("- [x] 1.1 a\n")
    (tasks.parent / "proposal.md").write_text("## Why\n")
    (tasks.parent / "specs").mkdir()
    own = root / "build"
    policy = SandboxPolicy(
        work_root=root,
        tmp_dir=tmp_path / "t",
        writable=(root, tmp_path / "t", root / ".git", tmp_path / "state", own),
        hidden=(tmp_path / "secret",),
        read_only=(root / ".ralph",),
    )
    confined = reviewer_policy(policy, [tasks, tmp_path / "elsewhere.md"])
    # the task file's folder (an editor renames a new file over it), all else in it read-only
    assert confined.writable == (tmp_path / "t", root / ".git", tmp_path / "state", tasks.parent)
    assert confined.read_only == (
        tasks.parent / "proposal.md",
        tasks.parent / "specs",
        root / ".ralph",
    )
    assert confined.hidden == policy.hidden
    assert confined.read_only_first == (root,)  # seen inside (under a fresh /tmp too), read-only


@pytest.fixture
def workspace(sandbox_user: User, user_tools: Tools) -> Iterator[Path]:
    """A git work tree with one change in the user's home."""
    root = sandbox_user.home / f"review-{secrets.token_hex(4)}"
    change = root / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (change / "tasks.md").write_text("## 1. Everything\n\n- [ ] 1.1 Do it\n- [ ] 1.2 And this\n")
    (change / "proposal.md").write_text("## Why\n\nBecause.\n")
    (root / "README.md").write_text("a project\n")
    chown_tree(sandbox_user.home, sandbox_user)
    user_git(sandbox_user, user_tools, root, "init", "-q")
    user_git(sandbox_user, user_tools, root, "add", "-A")
    user_git(sandbox_user, user_tools, root, "commit", "-q", "-m", "start")
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=False)


def test_a_hostile_reviewer_changes_nothing_and_its_round_is_refused(
    sandbox_user: User, user_tools: Tools, workspace: Path
) -> None:
    root = workspace
    python = str(user_tools.venv / "bin" / "python")
    reviewer = f"{python} {user_tools.scripts / 'hostile_reviewer.py'}"
    argv = [user_tools.ralph, "run", CHANGE, "--root", str(root), "--verify", "true"]
    argv += ["--agent-command", str(user_tools.scripts / "check_all.py")]
    argv += ["--review-agent", reviewer, "--review-max-rounds", "1"]
    done = as_user(sandbox_user, argv, user_env(sandbox_user, user_tools))
    output = done.stdout + done.stderr
    assert any(line.startswith("sandbox: bwrap") for line in output.splitlines()[:5]), output
    assert done.returncode != 0, output
    assert "the reviewer's edit was refused" in output.splitlines()[-1], output
    # the source is as it was, the new file was never made
    assert (root / "README.md").read_text() == "a project\n"
    assert not (root / "planted.py").exists()
    # the task file as the worker left it: the uncheck, the check and the append undone
    tasks = (root / "openspec" / "changes" / CHANGE / "tasks.md").read_text()
    assert tasks == "## 1. Everything\n\n- [x] 1.1 Do it\n- [x] 1.2 And this\n"
    [path] = (root / ".ralph" / "runs").glob("*/record.json")
    record = json.loads(path.read_text())
    [round_] = record["reviews"]
    assert round_["verdict"] == "refused" and round_["tasksAdded"] == []
    log = (path.parent / "review-1.log").read_text()
    assert "write a source file: FAILED (Read-only file system)" in log
    assert "create a file: FAILED (Read-only file system)" in log
    assert "uncheck a task: DONE" in log and "check a task: DONE" in log  # its one file
    status = as_user(
        sandbox_user, ["git", "status", "--porcelain"], user_env(sandbox_user, user_tools), cwd=root
    )
    # what the worker did (its checked boxes, its mark), and nothing of the reviewer's
    assert status.stdout == f" M openspec/changes/{CHANGE}/tasks.md\n?? agent-ran\n"
