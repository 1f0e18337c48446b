"""``ralph-lsp merge`` through real git: the target moves only once the merged result passes."""

from __future__ import annotations

import pytest

from ralph_lsp.cli import main
from tests.git.conftest import NEEDS_GIT, git
from tests.merge.conftest import (
    CALC,
    CHECK,
    VERIFY,
    commit_on,
    fake_run,
    fake_run_on,
    record,
    rev,
)

pytestmark = NEEDS_GIT


def merge(root, *args: str) -> int:  # type: ignore[no-untyped-def]
    return main(["merge", *args, "--root", str(root), "--verify", VERIFY[0]])


def test_a_clean_merge_moves_the_target_after_verification(repo, capsys) -> None:  # type: ignore[no-untyped-def]
    before = rev(repo, "main")
    tip = commit_on(repo, "ralph/a", {"calc.py": CALC + "\n\ndef sub(a, b):\n    return a - b\n"})
    fake_run(repo, "a", "r-20260101-000001-00001")
    assert merge(repo, "a") == 0
    out = capsys.readouterr()
    assert "verify ✓" in out.out and "a: merged" in out.out
    after = rev(repo, "main")
    assert after != before
    assert git(repo, "rev-parse", f"{after}^1").strip() == before
    assert git(repo, "rev-parse", f"{after}^2").strip() == tip
    # the user's work tree (main checked out here) follows: the new function is in calc.py
    assert "def sub" in (repo / "calc.py").read_text()
    assert git(repo, "status", "--porcelain").strip() == ""
    rec = record(repo, "r-20260101-000001-00001")
    assert rec["state"] == "succeeded" and rec["branchState"] == "merged"
    assert rec["merge"]["commit"] == after  # type: ignore[index]
    # no scratch worktree is left behind
    assert git(repo, "worktree", "list").count("\n") == 1


def test_a_semantic_conflict_is_parked_and_the_target_stays(repo, capsys) -> None:  # type: ignore[no-untyped-def]
    # A renames add → plus (and its check); B, made from the same start, calls the old name.
    renamed = CALC.replace("def add", "def plus")
    commit_on(repo, "ralph/a", {"calc.py": renamed, "check.py": CHECK.replace("add(", "plus(")})
    commit_on(repo, "ralph/b", {"check_use.py": "import calc\n\nassert calc.add(1, 2) == 3\n"})
    fake_run(repo, "a", "r-20260101-000001-0000a", started="2026-01-01T00:00:01Z")
    fake_run(repo, "b", "r-20260101-000002-0000b", started="2026-01-01T00:00:02Z")
    assert merge(repo, "a") == 0
    after_a = rev(repo, "main")
    assert merge(repo, "b") == 1
    out = capsys.readouterr().out
    assert "b: needs-review" in out and "fails verification" in out
    assert rev(repo, "main") == after_a  # clean as text, failing as code: main did not move
    rec = record(repo, "r-20260101-000002-0000b")
    assert rec["state"] == "succeeded" and rec["branchState"] == "needs-review"
    assert "AttributeError" in str(rec["merge"]["outputTail"])  # type: ignore[index]
    assert git(repo, "rev-parse", "--verify", "-q", "refs/heads/ralph/b").strip()  # kept


def test_a_textual_conflict_is_parked_with_its_files_named(repo, capsys) -> None:  # type: ignore[no-untyped-def]
    commit_on(repo, "ralph/a", {"notes.txt": "notes from a\n"})
    git(repo, "commit", "-qam", "x", "--allow-empty")
    (repo / "notes.txt").write_text("notes from main\n")
    git(repo, "commit", "-qam", "main edits notes")
    fake_run(repo, "a", "r-20260101-000001-00001")
    before = rev(repo, "main")
    assert merge(repo, "a") == 1
    out = capsys.readouterr().out
    assert "conflicting files: notes.txt" in out
    assert rev(repo, "main") == before
    assert (repo / "notes.txt").read_text() == "notes from main\n"
    assert record(repo, "r-20260101-000001-00001")["merge"]["conflicts"] == ["notes.txt"]  # type: ignore[index]


@pytest.mark.parametrize("strategy", ["squash", "rebase"])
def test_squash_and_rebase_give_one_line_of_history(repo, strategy) -> None:  # type: ignore[no-untyped-def]
    commit_on(repo, "ralph/a", {"calc.py": CALC + "\nX = 1\n"})
    commit_on(repo, "ralph/a", {"more.txt": "more\n"})
    (repo / "notes.txt").write_text("main moved on\n")
    git(repo, "commit", "-qam", "main moves on")
    fake_run(repo, "a", "r-20260101-000001-00001")
    before = rev(repo, "main")
    assert merge(repo, "a", "--strategy", strategy) == 0
    parents = git(repo, "log", "--format=%P", f"{before}..main").split("\n")
    assert all(len(p.split()) == 1 for p in parents if p)  # no merge commit
    count = len([p for p in parents if p])
    assert count == (1 if strategy == "squash" else 2)
    assert (repo / "more.txt").read_text() == "more\n"
    assert (repo / "notes.txt").read_text() == "main moved on\n"


def test_a_usage_error_for_an_unknown_run(repo) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exc:
        merge(repo, "a")
    assert exc.value.code == 2


def test_run_merge_needs_a_queue_on_branches(repo, capsys) -> None:  # type: ignore[no-untyped-def]
    for argv in (["run", "a", "--merge"], ["run", "a", "b", "--merge"]):
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--root", str(repo), "--agent", "demo"])
        assert exc.value.code == 2
        assert "--merge merges a queue's branches" in capsys.readouterr().err
    assert not (repo / ".ralph" / "runs").exists()  # nothing ran


def test_without_a_verification_command_the_merge_says_nothing_was_verified(repo, capsys) -> None:  # type: ignore[no-untyped-def]
    commit_on(repo, "ralph/a", {"new.txt": "new\n"})
    fake_run(repo, "a", "r-20260101-000001-00001")
    assert main(["merge", "a", "--root", str(repo)]) == 0  # the project defines no check
    out = capsys.readouterr().out
    assert "a: merged: merged into main as" in out
    assert "(no verification command: nothing was verified)" in out


def test_a_remote_runs_fetched_branch_merges_the_same_way(repo, capsys) -> None:  # type: ignore[no-untyped-def]
    # A Ray run's branch is ralph/<change>/<runId> and its record names no worktree.
    commit_on(repo, "ralph/a", {"new.txt": "from the cluster\n"})
    git(repo, "branch", "-m", "ralph/a", "ralph/a/r-20260101-000009-00009")
    path = fake_run_on(repo, "a", "r-20260101-000009-00009", "ralph/a/r-20260101-000009-00009")
    assert path.is_file()
    assert merge(repo, "a") == 0
    assert (repo / "new.txt").read_text() == "from the cluster\n"
    assert "ralph/a/r-20260101-000009-00009 merges cleanly into main" in capsys.readouterr().out
    assert record(repo, "r-20260101-000009-00009")["branchState"] == "merged"
