"""What must work in a sandboxed run does, as an ordinary user (SPEC §10): the demo run, the
toolbox example's queue, a check that serves on 127.0.0.1, and an agent's own ``git commit`` in
worktree mode."""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.sandbox.conftest import Tools, User, as_user, chown_tree, user_env, user_git

pytestmark = pytest.mark.slow


@pytest.fixture
def scratch(sandbox_user: User) -> Iterator[Path]:
    folder = sandbox_user.home / f"scratch-{secrets.token_hex(4)}"
    folder.mkdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def copy_example(name: str, scratch: Path, user: User) -> Path:
    root = scratch / name
    shutil.copytree(REPO / "examples" / name, root, ignore=shutil.ignore_patterns(".ralph"))
    chown_tree(scratch, user)
    return root


def said_sandbox(output: str) -> None:
    first = output.splitlines()[:6]
    assert any(line.startswith("sandbox: bwrap ") for line in first), output


def records(root: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in (root / ".ralph").rglob("record.json")]


def test_the_demo_run_succeeds_sandboxed(
    sandbox_user: User, user_tools: Tools, scratch: Path
) -> None:
    root = copy_example("hello", scratch, sandbox_user)
    argv = [user_tools.ralph, "run", "add-greeting-cli", "--root", str(root), "--agent", "demo"]
    done = as_user(sandbox_user, argv, user_env(sandbox_user, user_tools))
    assert done.returncode == 0, done.stdout + done.stderr
    said_sandbox(done.stdout)
    assert "verification passed (make test)" in done.stdout
    [record] = records(root)
    assert record["state"] == "succeeded"
    assert record["sandbox"]["writable"][0] == str(root)  # type: ignore[index]


def test_the_toolbox_queue_succeeds_sandboxed(
    sandbox_user: User, user_tools: Tools, scratch: Path
) -> None:
    root = copy_example("toolbox", scratch, sandbox_user)
    changes = ["add-slugify", "add-title-case", "add-word-count"]
    argv = [user_tools.ralph, "run", *changes, "--root", str(root), "--agent", "demo"]
    done = as_user(sandbox_user, argv, user_env(sandbox_user, user_tools), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "done: 3/3 succeeded"
    runs = [r for r in records(root) if "sandbox" in r]
    assert len(runs) == 3 and all(r["sandbox"]["kind"] == "bwrap" for r in runs)  # type: ignore[index]


def one_change(scratch: Path, user: User) -> Path:
    root = scratch / "project"
    change = root / "openspec" / "changes" / "c"
    change.mkdir(parents=True)
    (change / "tasks.md").write_text("## 1. All\n\n- [ ] 1.1 Do it\n")
    chown_tree(scratch, user)
    return root


def test_a_check_that_serves_on_its_own_loopback_passes(
    sandbox_user: User, user_tools: Tools, scratch: Path
) -> None:
    root = one_change(scratch, sandbox_user)
    argv = [user_tools.ralph, "run", "c", "--root", str(root)]
    argv += ["--agent-command", str(user_tools.scripts / "check_all.py")]
    argv += ["--verify", str(user_tools.scripts / "loopback_check.py")]
    done = as_user(sandbox_user, argv, user_env(sandbox_user, user_tools))
    assert done.returncode == 0, done.stdout + done.stderr
    said_sandbox(done.stdout)
    assert "answered" in done.stdout


def test_an_agents_git_commit_works_in_worktree_mode(
    sandbox_user: User, user_tools: Tools, scratch: Path
) -> None:
    root = one_change(scratch, sandbox_user)
    user_git(sandbox_user, user_tools, root, "init", "-q", "-b", "main")
    user_git(sandbox_user, user_tools, root, "add", "-A")
    user_git(sandbox_user, user_tools, root, "commit", "-q", "-m", "start")
    hooks_before = sorted(p.name for p in (root / ".git" / "hooks").iterdir())
    argv = [user_tools.ralph, "run", "c", "--root", str(root), "--isolation", "worktree"]
    argv += ["--agent-command", str(user_tools.scripts / "commit_all.py"), "--verify", "true"]
    done = as_user(sandbox_user, argv, user_env(sandbox_user, user_tools))
    assert done.returncode == 0, done.stdout + done.stderr
    said_sandbox(done.stdout)
    log = user_git(sandbox_user, user_tools, root, "log", "--format=%s", "ralph/c")
    assert "agent commit" in log.splitlines(), log
    shown = user_git(sandbox_user, user_tools, root, "show", "ralph/c:feature.txt")
    assert shown == "made by the agent\n"
    assert sorted(p.name for p in (root / ".git" / "hooks").iterdir()) == hooks_before
