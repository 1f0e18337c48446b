"""``ralph.run`` with ``followUp`` (SPEC §12): review comments as the guidance of a follow-up run
on the change's branch. The agent runs on them even when every task is already checked; without
``followUp`` such a run ends before any spawn. Real LSP client and server, real git, demo agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.git.conftest import NEEDS_GIT, git, init_repo
from tests.lsp.conftest import CHANGE, Session, StartSession, wait_until

pytestmark = NEEDS_GIT
COMMENT = "Review comments on ralph/add-greeting-cli: 1. src/x.py line 3: rename it"


@pytest.fixture
def repo(workspace: Path) -> Path:
    init_repo(workspace)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "start")
    return workspace


async def run_to_end(s: Session, arg: dict[str, Any]) -> dict[str, Any]:
    started = await s.command("ralph.run", {"change": CHANGE, **arg})
    await wait_until(
        lambda: any(
            st["runId"] == started["runId"] and st["state"] != "running" for st in s.statuses
        ),
        timeout=60,
        what="the run's end",
    )
    (record,) = [
        r
        for r in (await s.command("ralph.history", {"change": CHANGE}))["runs"]
        if r["runId"] == started["runId"]
    ]
    return dict(record)


async def test_a_follow_up_run_spawns_on_its_guidance_on_the_same_branch(
    start_session: StartSession, repo: Path
) -> None:
    s = await start_session(
        repo,
        init={"trusted": True},
        settings={"agent": "demo", "isolation": "worktree"},
        env={"RALPH_DEMO_DELAY": "0.05"},
    )
    first = await run_to_end(s, {})
    assert first["state"] == "succeeded"
    tip = git(repo, "rev-parse", f"ralph/{CHANGE}").strip()
    # every task is checked: a plain second run ends before any spawn
    plain = await run_to_end(s, {"guidance": "ignored"})
    assert plain["state"] == "succeeded" and plain["iterations"] == []
    assert "already checked" in plain["reason"]
    follow = await run_to_end(s, {"guidance": COMMENT, "followUp": True})
    assert follow["state"] == "succeeded", follow["reason"]
    assert len(follow["iterations"]) == 1
    assert [g["text"] for g in follow["guidance"]] == [COMMENT]
    assert follow["guidance"][0].get("deliveredIn") == 1
    assert follow["worktree"]["branch"] == f"ralph/{CHANGE}"
    # it worked on the same branch: the first run's tip is in its history
    git(repo, "merge-base", "--is-ancestor", tip, f"ralph/{CHANGE}")


async def test_follow_up_needs_guidance_and_a_boolean(
    start_session: StartSession, repo: Path
) -> None:
    s = await start_session(repo, init={"trusted": True}, settings={"agent": "demo"})
    for arg, words in (
        ({"followUp": True}, "needs guidance"),
        ({"followUp": "yes", "guidance": "x"}, '"followUp" must be true or false'),
    ):
        with pytest.raises(JsonRpcException) as info:
            await s.command("ralph.run", {"change": CHANGE, **arg})
        assert words in str(info.value.message)
    assert s.statuses == []
