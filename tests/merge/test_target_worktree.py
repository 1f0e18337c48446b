"""The target checked out elsewhere, and the target moving while the merge is verified."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ralph_lsp.cli import main
from tests.git.conftest import NEEDS_GIT, git
from tests.merge.conftest import CALC, VERIFY, commit_on, fake_run, record, rev

pytestmark = NEEDS_GIT
NEW_CALC = CALC + "\n\ndef sub(a, b):\n    return a - b\n"


def merge(root: Path, *args: str) -> int:
    return main(["merge", *args, "--root", str(root), "--verify", VERIFY[0]])


@pytest.fixture
def elsewhere(repo: Path) -> Path:
    """``main`` checked out in another worktree; this one is on ``dev``; run a edits calc.py."""
    git(repo, "checkout", "-q", "-b", "dev")
    other = repo.parent / "other"
    git(repo, "worktree", "add", "-q", str(other), "main")
    commit_on(repo, "ralph/a", {"calc.py": NEW_CALC}, start="main")
    fake_run(repo, "a", "r-20260101-000001-00001")
    return other


def test_a_local_change_to_a_file_the_merge_touches_is_refused_and_kept(
    repo, elsewhere, capsys
) -> None:  # type: ignore[no-untyped-def]
    (elsewhere / "calc.py").write_text(CALC + "# mine, not committed\n")
    before = rev(repo, "main")
    assert merge(repo, "a", "--into", "main") == 3
    out = capsys.readouterr().out
    assert "calc.py" in out and "refused" in out and str(elsewhere) in out
    assert rev(repo, "main") == before
    assert (elsewhere / "calc.py").read_text() == CALC + "# mine, not committed\n"
    assert (
        record(repo, "r-20260101-000001-00001").get("branchState") is None
    )  # the branch is fine: nothing parked


def test_an_untracked_file_in_the_way_is_refused_and_kept(repo, elsewhere, capsys) -> None:  # type: ignore[no-untyped-def]
    commit_on(repo, "ralph/a", {"new.txt": "from the run\n"})
    (elsewhere / "new.txt").write_text("mine\n")
    before = rev(repo, "main")
    assert merge(repo, "a", "--into", "main") == 3
    assert "new.txt" in capsys.readouterr().out
    assert rev(repo, "main") == before and (elsewhere / "new.txt").read_text() == "mine\n"


def test_a_local_change_elsewhere_is_kept_and_the_merge_goes_in(repo, elsewhere) -> None:  # type: ignore[no-untyped-def]
    (elsewhere / "notes.txt").write_text("my own notes\n")
    (elsewhere / "scratch.txt").write_text("untracked, mine\n")
    git(elsewhere, "add", "notes.txt")
    (elsewhere / "notes.txt").write_text("my own notes, edited again\n")
    assert merge(repo, "a", "--into", "main") == 0
    assert (elsewhere / "calc.py").read_text() == NEW_CALC  # the work tree followed
    assert (elsewhere / "notes.txt").read_text() == "my own notes, edited again\n"
    assert (elsewhere / "scratch.txt").read_text() == "untracked, mine\n"
    status = git(elsewhere, "status", "--porcelain").splitlines()
    assert sorted(status) == ["?? scratch.txt", "MM notes.txt"]
    assert git(elsewhere, "rev-parse", "HEAD").strip() == rev(repo, "main")
    assert (repo / "calc.py").read_text() == CALC  # this work tree (on dev) is not touched


MOVER = """
import pathlib, subprocess, sys
count = pathlib.Path(sys.argv[2])
n = int(count.read_text()) if count.exists() else 0
if n < int(sys.argv[3]):
    count.write_text(str(n + 1))
    subprocess.run(["git", "-C", sys.argv[1], "commit", "-q", "--allow-empty", "-m",
                    f"someone else's commit {n + 1}"], check=True)
"""


@pytest.mark.unsandboxed(
    "the check stands in for someone committing on the target meanwhile:"
    " a sandboxed check cannot write the user's repository"
)
@pytest.mark.parametrize("moves", [1, 2])
def test_the_target_moving_while_verifying_is_never_overwritten(
    repo, tmp_path, moves, capsys
) -> None:  # type: ignore[no-untyped-def]
    mover = tmp_path / "mover.py"
    mover.write_text(MOVER)
    commit_on(repo, "ralph/a", {"calc.py": NEW_CALC})
    fake_run(repo, "a", "r-20260101-000001-00001")
    line = f"{sys.executable} {mover} {repo} {tmp_path / 'count'} {moves}"
    code = main(["merge", "a", "--root", str(repo), "--verify", line, "--verify", VERIFY[0]])
    out = capsys.readouterr().out
    assert "moved while the merge was made and verified" in out
    subjects = git(repo, "log", "--format=%s", "main").splitlines()
    assert [s for s in subjects if s.startswith("someone else")] == [
        f"someone else's commit {k}" for k in range(moves, 0, -1)
    ]  # every commit made meanwhile is still on main
    if moves == 1:  # retried once from the new target, and merged
        assert code == 0 and subjects[0].startswith("ralph: merge a")
        assert record(repo, "r-20260101-000001-00001")["branchState"] == "merged"
    else:  # moved again: refused with the reason, target as the other party left it
        assert code == 1 and subjects[0] == "someone else's commit 2"
        rec = record(repo, "r-20260101-000001-00001")
        assert rec["branchState"] == "needs-review"
        assert "twice" in str(rec["merge"]["reason"])  # type: ignore[index]
