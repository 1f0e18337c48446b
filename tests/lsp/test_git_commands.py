"""``ralph.diff``, ``ralph.restore`` and ``ralph.fileAt`` through a real LSP client and server."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from pygls.exceptions import JsonRpcException

from tests.git.conftest import NEEDS_GIT, fingerprint, git, init_repo
from tests.lsp.conftest import CHANGE, Session, StartSession, wait_until

TASKS = f"openspec/changes/{CHANGE}/tasks.md"

pytestmark = NEEDS_GIT


@pytest.fixture
def repo(workspace: Path) -> Path:
    init_repo(workspace)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "start")
    (workspace / "mine.txt").write_text("the user's own, uncommitted\n")
    return workspace


async def run_demo(s: Session) -> None:
    await s.command("ralph.run", {"change": CHANGE})
    await wait_until(
        lambda: s.statuses and s.statuses[-1]["state"] == "succeeded", timeout=60, what="success"
    )


async def refused(s: Session, name: str, arg: dict[str, Any]) -> str:
    with pytest.raises(JsonRpcException) as info:
        await s.command(name, arg)
    return str(info.value.message)


async def test_diff_file_at_restore_and_undo(start_session: StartSession, repo: Path) -> None:
    s = await start_session(repo, init={"trusted": True}, settings={"agent": "demo"})
    await run_demo(s)
    finished = fingerprint(repo)
    d = await s.command("ralph.diff", {"change": CHANGE, "iteration": 2})
    assert d["iteration"] == 2 and d["before"]["ref"].endswith("/1")
    assert d["after"]["ref"].endswith("/2") and len(d["after"]["commit"]) == 40
    # Iteration 2 (story 2, --shout): the demo agent's code and the checked boxes.
    files = {f["path"]: f for f in d["files"]}
    assert {p: f["status"] for p, f in files.items()} == {
        "hello/cli.py": "modified",
        TASKS: "modified",
    }
    assert "+- [x] 2.1" in d["patch"] and "--shout" in d["patch"]
    uri = urlsplit(files[TASKS]["afterUri"])
    assert uri.scheme == "ralph-checkpoint" and unquote(uri.path) == "/" + TASKS
    query = {k: v[0] for k, v in parse_qs(uri.query).items()}
    after = await s.command(
        "ralph.fileAt", {"root": query["root"], "checkpoint": query["checkpoint"], "path": TASKS}
    )
    assert "- [x] 2.2" in after["text"] and "- [ ] 3.1" in after["text"]
    before = await s.command(
        "ralph.fileAt",
        {"root": repo.as_uri(), "checkpoint": d["before"]["ref"], "path": TASKS},
    )
    assert "- [ ] 2.1" in before["text"]
    restored = await s.command("ralph.restore", {"change": CHANGE, "iteration": 1})
    assert restored["restored"]["ref"].endswith("/1")
    # Back to after iteration 1: what iterations 2 and 3 wrote is put back or removed.
    assert sorted(restored["written"]) == sorted(["README.md", "hello/cli.py", TASKS])
    assert restored["removed"] == ["tests/test_cli.py"]
    assert "- [ ] 2.1" in (repo / TASKS).read_text()
    assert (repo / "mine.txt").exists()
    await s.command("ralph.restore", {"change": CHANGE, "checkpoint": restored["undo"]["ref"]})
    assert fingerprint(repo) == finished


async def test_refusals_say_what_to_do(
    start_session: StartSession, repo: Path, tmp_path: Path
) -> None:
    s = await start_session(repo, init={"trusted": True}, settings={"agent": "demo"})
    message = await refused(s, "ralph.diff", {"change": CHANGE, "iteration": 1})
    assert "no checkpoints of 'add-greeting-cli' yet" in message
    await run_demo(s)
    message = await refused(s, "ralph.diff", {"change": CHANGE, "iteration": 9})
    assert "no checkpoint after iteration 9 (iterations: 1, 2, 3)" in message
    message = await refused(
        s, "ralph.fileAt", {"root": repo.as_uri(), "checkpoint": "HEAD", "path": TASKS}
    )
    assert "is not a checkpoint" in message
    assert "unknown change 'nope'" in await refused(s, "ralph.diff", {"change": "nope"})
    plain = tmp_path / "plain"
    shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git", ".ralph"))
    s2 = await start_session(plain, init={"trusted": True})
    assert "not in a git work tree" in await refused(s2, "ralph.diff", {"change": CHANGE})


async def test_a_worktree_run_shows_the_worktrees_progress_and_leaves_the_files_alone(
    start_session: StartSession, repo: Path
) -> None:
    s = await start_session(
        repo,
        init={"trusted": True},
        settings={"agent": "demo", "isolation": "worktree"},
        env={"RALPH_DEMO_DELAY": "0.3"},
    )
    before = fingerprint(repo)
    await s.command("ralph.run", {"change": CHANGE})
    running = await wait_until(
        lambda: next(
            (st for st in s.statuses if st["state"] == "running" and st.get("worktree")), None
        ),
        what="a status naming the worktree",
    )
    assert running["worktree"]["branch"] == f"ralph/{CHANGE}"
    assert ".git/ralph/worktrees/" in running["worktree"]["tasksUri"]

    async def done_lenses() -> int:
        return sum(1 for _, title, _, _ in await s.lenses() if title == "✓ done")

    seen = 0
    while not (s.statuses and s.statuses[-1]["state"] != "running"):
        seen = max(seen, await done_lenses())
        if seen >= 2:
            break
        await asyncio.sleep(0.05)
    assert seen >= 2  # the lenses of the user's tasks.md follow the worktree's checks
    assert "- [x]" not in (repo / TASKS).read_text()  # while the user's file is unchanged
    await wait_until(
        lambda: s.statuses[-1]["state"] == "succeeded", timeout=60, what="the run's success"
    )
    assert "review: git diff HEAD...ralph/add-greeting-cli" in s.statuses[-1]["reason"]
    await wait_until(lambda: "git merge ralph/add-greeting-cli" in s.logs(), what="the hint")
    assert fingerprint(repo) == before | {"branches": fingerprint(repo)["branches"]}


async def test_restore_is_refused_while_another_change_of_this_server_runs(
    start_session: StartSession, repo: Path
) -> None:
    other = "add-farewell"
    src = repo / "openspec" / "changes" / CHANGE
    shutil.copytree(src, src.parent / other)
    slow = {"agent": "demo", "env": {"RALPH_DEMO_DELAY": "3"}}
    s = await start_session(repo, init={"trusted": True}, settings=slow)
    before = fingerprint(repo)
    await s.command("ralph.run", {"change": other})
    try:
        message = await refused(s, "ralph.restore", {"change": CHANGE, "iteration": 1})
    finally:
        await s.command("ralph.stop", {"change": other})
    assert f"change '{other}' is running in this work tree (pid " in message, message
    assert ", run r-" in message
    assert fingerprint(repo)["files"] == before["files"]
