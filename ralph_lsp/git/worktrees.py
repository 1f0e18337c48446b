"""Worktree isolation (SPEC §8, ``ralph.isolation: "worktree"``). No LSP imports.

A run of change ``c`` works in its own ``git worktree`` on the branch ``ralph/c``:

- **where**: ``<git common dir>/ralph/worktrees/<c>`` — inside the repository's own ``.git``
  folder, so it is outside the user's files, no editor, indexer or test runner of the project
  walks into it, and it goes wherever the repository goes;
- **from**: ``HEAD`` when the branch does not exist yet; the change's folder is then copied from
  the main work tree when it differs (a change being written is often not committed yet), never
  through a link: a run is refused when HEAD has one on the change's way where the work tree
  has a real folder or file;
- **a second run** of the same change **continues on the existing branch** (its tasks.md holds
  the progress so far); it is refused, with the place named, while the branch is checked out
  anywhere else (another run, or the user);
- **one commit per iteration** that changed files (an iteration that changed nothing adds no
  empty commit; its checkpoint is the commit before);
- **removed** when the run ends (every iteration is a commit, so nothing is lost; a worktree
  git will not remove cleanly is kept and named in the log). The branch stays for review.

Nothing is ever merged, rebased or pushed.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.git.command import GitError, Repo, find_repo
from ralph_lsp.git.refs import ref_component


class IsolationError(Exception):
    """Worktree isolation cannot be set up; the message says why and what to do."""


@dataclass(frozen=True)
class Worktree:
    main: Repo  # the user's repository
    repo: Repo  # the worktree
    branch: str
    root: Path  # the OpenSpec root inside the worktree
    base: str  # the commit the run started from
    created: bool  # the branch was made for this run (else an existing one is continued)
    repaired: str | None = None  # what was set right first (a stale registration), said once


def branch_name(change: str) -> str:
    return f"ralph/{ref_component(change)}"


def worktree_path(repo: Repo, change: str) -> Path:
    return repo.common_dir / "ralph" / "worktrees" / ref_component(change)


def _checked_out(repo: Repo) -> dict[str, Path]:
    """branch ref → the worktree that has it checked out."""
    found: dict[str, Path] = {}
    path: Path | None = None
    for line in repo.git("worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(line[len("worktree ") :])
        elif line.startswith("branch ") and path is not None:
            found[line[len("branch ") :]] = path
    return found


def open_worktree(root: Path, change: str) -> Worktree:
    """Create (or continue) the change's worktree; raises :class:`IsolationError`."""
    repo = find_repo(root)
    if repo is None:
        raise IsolationError(
            f"isolation 'worktree' needs a git work tree, and {root} is not in one;"
            " run with isolation 'none' (or `git init` and commit first)"
        )
    head = repo.rev("HEAD")
    if head is None:
        raise IsolationError(
            "isolation 'worktree' needs a commit to start from; commit once, then run again"
        )
    branch = branch_name(change)
    path = worktree_path(repo, change)
    holder = _checked_out(repo).get(f"refs/heads/{branch}")
    repaired = None
    if holder is not None and holder.resolve() == path.resolve() and not path.exists():
        repaired = _forget_stale(repo, path)
        holder = None
    created = repo.rev(f"refs/heads/{branch}") is None
    try:
        if holder is not None and holder.resolve() != path.resolve():
            raise IsolationError(
                f"branch {branch} is checked out at {holder}; a worktree run of {change!r}"
                " continues that branch only where ralph-lsp keeps it: check out another branch"
                " there (or remove that worktree) and run again"
            )
        if holder is None:
            if created:
                _refuse_linked_copy(repo, head, root, change)
            if path.exists():
                raise IsolationError(
                    f"{path} exists but is not a worktree of this repository; move it away"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            args = ["worktree", "add", "-q"]
            args += ["-b", branch, str(path), head] if created else [str(path), branch]
            repo.run(*args)  # no hook runs: gitcli turns them off
    except GitError as exc:
        raise IsolationError(f"the worktree for {change!r} cannot be made: {exc}") from exc
    wt_repo = Repo(top=path, git_dir=_git_dir(path), common_dir=repo.common_dir)
    wt_root = path / root.resolve().relative_to(repo.top.resolve())
    if created:
        _copy_change(root, wt_root, change)
    return Worktree(repo, wt_repo, branch, wt_root, head, created, repaired)


def _forget_stale(repo: Repo, path: Path) -> str:
    """Forget git's registration of our worktree at ``path`` whose folder is gone (a crashed
    run, then the folder deleted by hand), as ``git worktree prune`` would, but only this one:
    the user's own registrations are not ours to prune."""
    admin = repo.common_dir / "worktrees"
    try:
        entries = list(admin.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        try:
            points_to = (entry / "gitdir").read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if Path(points_to).parent.resolve() == path.resolve() and not (entry / "locked").exists():
            shutil.rmtree(entry)
            break
    return (
        f"the worktree {path} of an earlier run was gone but still registered with git (stale);"
        " that registration was pruned"
    )


def _git_dir(path: Path) -> Path:
    text = (path / ".git").read_text(encoding="utf-8").strip()
    return (path / text.removeprefix("gitdir:").strip()).resolve()


def _refuse_linked_copy(repo: Repo, head: str, root: Path, change: str) -> None:
    """Refuse when HEAD has a symbolic link on the way to (or inside) the change's folder where
    the main work tree has a real folder or file: the new worktree is checked out from HEAD, so
    copying the change's folder into it (:func:`_copy_change`) would write through that link,
    anywhere it points. Checked before the worktree is made, so nothing is left behind."""
    rel = root.resolve().relative_to(repo.top.resolve()) / "openspec" / "changes" / change
    listing = repo.run("ls-tree", "-r", "-t", "-z", head, "--", rel.as_posix()).stdout
    for entry in listing.split(b"\0"):
        meta, _, raw = entry.partition(b"\t")
        if not meta.startswith(b"120000 "):
            continue
        name = raw.decode("utf-8", "surrogateescape")
        try:
            mode = os.lstat(repo.top / name).st_mode
        except OSError:
            continue
        if not stat.S_ISLNK(mode):
            raise IsolationError(
                f"{name} is a symbolic link in the last commit but not in the work tree; the"
                f" change's folder is not copied into the worktree through it: commit {name}"
                " as it is in the work tree (or run with isolation 'none')"
            )


def _copy_change(root: Path, wt_root: Path, change: str) -> bool:
    """The change folder as the main work tree has it (it may not be committed yet)."""
    src = root / "openspec" / "changes" / change
    dst = wt_root / "openspec" / "changes" / change
    if not src.is_dir() or (dst.is_dir() and not _differs(src, dst)):
        return False
    shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True)
    return True


def _differs(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return True
    return any(_differs(a / d, b / d) for d in cmp.common_dirs)


def review_hint(wt: Worktree, change: str) -> str:
    """What the end-of-run log and notification say: how to look at the branch and merge it."""
    b = wt.branch
    count = wt.main.git("rev-list", "--count", f"{wt.base}..refs/heads/{b}", check=False) or "0"
    return (
        f"the run's work is on branch {b} ({count} commit(s) since it started; nothing was"
        f" merged): review it with `git log -p HEAD..{b}` or `git diff HEAD...{b}`, merge it"
        f" with `git merge {b}`, or drop it with `git branch -D {b}`"
    )


def close_worktree(wt: Worktree) -> str | None:
    """Remove the worktree (the branch stays, unless this run made it and it got no commit);
    returns a note when something had to be kept."""
    try:
        wt.main.run("worktree", "remove", str(wt.repo.top))
    except GitError as exc:
        return f"the worktree {wt.repo.top} was kept ({exc}); remove it with `git worktree remove`"
    ref = f"refs/heads/{wt.branch}"
    if wt.created and wt.main.rev(ref) == wt.base:
        wt.main.run("update-ref", "-d", ref, wt.base)  # ours, and empty: nothing to review
    return None


def has_commits(wt: Worktree) -> bool:
    tip = wt.main.rev(f"refs/heads/{wt.branch}")
    return tip is not None and tip != wt.base
