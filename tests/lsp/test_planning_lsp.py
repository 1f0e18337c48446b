"""Planning in the editor (SPEC §14), through a real pytest-lsp client: ralph.planChange starts a
planning run that ends planned, the planned change's proposal.md carries Approve and run,
Revise… and Discard, a revision plans again with the comment as guidance, and Discard moves the
folder to the trash only when confirmed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import Session, StartSession, wait_until

NAME = "add-farewell"
DESCRIPTION = "Say goodbye to each name. Should the farewell be localized?"


def ended(session: Session, state: str, count: int = 1) -> list[dict[str, Any]]:
    """The first ``count`` statuses of NAME in ``state``, once there are that many."""
    found = [s for s in session.statuses if s["change"] == NAME and s["state"] == state]
    return found[:count] if len(found) >= count else []


async def plan(s: Session) -> dict[str, Any]:
    started = await s.command("ralph.planChange", {"change": NAME, "description": DESCRIPTION})
    assert started["change"] == NAME and started["state"] == "running"
    (status,) = await wait_until(
        lambda: ended(s, "planned"), timeout=30, what="the planning run's end"
    )
    return status


async def test_plan_change_ends_planned_with_lenses_on_the_proposal(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace, settings={"agent": "demo"}, init={"trusted": True})
    status = await plan(s)
    assert status["kind"] == "plan"
    assert status["questions"] == ["Should the farewell be localized?"]
    assert "Should the farewell be localized?" in status["reason"]
    folder = workspace / "openspec" / "changes" / NAME
    assert (folder / "specs" / "farewell" / "spec.md").is_file()
    ref = {"change": NAME, "root": workspace.as_uri()}
    assert await s.lenses((folder / "proposal.md").as_uri()) == [
        (0, "▶ Approve and run", "ralph.run", [ref]),
        (0, "✎ Revise…", "ralph.revise", [{**ref, "questions": status["questions"]}]),
        (0, "🗑 Discard", "ralph.discard", [ref]),
    ]
    await s.command("ralph.revisePlan", {"change": NAME, "text": "Not localized."})
    await wait_until(lambda: ended(s, "planned", 2), timeout=30, what="the revision's end")
    assert "As the operator directed: Not localized." in (folder / "design.md").read_text()


async def test_plan_change_refuses_a_bad_name_and_an_existing_change(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace, settings={"agent": "demo"}, init={"trusted": True})
    before = sorted(p.name for p in (workspace / "openspec" / "changes").iterdir())
    for name, says in (("Bad_Name", "must be lowercase"), ("add-greeting-cli", "exists already")):
        with pytest.raises(Exception, match=says):
            await s.command("ralph.planChange", {"change": name, "description": "x"})
    assert sorted(p.name for p in (workspace / "openspec" / "changes").iterdir()) == before


async def test_discard_moves_the_change_to_the_trash_only_when_confirmed(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    s = await start_session(
        workspace,
        settings={"agent": "demo"},
        init={"trusted": True},
        env={"XDG_DATA_HOME": str(data)},
    )
    await plan(s)
    folder = workspace / "openspec" / "changes" / NAME
    with pytest.raises(Exception, match='"yes": true'):
        await s.command("ralph.discardChange", {"change": NAME})
    assert folder.is_dir()
    done = await s.command("ralph.discardChange", {"change": NAME, "yes": True})
    assert not folder.exists()
    trashed = data / "Trash" / "files" / NAME
    assert done["trash"] == trashed.as_uri() and (trashed / "proposal.md").is_file()
    info = (data / "Trash" / "info" / f"{NAME}.trashinfo").read_text()
    assert info.startswith("[Trash Info]\nPath=") and "DeletionDate=" in info


async def test_approve_and_run_implements_the_planned_change_and_only_then(
    start_session: StartSession, workspace: Path
) -> None:
    # examples/hello's own tests need its add-greeting-cli change done: no verification here
    settings = {"agent": "demo", "verifyWhen": "off"}
    s = await start_session(workspace, settings=settings, init={"trusted": True})
    await plan(s)
    folder = workspace / "openspec" / "changes" / NAME
    proposal = (folder / "proposal.md").as_uri()
    await asyncio.sleep(1.0)  # planned: nothing starts by itself
    assert [st for st in s.statuses if st["change"] == NAME and st.get("kind") == "run"] == []
    (approve,) = [lens for lens in await s.lenses(proposal) if lens[1] == "▶ Approve and run"]
    await s.command(approve[2], *approve[3])
    done = await wait_until(
        lambda: [
            st
            for st in s.statuses
            if st["change"] == NAME and st["kind"] == "run" and st["state"] != "running"
        ],
        timeout=60,
        what="the approved run's end",
    )
    assert done[0]["state"] == "succeeded", done[0]["reason"]
    assert "- [ ]" not in (folder / "tasks.md").read_text()
    titles = [lens[1] for lens in await s.lenses(proposal)]
    assert "▶ Approve and run" not in titles  # implemented: no longer waiting for approval


async def test_plan_change_refuses_the_ray_runner_and_writes_nothing(
    start_session: StartSession, workspace: Path
) -> None:
    settings = {"agent": "demo", "runner": "ray"}
    s = await start_session(workspace, settings=settings, init={"trusted": True})
    with pytest.raises(Exception, match="a planning run runs on this machine"):
        await s.command("ralph.planChange", {"change": NAME, "description": DESCRIPTION})
    assert not (workspace / "openspec" / "changes" / NAME).exists()
