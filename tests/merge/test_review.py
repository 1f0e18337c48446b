"""``ralph-lsp review``: the diff from the merge-base, right when the target moved on and the
user has uncommitted work; the task → iteration → commit map; cost only where reported."""

from __future__ import annotations

import json
from pathlib import Path

from ralph_lsp.cli import main
from tests.git.conftest import NEEDS_GIT, git
from tests.merge.conftest import CALC, commit_on, fake_run

pytestmark = NEEDS_GIT


def test_the_bundle_diff_is_from_the_merge_base_when_the_target_moved_on(
    repo: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    tip = commit_on(repo, "ralph/a", {"calc.py": CALC + "\nX = 1\n", "new.txt": "new\n"})
    (repo / "notes.txt").write_text("main moved on\n")
    git(repo, "commit", "-qam", "main moves on")
    (repo / "calc.py").write_text(CALC + "# uncommitted, the user's\n")
    fake_run(repo, "a", "r-20260101-000001-00001", cost=0.25)
    assert main(["review", "a", "--json", "--root", str(repo)]) == 0
    bundle = json.loads(capsys.readouterr().out)
    base = git(repo, "merge-base", "main", "ralph/a").strip()
    assert bundle["base"] == base and bundle["tip"] == tip
    assert bundle["diff"] == git(repo, "diff", base, "ralph/a")
    assert "notes.txt" not in bundle["diff"] and "uncommitted" not in bundle["diff"]
    assert bundle["files"] == [
        {"status": "M", "path": "calc.py"},
        {"status": "A", "path": "new.txt"},
    ]
    assert bundle["iterations"][0]["commit"] == tip and bundle["costUsd"] == 0.25
    assert bundle["verification"][0]["exitCode"] == 0
    assert main(["review", "a", "--root", str(repo)]) == 0
    text = capsys.readouterr().out
    assert "# cost $0.2500" in text and text.endswith(git(repo, "diff", base, "ralph/a"))


def test_no_cost_is_said_where_none_was_reported(repo: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    commit_on(repo, "ralph/a", {"new.txt": "new\n"})
    fake_run(repo, "a", "r-20260101-000001-00001")
    assert main(["review", "a", "--json", "--root", str(repo)]) == 0
    assert json.loads(capsys.readouterr().out)["costUsd"] is None
    assert main(["review", "a", "--root", str(repo)]) == 0
    assert "cost" not in capsys.readouterr().out
