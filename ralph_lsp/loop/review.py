"""Looking at and restoring a run's checkpoints, for the CLI and the server alike (SPEC §5, §8).

No LSP imports. Errors are :class:`CheckpointError` s whose message says what exists instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ralph_lsp.git import GitError, Repo, find_repo, refs
from ralph_lsp.git import checkpoints as cp
from ralph_lsp.git.refs import Checkpoint, CheckpointError
from ralph_lsp.git.restore import RestoreResult, restore
from ralph_lsp.runs.claims import active_runs
from ralph_lsp.runs.history import load_records
from ralph_lsp.runs.states import RunState

URI_SCHEME = "ralph-checkpoint"
MAX_PATCH_CHARS = 4 * 1024 * 1024  # ralph.diff: a bigger patch is cut (files stay complete)


def open_repo(root: Path) -> Repo:
    repo = find_repo(root)
    if repo is None:
        raise CheckpointError(f"{root} is not in a git work tree, so its runs have no checkpoints")
    return repo


def choose_run(repo: Repo, root: Path, change: str, run_id: str | None) -> str:
    """``run_id``, or the newest run of ``change`` that has checkpoints."""
    newest_first = [str(r["runId"]) for r in load_records(root, change)]
    return refs.pick_run(repo, change, run_id, newest_first, root)


@dataclass(frozen=True)
class IterationDiff:
    run_id: str
    n: int
    before: Checkpoint
    after: Checkpoint
    files: list[cp.FileChange]
    patch: str
    patch_truncated: bool = False


def iteration_diff(
    root: Path,
    change: str,
    run_id: str | None,
    n: int | None,
    *,
    color: bool = False,
    with_patch: bool = True,
    cap: int | None = MAX_PATCH_CHARS,
) -> IterationDiff:
    """One iteration's files and patch; the patch is cut at ``cap`` bytes (None: whole)."""
    repo = open_repo(root)
    try:
        run = choose_run(repo, root, change, run_id)
        n, before, after = refs.iteration_pair(repo, change, run, n, root)
        files = cp.changed_files(repo, before.commit, after.commit)
        text, cut = "", False
        if with_patch and cap is not None:
            text, cut = cp.capped_patch(repo, before.commit, after.commit, cap, color=color)
        elif with_patch:
            text = cp.patch(repo, before.commit, after.commit, color=color)
    except GitError as exc:
        raise CheckpointError(str(exc)) from exc
    return IterationDiff(run, n, before, after, files, text, cut)


def write_patch(root: Path, d: IterationDiff, fd: int, *, color: bool) -> None:
    """git's diff of one iteration straight to a file descriptor (no size limit in memory)."""
    cp.write_patch(open_repo(root), d.before.commit, d.after.commit, fd, color=color)


def file_uri(root: Path, checkpoint: Checkpoint, path: str) -> str:
    """A read-only URI of one file in a checkpoint; ``ralph.fileAt`` gives its text."""
    query = "root=" + quote(root.as_uri(), safe="") + "&checkpoint=" + checkpoint.commit
    return f"{URI_SCHEME}:/{quote(path)}?{query}"


def diff_json(root: Path, d: IterationDiff) -> dict[str, Any]:
    """The ``ralph.diff`` result."""
    files = []
    for f in d.files:
        files.append(
            {
                "path": f.path,
                "status": f.status,
                "beforeUri": None if f.status == "added" else file_uri(root, d.before, f.path),
                "afterUri": None if f.status == "deleted" else file_uri(root, d.after, f.path),
            }
        )
    return {
        "runId": d.run_id,
        "iteration": d.n,
        "before": d.before.to_json(),
        "after": d.after.to_json(),
        "files": files,
        "patch": d.patch[:MAX_PATCH_CHARS],
        "patchTruncated": d.patch_truncated or len(d.patch) > MAX_PATCH_CHARS,
    }


def _refuse_while_running(repo: Repo, root: Path, change: str) -> None:
    """No restore while any run (any change, any process) is live in this work tree: a restore
    rewrites the whole work tree's files, under that run's agent."""
    for where in dict.fromkeys([root, repo.top]):  # the root's history, and the top's
        for other, owner in active_runs(where):
            named = f"pid {owner.pid}, run {owner.run_id}" if owner else "pid unknown"
            raise CheckpointError(
                f"change {other!r} is running in this work tree ({named}); a restore would"
                " rewrite files under its agent: stop it (or wait for it to end), then restore"
            )
    for record in load_records(root, change)[:3]:
        if record.get("state") == RunState.RUNNING:  # an owner that is gone reads as interrupted
            raise CheckpointError(
                f"change {change!r} is running (run {record.get('runId')}); stop it before"
                " restoring its files"
            )


def _refuse_worktree_run(root: Path, change: str, run_id: str) -> None:
    """A worktree run's iterations are commits on its branch, not states of this work tree."""
    for record in load_records(root, change):
        worktree = record.get("worktree")
        if record.get("runId") == run_id and isinstance(worktree, dict):
            branch = worktree.get("branch")
            raise CheckpointError(
                f"run {run_id} worked in its own worktree on branch {branch}: its iterations"
                f" are commits there, not states of your work tree; look at them with"
                f" `git log -p HEAD..{branch}` and take what you want with git"
                f" (`git checkout <commit> -- <path>`)"
            )


def restore_iteration(
    root: Path,
    change: str,
    run_id: str | None,
    n: int | None,
    checkpoint: str | None = None,
) -> tuple[str, RestoreResult]:
    """Put the work tree's files back as iteration ``n`` (or ``checkpoint``) left them."""
    repo = open_repo(root)
    _refuse_while_running(repo, root, change)
    try:
        if checkpoint is not None:
            target = refs.resolve_checkpoint(repo, checkpoint)
            run = run_id or _run_of(target, root, change) or "restores"
        else:
            if n is None:
                raise CheckpointError("say which iteration to restore (--iteration N)")
            run = choose_run(repo, root, change, run_id)
            _refuse_worktree_run(root, change, run)
            _, _, target = refs.iteration_pair(repo, change, run, n, root)
        return run, restore(repo, change, run, target, root)
    except GitError as exc:
        raise CheckpointError(str(exc)) from exc


def _run_of(target: Checkpoint, root: Path, change: str) -> str | None:
    for prefix in (refs.change_prefix(root, change) + "/", refs.legacy_prefix(change) + "/"):
        if target.ref and target.ref.startswith(prefix):
            run = target.ref[len(prefix) :].split("/")[0]
            return None if run.startswith("@") else run
    return None


def text_at(root: Path, checkpoint: str, path: str) -> str:
    """The text of ``path`` in a checkpoint (bad bytes replaced); CheckpointError when absent."""
    repo = open_repo(root)
    try:
        target = refs.resolve_checkpoint(repo, checkpoint)
        data = cp.file_at(repo, target, path)
    except GitError as exc:
        raise CheckpointError(str(exc)) from exc
    if data is None:
        raise CheckpointError(f"checkpoint {checkpoint} has no file {path}")
    return data.decode("utf-8", "replace")
