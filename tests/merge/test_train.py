"""``ralph-lsp merge --all``: a queue's succeeded runs, in queue order, each onto the last."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ralph_lsp.cli import main
from tests.git.conftest import NEEDS_GIT, git
from tests.merge.conftest import VERIFY, commit_on, fake_run, record, rev

pytestmark = NEEDS_GIT


def queue_record(root: Path, order: list[tuple[str, str]]) -> None:
    items = [{"change": c, "state": "succeeded", "runId": r} for c, r in order]
    folder = root / ".ralph" / "queues" / "q-20260101-000000-1"
    folder.mkdir(parents=True)
    (folder / "record.json").write_text(json.dumps({"queueId": folder.name, "items": items}))


def test_a_train_of_three_with_one_conflict_merges_two_in_order_and_parks_one(repo, capsys) -> None:  # type: ignore[no-untyped-def]
    commit_on(repo, "ralph/c", {"c.txt": "c\n"})
    commit_on(repo, "ralph/a", {"notes.txt": "a's notes\n", "a.txt": "a\n"})
    commit_on(repo, "ralph/b", {"notes.txt": "b's notes\n"})  # conflicts with a, once a is in
    for i, (change, run) in enumerate(
        [
            ("a", "r-20260101-000001-0000a"),
            ("b", "r-20260101-000002-0000b"),
            ("c", "r-20260101-000003-0000c"),
        ]
    ):
        fake_run(repo, change, run, started=f"2026-01-01T00:00:0{i}Z")
    queue_record(
        repo,
        [
            ("c", "r-20260101-000003-0000c"),
            ("a", "r-20260101-000001-0000a"),
            ("b", "r-20260101-000002-0000b"),
        ],
    )  # queue order, not age
    start = rev(repo, "main")
    code = main(["merge", "--all", "--root", str(repo), "--verify", VERIFY[0]])
    out = capsys.readouterr().out
    assert code == 1  # one parked
    assert "merge train into main: 2 merged, 1 parked (needs-review), 0 refused" in out
    subjects = git(repo, "log", "--reverse", "--format=%s", "--first-parent", f"{start}..main")
    assert [s.split(" (run")[0] for s in subjects.splitlines()] == [
        "ralph: merge c",
        "ralph: merge a",
    ]
    assert record(repo, "r-20260101-000002-0000b")["branchState"] == "needs-review"
    assert record(repo, "r-20260101-000002-0000b")["merge"]["conflicts"] == ["notes.txt"]  # type: ignore[index]
    assert {
        record(repo, r)["branchState"]
        for r in ("r-20260101-000001-0000a", "r-20260101-000003-0000c")
    } == {"merged"}
    assert (repo / "notes.txt").read_text() == "a's notes\n"
    # run again: the merged ones are not merged twice, the parked one is tried again
    assert main(["merge", "--all", "--root", str(repo), "--verify", VERIFY[0]]) == 1
    assert "0 merged, 1 parked" in capsys.readouterr().out


def test_the_train_s_scratch_worktree_is_deleted_and_forgotten_and_leftovers_swept(
    repo: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    from ralph_lsp.git import merge as gm

    scratch = repo / ".git" / "ralph" / "integration"
    left = scratch / f"{gm.TRASH}0123456789ab"  # what an interrupted deletion leaves
    (left / "sub").mkdir(parents=True)
    (left / "sub" / "f.txt").write_text("x\n")
    commit_on(repo, "ralph/a", {"a.txt": "a\n"})
    fake_run(repo, "a", "r-20260101-000001-0000a")
    assert main(["merge", "--all", "--root", str(repo), "--verify", VERIFY[0]]) == 0
    assert "1 merged" in capsys.readouterr().out
    gm.settle()
    assert list(scratch.iterdir()) == []
    assert "integration" not in git(repo, "worktree", "list", "--porcelain")


@pytest.mark.unsandboxed(
    "the check stands in for someone committing on the target meanwhile:"
    " a sandboxed check cannot write the user's repository"
)
def test_when_the_target_moves_under_a_verified_merge_the_next_one_is_made_again(
    repo: Path, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    # a's verification commits on main once: a's target move fails while b, made on a's
    # verified commit, is verified; a is merged again from the new main, then b from a's
    from tests.merge.test_target_worktree import MOVER

    mover = tmp_path / "mover.py"
    mover.write_text(MOVER)
    commit_on(repo, "ralph/a", {"a.txt": "a\n"})
    commit_on(repo, "ralph/b", {"b.txt": "b\n"})
    fake_run(repo, "a", "r-20260101-000001-0000a", started="2026-01-01T00:00:01Z")
    fake_run(repo, "b", "r-20260101-000002-0000b", started="2026-01-01T00:00:02Z")
    line = f"{sys.executable} {mover} {repo} {tmp_path / 'count'} 1"
    code = main(["merge", "--all", "--root", str(repo), "--verify", line, "--verify", VERIFY[0]])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "moved while the merge was made and verified" in out
    assert "merge train into main: 2 merged, 0 parked (needs-review), 0 refused" in out
    subjects = git(repo, "log", "--first-parent", "--format=%s", "main").splitlines()
    assert [s.split(" (run")[0] for s in subjects[:3]] == [
        "ralph: merge b",
        "ralph: merge a",
        "someone else's commit 1",
    ]
    assert rev(repo, "main^1") == record(repo, "r-20260101-000001-0000a")["merge"]["commit"]  # type: ignore[index]
    assert (repo / "a.txt").is_file() and (repo / "b.txt").is_file()
    for run in ("r-20260101-000001-0000a", "r-20260101-000002-0000b"):
        assert record(repo, run)["branchState"] == "merged"
