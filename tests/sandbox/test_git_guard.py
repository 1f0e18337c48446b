"""The host's guard of git's pointers (``sandbox/git_guard.py``) on a real repository: what a
process made is removed, what it changed is written back, a link is replaced and never
written through, and a pointer whose folder moved is left alone and said."""

from __future__ import annotations

import os
from pathlib import Path

from ralph_lsp.sandbox.git_guard import GitGuard
from ralph_lsp.sandbox.repository import git_paths, git_pointers
from tests.git.conftest import NEEDS_GIT, git, init_repo

pytestmark = NEEDS_GIT


def linked(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repository with one commit and a linked worktree: (top, worktree, its admin folder)."""
    top = init_repo(tmp_path / "top")
    (top / "f.txt").write_text("f\n")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "start")
    git(top, "worktree", "add", "-q", str(tmp_path / "wt"))
    return top, tmp_path / "wt", top / ".git" / "worktrees" / "wt"


def test_what_a_process_made_or_changed_is_put_back(tmp_path: Path) -> None:
    top, wt, admin = linked(tmp_path)
    guard = GitGuard(wt, top)
    guard.watch()
    commondir = (admin / "commondir").read_bytes()
    (admin / "commondir").unlink()
    os.symlink(tmp_path / "evil", admin / "commondir")  # replaced by a link
    (tmp_path / "evil").write_text("x\n")
    (admin / "locked").write_text("mine\n")  # made
    (top / ".git" / "commondir").mkdir()  # made, as a folder
    (top / ".git" / "objects" / "info" / "alternates").write_text(f"{tmp_path}/x\n")
    said = guard.undo()
    assert sorted(said) == [
        ".git/commondir: made; undone",
        ".git/objects/info/alternates: made; undone",
        ".git/worktrees/wt/commondir: replaced by a link; undone",
        ".git/worktrees/wt/locked: made; undone",
    ]
    assert (admin / "commondir").read_bytes() == commondir
    assert not (admin / "commondir").is_symlink()
    assert (tmp_path / "evil").read_text() == "x\n"  # never written through the link
    assert not (admin / "locked").exists() and not (top / ".git/commondir").exists()
    assert git(wt, "rev-parse", "--git-common-dir").strip() == str(top / ".git")
    assert guard.undo() == []  # nothing changed since


def test_a_pointer_whose_folder_was_moved_is_left_alone_and_said(tmp_path: Path) -> None:
    top, wt, admin = linked(tmp_path)
    guard = GitGuard(wt, top)
    guard.watch()
    admin.rename(admin.with_name("moved"))
    os.symlink(tmp_path, admin)
    (tmp_path / "locked").write_text("not the guard's to delete\n")
    said = guard.undo()
    assert (
        ".git/worktrees/wt/locked: made, in a folder that is no longer where it was"
        in "; ".join(said)
    )
    assert (tmp_path / "locked").exists()


def test_the_policy_binds_existing_pointers_and_pins_their_folders(tmp_path: Path) -> None:
    top, wt, admin = linked(tmp_path)
    writable, read_only = git_paths(top.resolve())
    gitdir = top.resolve() / ".git"
    assert gitdir in writable  # bound onto itself: it cannot be moved away
    assert {gitdir / "objects", gitdir / "objects/info"} <= set(writable)
    assert gitdir / "worktrees" in read_only  # every other worktree's folder, in one bind
    assert admin.resolve() / "commondir" not in read_only
    assert gitdir not in read_only  # the git directory itself stays writable
    writable, read_only = git_paths(wt.resolve())
    assert wt.resolve() / ".git" in read_only  # the linked worktree's gitfile
    assert {admin.resolve() / "commondir", admin.resolve() / "gitdir"} <= set(read_only)
    assert admin.resolve() in writable and gitdir / "worktrees" not in read_only
    assert top.resolve() / ".git/commondir" in git_pointers(top.resolve())


def test_an_included_config_and_a_worktree_s_gitfile_in_the_work_tree_are_pointers(
    tmp_path: Path,
) -> None:
    top, _, _ = linked(tmp_path)
    (top / "shared.gitconfig").write_text("[core]\n\tautocrlf = false\n")
    git(top, "config", "include.path", "../shared.gitconfig")
    git(top, "config", "includeIf.gitdir:/nowhere/.path", f"{top}/.git/more.gitconfig")
    git(top, "worktree", "add", "-q", str(top / ".git" / "ralph" / "inner"))
    pointers = git_pointers(top.resolve())
    assert top.resolve() / "shared.gitconfig" in pointers
    assert top.resolve() / ".git" / "more.gitconfig" in pointers
    assert top.resolve() / ".git" / "ralph" / "inner" / ".git" in pointers
    assert tmp_path.resolve() / "wt" / ".git" not in pointers  # outside: not the run's to write
    _, read_only = git_paths(top.resolve())
    assert top.resolve() / "shared.gitconfig" in read_only


def test_a_worktree_removed_meanwhile_is_no_redirect(tmp_path: Path) -> None:
    top, wt, admin = linked(tmp_path)
    guard = GitGuard(top, top)
    guard.watch()
    git(top, "worktree", "remove", str(wt))  # another run's end, on the host
    assert guard.undo() == []
    assert not admin.exists()
