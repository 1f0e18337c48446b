"""Which run a merge or a review is about, its branch and target, and its ``branchState``.

A run that ends on a branch names it in its record (``worktree.branch``: ``ralph/<change>`` for
a worktree run or a ``--parallel`` queue); a remote run's is ``ralph/<change>/<runId>``. The
record gains ``branchState`` (``null``, ``needs-review`` or ``merged``) and ``merge`` (what the
last merge attempt found); the run's ``state`` is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph_lsp.git import GitError, Repo, find_repo
from ralph_lsp.git.merge import MergeError
from ralph_lsp.git.remote import run_branch
from ralph_lsp.loop.queue import load_queues
from ralph_lsp.runs.history import atomic_write_json, history_root, load_records, read_record
from ralph_lsp.runs.status import now_iso

MERGED, NEEDS_REVIEW = "merged", "needs-review"


@dataclass(frozen=True)
class RunBranch:
    """A run and the branch it ended on."""

    root: Path
    change: str
    run_id: str
    branch: str
    record: dict[str, Any]


def open_repo(root: Path) -> Repo:
    repo = find_repo(root)
    if repo is None:
        raise MergeError(f"{root} is not in a git work tree: its runs have no branch to merge")
    return repo


def branch_of(repo: Repo, record: dict[str, Any]) -> str | None:
    """The branch a run ended on, when it still exists."""
    wt = record.get("worktree")
    names = [wt.get("branch")] if isinstance(wt, dict) else []
    names.append(run_branch(str(record.get("change")), str(record.get("runId"))))
    for name in names:
        if isinstance(name, str) and repo.rev(f"refs/heads/{name}") is not None:
            return name
    return None


def find_run(repo: Repo, root: Path, change: str, run_id: str | None) -> RunBranch:
    """``run_id`` of ``change``, or its newest run that ended on a branch still there."""
    records = load_records(root, change)
    if run_id is not None:
        records = [r for r in records if r.get("runId") == run_id]
        if not records:
            raise MergeError(f"no run {run_id} of {change!r} in {history_root(root)}")
    for record in records:
        branch = branch_of(repo, record)
        if branch is not None:
            return RunBranch(root, change, str(record["runId"]), branch, record)
    if run_id is not None:
        raise MergeError(f"run {run_id} of {change!r} ended on no branch that still exists")
    raise MergeError(
        f"no run of {change!r} ended on a branch (worktree isolation, a --parallel queue or a"
        " remote run leave one); nothing to merge"
    )


def current_branch(repo: Repo) -> str:
    """The branch checked out in ``repo``'s work tree: the default target."""
    try:
        ref = repo.git("symbolic-ref", "-q", "HEAD")
    except GitError:
        ref = ""
    if not ref.startswith("refs/heads/"):
        raise MergeError("HEAD is detached here: name the target branch with --into BRANCH")
    return ref[len("refs/heads/") :]


def set_branch_state(root: Path, run_id: str, state: str | None, merge: dict[str, Any]) -> None:
    """Write ``branchState`` and ``merge`` into the run's record (its state stays as it is)."""
    record = read_record(root, run_id)
    if record is None:
        return
    record["branchState"] = state
    record["merge"] = {**merge, "at": now_iso()}
    atomic_write_json(history_root(root) / "runs" / run_id / "record.json", record)


def train_runs(repo: Repo, root: Path, everything: bool) -> list[RunBranch]:
    """The runs a train merges, in order: the succeeded runs of the newest queue that has one
    not merged yet (queue order), or with ``everything`` every unmerged succeeded run that
    ended on a branch (oldest first)."""
    records = {str(r["runId"]): r for r in load_records(root)}
    if not everything:
        for queue in load_queues(root):
            ids = [i.get("runId") for i in queue["items"] if i.get("state") == "succeeded"]
            found = _unmerged(repo, root, [records[i] for i in ids if i in records])
            if found:
                return found
    ordered = sorted(records.values(), key=lambda r: str(r.get("startedAt") or ""))
    return _unmerged(repo, root, [r for r in ordered if r.get("state") == "succeeded"])


def _unmerged(repo: Repo, root: Path, records: list[dict[str, Any]]) -> list[RunBranch]:
    """The runs not merged yet whose branch is still there; of two runs on one branch (a
    worktree run continued), the later one."""
    found: dict[str, RunBranch] = {}
    for record in records:
        branch = branch_of(repo, record)
        if branch is None:
            continue
        found.pop(branch, None)
        if record.get("branchState") != MERGED:
            found[branch] = RunBranch(
                root, str(record["change"]), str(record["runId"]), branch, record
            )
    return list(found.values())
