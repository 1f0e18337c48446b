"""Archive in the editor (SPEC §11): ralph.archivePreview shows the rebuilt specs and writes
nothing, ralph.archiveChange writes them under trust only, and proposal.md carries the two
lenses once every task is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph_lsp.archiving.writer import today
from tests.lsp.conftest import CHANGE, StartSession


def tick_all(workspace: Path) -> Path:
    tasks = workspace / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"))
    return tasks


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


async def test_preview_returns_rebuilt_specs_and_writes_nothing(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    before = tree(workspace / "openspec")
    result = await s.command("ralph.archivePreview", {"change": CHANGE})
    assert tree(workspace / "openspec") == before
    assert result["archive"]["archivedAs"] == f"{today()}-{CHANGE}"
    assert result["incompleteTasks"] == 8
    [spec] = result["specs"]
    assert spec["specId"] == "greeting"
    assert spec["uri"] == (workspace / "openspec/specs/greeting/spec.md").as_uri()
    assert spec["oldText"] is None
    assert spec["newText"].startswith("# greeting Specification\n\n## Purpose\nTBD")
    assert "### Requirement:" in spec["newText"]


async def test_archive_is_refused_untrusted_and_done_trusted(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace, init={"trusted": False})
    before = tree(workspace / "openspec")
    try:
        await s.command("ralph.archiveChange", {"change": CHANGE, "yes": True})
    except Exception as exc:
        assert "not trusted" in str(exc)
    else:
        raise AssertionError("an untrusted workspace archived")
    assert tree(workspace / "openspec") == before
    s2 = await start_session(workspace, init={"trusted": True})
    refused = await s2.command("ralph.archiveChange", {"change": CHANGE})
    assert refused["archive"] is None
    assert refused["status"][0]["code"] == "archive_tasks_incomplete"
    preview = await s2.command("ralph.archivePreview", {"change": CHANGE})
    done = await s2.command("ralph.archiveChange", {"change": CHANGE, "yes": True})
    assert done["archive"]["specsUpdated"] is True
    written = (workspace / "openspec/specs/greeting/spec.md").read_text()
    assert written == preview["specs"][0]["newText"]
    assert (workspace / "openspec/changes/archive" / f"{today()}-{CHANGE}" / "tasks.md").exists()


async def test_proposal_lenses_appear_when_every_task_is_done(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    proposal = (workspace / "openspec/changes" / CHANGE / "proposal.md").as_uri()
    assert await s.lenses(proposal) == []
    tick_all(workspace)
    ref = [{"change": CHANGE, "root": workspace.as_uri()}]
    assert await s.lenses(proposal) == [
        (0, "⧉ Archive preview", "ralph.showArchivePreview", ref),
        (0, "⇲ Archive change", "ralph.archive", ref),
    ]


async def test_archive_through_a_link_is_refused_and_writes_nothing(
    start_session: StartSession, workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A dangling link where the new main spec goes: preview and archive both refuse, naming
    it; its target is never made and the change is not moved (issue 46, fault 2)."""
    login = tmp_path_factory.mktemp("home") / ".bash_login"
    (workspace / "openspec/specs/greeting").mkdir(parents=True)
    (workspace / "openspec/specs/greeting/spec.md").symlink_to(login)
    s = await start_session(workspace, init={"trusted": True})
    words = "openspec/specs/greeting/spec.md is a symbolic link: archive writes nothing"
    preview = await s.command("ralph.archivePreview", {"change": CHANGE})
    assert preview["archive"] is None and words in preview["status"][0]["message"]
    refused = await s.command("ralph.archiveChange", {"change": CHANGE, "yes": True})
    assert refused["archive"] is None
    assert refused["status"][0]["code"] == "archive_path_symlink"
    assert words in refused["status"][0]["message"]
    assert not login.exists() and not login.is_symlink()
    assert (workspace / "openspec/changes" / CHANGE / "tasks.md").is_file()
