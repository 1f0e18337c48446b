"""``ralph.reviewRun``, ``ralph.mergeRun`` and ``ralph.mergeAll`` through a real LSP client and
server, over real git: the bundle, the merge moving the target, one notification each."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.git.conftest import NEEDS_GIT, git, init_repo
from tests.lsp.conftest import CHANGE, StartSession
from tests.merge.conftest import commit_on, fake_run

pytestmark = NEEDS_GIT
NO_MARKERS = "import pathlib; assert '<<<' not in pathlib.Path('README.md').read_text()"
CHECK = f'{sys.executable} -c "{NO_MARKERS}"'


@pytest.fixture
def repo(workspace: Path) -> Path:
    init_repo(workspace)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "start")
    commit_on(workspace, f"ralph/{CHANGE}", {"NEW.md": "from the run\n"})
    (workspace / "OTHER.md").write_text("main moved on\n")
    git(workspace, "add", "OTHER.md")
    git(workspace, "commit", "-q", "-m", "main moves on")
    fake_run(workspace, CHANGE, "r-20260101-000001-00001")
    return workspace


async def test_review_then_merge_one_notification_each(
    start_session: StartSession, repo: Path
) -> None:
    s = await start_session(repo, init={"trusted": True}, settings={"verifyCommands": [CHECK]})
    bundle = await s.command("ralph.reviewRun", {"change": CHANGE})
    base = git(repo, "merge-base", "main", f"ralph/{CHANGE}").strip()
    assert bundle["base"] == base and bundle["diff"] == git(repo, "diff", base, f"ralph/{CHANGE}")
    assert [f["path"] for f in bundle["files"]] == ["NEW.md"]
    before = git(repo, "rev-parse", "main").strip()
    shown = len(s.client.messages)
    result = await s.command("ralph.mergeRun", {"change": CHANGE})
    assert result["state"] == "merged", result
    assert git(repo, "rev-parse", "main").strip() == result["commit"] != before
    assert (repo / "NEW.md").read_text() == "from the run\n"
    assert [m.message for m in s.client.messages[shown:]] == [
        f"Ralph: {CHANGE}: merged: {result['reason']}"
    ]
    assert "verify ✓" in s.logs()
    # the train now finds nothing left: one notification, nothing merged
    train = await s.command("ralph.mergeAll", {})
    assert train["merged"] == 0 and train["outcomes"] == []
    assert len(s.client.messages) == shown + 2


async def test_a_conflict_is_parked_through_merge_all(
    start_session: StartSession, repo: Path
) -> None:
    (repo / "NEW.md").write_text("main's own\n")
    git(repo, "add", "NEW.md")
    git(repo, "commit", "-q", "-m", "main writes NEW.md too")
    s = await start_session(repo, init={"trusted": True}, settings={"verifyCommands": [CHECK]})
    before = git(repo, "rev-parse", "main").strip()
    train = await s.command("ralph.mergeAll", {"strategy": "squash"})
    (outcome,) = train["outcomes"]
    assert outcome["state"] == "needs-review" and outcome["conflicts"] == ["NEW.md"]
    assert git(repo, "rev-parse", "main").strip() == before
    assert s.client.messages[-1].message.startswith(
        "Ralph: merge train into main: 0 merged, 1 parked"
    )


async def test_refused_when_untrusted_or_asked_wrong(
    start_session: StartSession, repo: Path
) -> None:
    s = await start_session(repo, init={"trusted": False})
    with pytest.raises(JsonRpcException) as info:
        await s.command("ralph.mergeRun", {"change": CHANGE})
    assert "not trusted" in str(info.value.message)
    s2 = await start_session(repo, init={"trusted": True})
    with pytest.raises(JsonRpcException) as bad:
        await s2.command("ralph.mergeRun", {"change": CHANGE, "strategy": "octopus"})
    assert '"strategy" must be' in str(bad.value.message)
    assert git(repo, "rev-parse", "--verify", "-q", f"ralph/{CHANGE}").strip()
