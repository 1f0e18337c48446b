"""What a run does with git (SPEC §8): its checkpoints, and its worktree when isolated.

The engine calls :func:`prepare` when a run starts (worktree isolation is refused here, before
anything runs, when it cannot be had), :meth:`RunGit.begin` before iteration 1,
:meth:`RunGit.after_iteration` after each iteration (the history fields ``checkpoint`` and
``filesChanged``) and :meth:`RunGit.end` when the run ends. Git runs in a worker thread, so the
event loop (and a server's requests) never waits on it. No LSP imports.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph_lsp.git import GitError, Repo, find_repo
from ralph_lsp.git.checkpoints import Checkpointer, open_checkpointer, prune
from ralph_lsp.git.worktrees import (
    IsolationError,
    Worktree,
    close_worktree,
    has_commits,
    open_worktree,
    review_hint,
)
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.settings import Settings

Warn = Callable[[str], None]


@dataclass
class RunGit:
    change: str
    run_id: str
    warn: Warn
    info: Warn
    checkpointer: Checkpointer | None = None
    worktree: Worktree | None = None
    notes: list[str] = field(default_factory=list)
    started_from: str | None = None  # checkpoint 0: what a review's diff is from (SPEC §13)

    @property
    def work_root(self) -> Path | None:
        """The OpenSpec root the agent works in, when it is not the user's."""
        return self.worktree.root if self.worktree else None

    def worktree_json(self) -> dict[str, Any] | None:
        wt = self.worktree
        if wt is None:
            return None
        tasks = Change(wt.root, self.change).tasks_path  # the file its schema tracks
        return {"branch": wt.branch, "root": wt.root.as_uri(), "tasksUri": tasks.as_uri()}

    async def begin(self) -> None:
        if self.checkpointer is not None:
            made, _ = await asyncio.to_thread(self.checkpointer.record, 0, self._message(0, None))
            self.started_from = made.commit if made is not None else None

    async def after_iteration(self, n: int, completed: int, total: int) -> dict[str, Any]:
        """The iteration's history fields: ``checkpoint`` (a commit) and ``filesChanged``."""
        if self.checkpointer is None:
            return {"checkpoint": None, "filesChanged": None}
        message = self._message(n, (completed, total))
        made, changed = await asyncio.to_thread(self.checkpointer.record, n, message)
        return {
            "checkpoint": made.commit if made else None,
            "filesChanged": changed if made else None,
        }

    def latest(self) -> tuple[Repo, str] | None:
        """The repository and the run's latest checkpoint (the work tree as the last iteration
        left it), or None without checkpoints."""
        c = self.checkpointer
        return (c.repo, c.parent) if c is not None and c.parent is not None else None

    def no_space(self) -> str | None:
        """Why the run must end when a checkpoint failed for a full disk, or None."""
        return self.checkpointer.no_space if self.checkpointer is not None else None

    def _message(self, n: int, counts: tuple[int, int] | None) -> str:
        if self.worktree is not None and counts is not None:  # a commit on the run's branch
            return f"ralph: {self.change} iteration {n} · {counts[0]}/{counts[1]} tasks"
        if n == 0:
            return f"ralph: {self.change} before iteration 1 (run {self.run_id})"
        return f"ralph: {self.change} after iteration {n} (run {self.run_id})"

    async def end(self) -> str | None:
        """Close the run's git side; returns the branch left for review (worktree mode)."""
        if self.checkpointer is not None:
            self.checkpointer.close()
        wt = self.worktree
        if wt is None:
            return None
        left = await asyncio.to_thread(has_commits, wt) or not wt.created
        if left:
            hint = await asyncio.to_thread(review_hint, wt, self.change)
            self.info(f"⎇ {hint}")
        else:
            self.info(f"⎇ the run made no commit: branch {wt.branch} is removed with its worktree")
        kept = await asyncio.to_thread(close_worktree, wt)
        if kept:
            self.warn(kept)
        return wt.branch if left else None


async def refusal(root: Path, settings: Settings) -> str | None:
    """Why a run cannot start as set up (worktree isolation outside git), or None."""
    if settings.isolation != "worktree":
        return None
    repo = await asyncio.to_thread(find_repo, root)
    if repo is None:
        return (
            f"isolation 'worktree' needs a git work tree, and {root} is not in one;"
            " run with isolation 'none'"
        )
    if await asyncio.to_thread(repo.rev, "HEAD") is None:
        return "isolation 'worktree' needs a commit to start from; commit once, then run again"
    return None


def prune_checkpoints(root: Path, change: str, removed: list[str]) -> int:
    """Drop the checkpoints of the runs that history retention has just removed (SPEC §3: the
    engine removes the run folders beyond ``historyKeepRuns``, then this runs). Only those:
    never an undo, nor the runs of another root or work tree of the repository."""
    try:
        return prune(root, change, removed)
    except (GitError, OSError):
        return 0


def wants_checkpoints(settings: Settings) -> bool:
    return settings.checkpoints is not False


def _prepare(root: Path, change: str, run_id: str, settings: Settings, rg: RunGit) -> None:
    if settings.isolation == "worktree":
        rg.worktree = open_worktree(root, change)  # IsolationError when it cannot be had
        how = "made from HEAD" if rg.worktree.created else "continuing the existing branch"
        rg.info(
            f"⎇ working in the worktree {rg.worktree.repo.top} on branch {rg.worktree.branch}"
            f" ({how}); the main work tree is left alone"
        )
        if rg.worktree.repaired:
            rg.info(f"⎇ {rg.worktree.repaired}")
        rg.checkpointer = Checkpointer(
            rg.worktree.repo, change, run_id, rg.warn, branch=rg.worktree.branch, root=root
        )
        rg.checkpointer.start()
    elif wants_checkpoints(settings):
        rg.checkpointer = open_checkpointer(root, change, run_id, rg.warn, rg.info)


async def prepare(
    root: Path, change: str, run_id: str, settings: Settings, warn: Warn, info: Warn
) -> RunGit:
    """A run's git side; raises :class:`IsolationError` when a worktree cannot be had."""
    rg = RunGit(change, run_id, warn, info)
    await asyncio.to_thread(_prepare, root, change, run_id, settings, rg)
    return rg


__all__ = ["IsolationError", "RunGit", "prepare", "wants_checkpoints"]
