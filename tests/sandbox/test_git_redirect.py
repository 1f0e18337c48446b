"""A sandboxed agent cannot redirect the host's git (issue 46, fault 1): it points git at a
common directory of its own (``.git/commondir``, a worktree's ``commondir``, ``gitdir``,
``locked`` and ``config.worktree``, or a ``.git`` of its own in a root below the repository's
top) whose config names a ``core.fsmonitor`` command. After the run, a plain ``git status`` of
the user's never runs that command, the repository is as it was, and the run's history says
what was undone."""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.conftest import Tools, User, as_user, chown_tree, user_env, user_git

pytestmark = pytest.mark.slow
CHANGE = "redirect"


@pytest.fixture
def repo(sandbox_user: User, user_tools: Tools) -> Iterator[Path]:
    """A git repository with one commit in the user's home: its top holds ``sub/``, an
    OpenSpec root with one change."""
    top = sandbox_user.home / f"redirect-{secrets.token_hex(4)}"
    for root in (top, top / "sub"):
        change = root / "openspec" / "changes" / CHANGE
        change.mkdir(parents=True)
        (change / "tasks.md").write_text("## 1. Everything\n\n- [ ] 1.1 Do it\n")
    (top / "README.md").write_text("a project\n")
    chown_tree(top, sandbox_user)
    user_git(sandbox_user, user_tools, top, "init", "-q", "-b", "main")
    user_git(sandbox_user, user_tools, top, "add", "-A")
    user_git(sandbox_user, user_tools, top, "commit", "-q", "-m", "start")
    yield top
    subprocess.run(["rm", "-rf", str(top)], check=False)


def run(
    user: User, tools: Tools, root: Path, canary: str | Path, *extra: str, verify: bool = False
) -> str:
    """A run whose agent (or, with ``verify``, whose verification command) is hostile."""
    hostile = f"{tools.scripts / 'redirect_git.py'} {canary}"
    agent, check = (str(tools.scripts / "check_all.py"), hostile) if verify else (hostile, "true")
    argv = [tools.ralph, "run", CHANGE, "--root", str(root), "--max-iterations", "1"]
    argv += ["--agent-command", agent, "--verify", check, *extra]
    done = as_user(user, argv, user_env(user, tools))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "sandbox: bwrap" in output, output
    return output


def refusals(root: Path) -> list[str]:
    [record] = [json.loads(p.read_text()) for p in (root / ".ralph/runs").glob("*/record.json")]
    assert record["state"] == "succeeded"
    return [r["rule"] for it in record["iterations"] for r in it["refusals"]]


def said(rules: list[str], text: str) -> bool:
    """Whether the history's refusals (``Sandbox(…)``) hold ``text``."""
    assert any(text in rule for rule in rules), rules
    return True


def plain_git(user: User, tools: Tools, where: Path, *args: str) -> str:
    """The user's own git, as they type it: the repository's config obeyed."""
    done = as_user(user, ["git", *args], user_env(user, tools), cwd=where)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("who", ["the agent", "a verification command"])
def test_nothing_sandboxed_can_redirect_git_through_commondir(
    sandbox_user: User, user_tools: Tools, repo: Path, who: str
) -> None:
    canary = sandbox_user.home / f"fsmonitor-ran-{secrets.token_hex(4)}"
    config = (repo / ".git/config").read_text()
    output = run(sandbox_user, user_tools, repo, canary, verify=who != "the agent")
    assert "REDIRECT write .git/commondir: DONE" in output  # what the ro-binds cannot stop
    plain_git(sandbox_user, user_tools, repo, "status", "--porcelain")
    assert not canary.exists(), "the agent's fsmonitor ran on the host"
    assert not (repo / ".git/commondir").exists()
    assert (repo / ".git/config").read_text() == config
    assert plain_git(sandbox_user, user_tools, repo, "log", "--format=%s") == "start\n"
    assert said(refusals(repo), f"{who} wrote .git/commondir: made; undone")
    assert f"{who} wrote .git/commondir: made; undone" in output


def test_an_agent_cannot_put_a_git_directory_of_its_own_in_place(
    sandbox_user: User, user_tools: Tools, repo: Path
) -> None:
    canary = sandbox_user.home / f"fsmonitor-ran-{secrets.token_hex(4)}"
    head = plain_git(sandbox_user, user_tools, repo, "rev-parse", "HEAD")
    output = run(sandbox_user, user_tools, repo, f"{canary} replace")
    plain_git(sandbox_user, user_tools, repo, "status", "--porcelain")
    assert not canary.exists(), "the agent's fsmonitor ran on the host"
    assert "REDIRECT replace .git: FAILED" in output and "busy" in output, output
    assert not (repo / ".git-moved").exists()
    assert plain_git(sandbox_user, user_tools, repo, "rev-parse", "HEAD") == head


def test_an_agent_cannot_write_a_config_file_the_repository_includes(
    sandbox_user: User, user_tools: Tools, repo: Path
) -> None:
    # a project's shared config, included by the user's own .git/config, not made yet
    user_git(sandbox_user, user_tools, repo, "config", "include.path", "../shared.gitconfig")
    canary = sandbox_user.home / f"fsmonitor-ran-{secrets.token_hex(4)}"
    output = run(sandbox_user, user_tools, repo, f"{canary} include")
    plain_git(sandbox_user, user_tools, repo, "status", "--porcelain")
    assert not canary.exists(), "the agent's fsmonitor ran on the host"
    assert not (repo / "shared.gitconfig").exists()
    assert said(refusals(repo), "the agent wrote shared.gitconfig: made; undone")
    assert "REDIRECT write shared.gitconfig: DONE" in output


def test_an_agent_cannot_make_a_repository_of_its_own_in_a_root_below_the_top(
    sandbox_user: User, user_tools: Tools, repo: Path
) -> None:
    root = repo / "sub"
    canary = sandbox_user.home / f"fsmonitor-ran-{secrets.token_hex(4)}"
    run(sandbox_user, user_tools, root, canary)
    plain_git(sandbox_user, user_tools, root, "status", "--porcelain")
    assert not canary.exists(), "the agent's fsmonitor ran on the host"
    assert not (root / ".git").exists()
    top = plain_git(sandbox_user, user_tools, root, "rev-parse", "--show-toplevel").strip()
    assert top == str(repo)
    assert said(refusals(root), "the agent wrote .git: made; undone")


def test_an_agent_cannot_redirect_its_worktree(
    sandbox_user: User, user_tools: Tools, repo: Path
) -> None:
    canary = sandbox_user.home / f"fsmonitor-ran-{secrets.token_hex(4)}"
    output = run(sandbox_user, user_tools, repo, canary, "--isolation", "worktree")
    admin = repo / ".git/worktrees" / CHANGE
    worktree = repo / ".git/ralph/worktrees" / CHANGE
    for where in (repo, worktree):  # the user looks into a worktree the run says it kept
        if where.exists():
            plain_git(sandbox_user, user_tools, where, "status", "--porcelain")
    assert not canary.exists(), "the agent's fsmonitor ran on the host"
    # the worktree's own pointers exist: bound read-only, they cannot be written at all
    for name in ("commondir", "gitdir"):
        assert f"REDIRECT write {name}: FAILED" in output, output
    # the lock made inside was undone, so the worktree was removed as every run's is
    assert not admin.exists() and not worktree.exists(), output
    rules = refusals(repo)
    for name in ("locked", "config.worktree"):
        assert said(rules, f"the agent wrote .git/worktrees/{CHANGE}/{name}: made; undone")
    tasks = plain_git(
        sandbox_user,
        user_tools,
        repo,
        "show",
        f"ralph/{CHANGE}:{Path('openspec/changes') / CHANGE / 'tasks.md'}",
    )
    assert "- [x] 1.1" in tasks
