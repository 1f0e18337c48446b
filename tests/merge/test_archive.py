"""``ralph-lsp merge … --archive`` (``ralph.archiveOnSuccess``): the change archived on the
target in a commit after the merge commit, verified with it, moved by the same one
compare-and-swap; through real git."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.cli import main
from tests.git.conftest import NEEDS_GIT, git
from tests.merge.conftest import VERIFY, commit_on, fake_run, record, rev

pytestmark = NEEDS_GIT

# run by check.py on what is verified: passes only where the change is archived
ARCHIVED = (
    "import glob\n"
    "assert glob.glob('openspec/changes/archive/*-a/tasks.md'), 'a is not archived'\n"
    "assert not glob.glob('openspec/changes/a'), 'a is still a change'\n"
)


def test_merge_archive_commits_the_archive_after_the_merge_verified_in_one_move(
    repo: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    commit_on(repo, "ralph/a", {"a.txt": "a\n", "check_archived.py": ARCHIVED})
    fake_run(repo, "a", "r-20260101-000001-0000a")
    start = rev(repo, "main")
    moves = len(git(repo, "reflog", "show", "--format=%H", "main").splitlines())
    code = main(["merge", "a", "--archive", "--root", str(repo), "--verify", VERIFY[0]])
    out = capsys.readouterr().out
    assert code == 0, out
    subjects = git(repo, "log", "--format=%s", f"{start}..main").splitlines()
    assert subjects[0].startswith("ralph: archive a as ") and subjects[0].endswith("-a")
    assert subjects[1].startswith("ralph: merge a (run r-20260101-000001-0000a)")
    assert git(repo, "rev-parse", "main^^2").strip() == rev(repo, "ralph/a")
    # one move of the target for both commits
    assert len(git(repo, "reflog", "show", "--format=%H", "main").splitlines()) == moves + 1
    # the checked-out work tree followed: the change is in the archive
    assert not (repo / "openspec" / "changes" / "a").exists()
    assert list((repo / "openspec" / "changes" / "archive").glob("*-a/tasks.md"))
    rec = record(repo, "r-20260101-000001-0000a")
    assert rec["branchState"] == "merged"
    assert rec["merge"]["commit"] == rev(repo, "main")  # type: ignore[index]
    assert "archived as" in str(rec["merge"]["reason"])  # type: ignore[index]


def test_without_archive_the_same_merge_is_parked_by_its_check(repo: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # the check above really runs on the verified result: without the archive it fails
    commit_on(repo, "ralph/a", {"a.txt": "a\n", "check_archived.py": ARCHIVED})
    fake_run(repo, "a", "r-20260101-000001-0000a")
    start = rev(repo, "main")
    assert main(["merge", "a", "--root", str(repo), "--verify", VERIFY[0]]) == 1
    assert "a is not archived" in capsys.readouterr().out
    assert rev(repo, "main") == start
    assert (repo / "openspec" / "changes" / "a" / "tasks.md").is_file()


def test_a_change_already_archived_merges_and_says_it_was_not_archived(repo: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    commit_on(repo, "ralph/a", {"a.txt": "a\n"})
    git(repo, "rm", "-rq", "openspec/changes/a")
    git(repo, "commit", "-qm", "a gone")
    fake_run(repo, "a", "r-20260101-000001-0000a")
    assert main(["merge", "a", "--archive", "--root", str(repo), "--verify", VERIFY[0]]) == 0
    out = capsys.readouterr().out
    assert "not archived" in out
    assert git(repo, "log", "-1", "--format=%s", "main").startswith("ralph: merge a")


def test_a_committed_archive_link_is_not_followed_by_the_merges_archive(
    repo: Path, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """The run's branch commits ``openspec/changes/archive`` as a link out of the repository:
    the archive on the merged result refuses (the merge goes on, saying so), and nothing is
    moved or written where the link points (issue 46, fault 2)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    wt = repo.parent / "wt-link"
    git(repo, "worktree", "add", "-q", "-b", "ralph/a", str(wt), "main")
    (wt / "openspec/changes/archive").symlink_to(outside)
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", "ralph/a: archive as a link")
    git(repo, "worktree", "remove", str(wt))
    fake_run(repo, "a", "r-20260101-000001-0000a")
    assert main(["merge", "a", "--archive", "--root", str(repo), "--verify", VERIFY[0]]) == 0
    out = capsys.readouterr().out
    assert "not archived: openspec/changes/archive is a symbolic link: archive writes" in out
    assert list(outside.iterdir()) == []
    assert (repo / "openspec/changes/a/tasks.md").is_file()
