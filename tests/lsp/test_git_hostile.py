"""A stranger's repository through the server (issue 25, fault 2): ``ralph.diff``,
``ralph.fileAt`` and ``ralph.restore`` run none of the programs its ``.git/config`` names, and
while the workspace is untrusted they are refused outright."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.git.conftest import NEEDS_GIT, git
from tests.git.hostile import CHANGE, Canaries, arm, hello_repo, partial_clone
from tests.lsp.conftest import StartSession, wait_until

TASKS = f"openspec/changes/{CHANGE}/tasks.md"

pytestmark = NEEDS_GIT


async def test_diff_file_at_and_restore_run_none_of_the_repositorys_programs(
    start_session: StartSession, tmp_path: Path
) -> None:
    repo = hello_repo(tmp_path / "hello")
    canaries = Canaries(tmp_path)
    arm(repo, canaries)
    canaries.clear()
    s = await start_session(repo, init={"trusted": True}, settings={"agent": "demo"})
    await s.command("ralph.run", {"change": CHANGE})
    await wait_until(
        lambda: s.statuses and s.statuses[-1]["state"] == "succeeded", timeout=60, what="success"
    )
    d = await s.command("ralph.diff", {"change": CHANGE, "iteration": 2})
    assert "+- [x] 2.1" in d["patch"]
    text = await s.command(
        "ralph.fileAt", {"root": repo.as_uri(), "checkpoint": d["after"]["commit"], "path": TASKS}
    )
    assert "- [x] 2.1" in text["text"]
    restored = await s.command("ralph.restore", {"change": CHANGE, "iteration": 1})
    await s.command("ralph.restore", {"change": CHANGE, "checkpoint": restored["undo"]["ref"]})
    assert canaries.hits() == []


async def test_a_partial_clones_missing_blob_is_never_fetched(
    start_session: StartSession, tmp_path: Path
) -> None:
    clone, old = partial_clone(tmp_path)
    git(clone, "update-ref", f"refs/ralph/{CHANGE}/r-1/0", old)
    git(clone, "update-ref", f"refs/ralph/{CHANGE}/r-1/1", "HEAD")
    canaries = Canaries(tmp_path)
    arm(clone, canaries)
    canaries.clear()
    s = await start_session(clone, init={"trusted": True})
    with pytest.raises(JsonRpcException):
        await s.command(
            "ralph.fileAt", {"root": clone.as_uri(), "checkpoint": old, "path": "f.txt"}
        )
    with pytest.raises(JsonRpcException):
        await s.command("ralph.diff", {"change": CHANGE, "runId": "r-1", "iteration": 1})
    assert canaries.hits() == []


async def test_untrusted_diff_and_file_at_are_refused(
    start_session: StartSession, tmp_path: Path
) -> None:
    clone, old = partial_clone(tmp_path)
    git(clone, "update-ref", f"refs/ralph/{CHANGE}/r-1/0", old)
    git(clone, "update-ref", f"refs/ralph/{CHANGE}/r-1/1", "HEAD")
    canaries = Canaries(tmp_path)
    arm(clone, canaries)
    canaries.clear()
    s = await start_session(clone, init={"trusted": False})
    for name, arg in (
        ("ralph.diff", {"change": CHANGE, "runId": "r-1", "iteration": 1}),
        ("ralph.fileAt", {"root": clone.as_uri(), "checkpoint": "HEAD~0", "path": "f.txt"}),
        ("ralph.fileAt", {"root": clone.as_uri(), "checkpoint": old, "path": "f.txt"}),
    ):
        with pytest.raises(JsonRpcException) as info:
            await s.command(name, arg)
        assert "this workspace is not trusted" in str(info.value.message), name
    assert canaries.hits() == []
