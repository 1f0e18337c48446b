"""A reviewer without a sandbox, held to its task file by git (SPEC §13 "Review").

Before the review round the host takes the whole work tree as a commit object (a temporary
index, as a checkpoint is made: no ref, nothing of the user's touched); after it, a second one.
Every path that differs between them, other than the task files, is a write the reviewer may
not make: a changed or removed file is written back as it was, a new file removed. Files git
ignores are not seen (the limit of a git-based check: with the sandbox on, the work tree is
read-only whatever git ignores). Only ``git`` itself reads and writes here. No LSP imports.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.git.checkpoints import capped_patch, changed_files, snapshot
from ralph_lsp.git.command import GitError, Repo, find_repo, git_available
from ralph_lsp.git.restore import checkout_paths, remove_path


@dataclass(frozen=True)
class Before:
    """The work tree as the review round found it."""

    repo: Repo
    commit: str


def repo_of(root: Path) -> Repo | None:
    """The git work tree holding ``root``, or None (no git, or not in one)."""
    if not git_available():
        return None
    return find_repo(root)


def before_review(repo: Repo, message: str) -> Before:
    """The work tree now, as a commit object on ``HEAD`` (raises GitError)."""
    commit, _ = snapshot(repo, repo.rev("HEAD"), message)
    return Before(repo, commit)


def run_diff(before: Before, base: str | None, cap: int) -> tuple[str, bool]:
    """git's diff from ``base`` (the run's start) to the work tree as the round found it;
    (text, cut). No base: no diff."""
    if base is None or base == before.commit:
        return "", False
    return capped_patch(before.repo, base, before.commit, cap)


def undo_writes(before: Before, keep: Iterable[Path], message: str) -> list[str]:
    """Every path the reviewer wrote outside ``keep`` (absolute paths of the task files), put
    back as ``before`` has it; returns them as ``wrote <path>`` / ``created <path>`` /
    ``removed <path>``, in git's order (raises GitError)."""
    repo = before.repo
    top = repo.top.resolve()
    kept = {str(p.resolve().relative_to(top)) for p in keep if p.resolve().is_relative_to(top)}
    after, _ = snapshot(repo, before.commit, message)
    found: list[str] = []
    written: list[str] = []
    for change in changed_files(repo, before.commit, after):
        if change.path in kept or change.path.startswith(".ralph/"):
            continue
        if change.status == "added":
            if not remove_path(repo.top, change.path):
                raise GitError(f"{change.path}: a folder is in the way of removing it")
            found.append(f"created {change.path}")
        else:
            written.append(change.path)
            verb = "removed" if change.status == "deleted" else "wrote"
            found.append(f"{verb} {change.path}")
    if written:
        checkout_paths(repo, before.commit, written)
    return found
