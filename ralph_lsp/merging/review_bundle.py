"""The review bundle of a run's branch (SPEC §12 "Review"), for ``ralph-lsp review`` and
``ralph.reviewRun`` alike. No LSP imports.

The diff is from the merge-base of the target and the branch to the branch tip: right when the
target has moved on since the run started (the target's own new commits are not shown as
removed), and whatever is uncommitted in the user's work tree plays no part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralph_lsp.git import merge as gm
from ralph_lsp.merging.run_branch import current_branch, find_run, open_repo

#: The largest patch a bundle carries; the file list stays whole.
MAX_PATCH_CHARS = 4 * 1024 * 1024


def review_bundle(root: Path, change: str, run_id: str | None, into: str | None) -> dict[str, Any]:
    """``{change, runId, branch, into, base, tip, files, diff, commits, iterations,
    verification, costUsd, state, branchState, merge}``; raises ``MergeError``."""
    repo = open_repo(root)
    run = find_run(repo, root, change, run_id)
    target = into or current_branch(repo)
    tip = repo.rev(f"refs/heads/{run.branch}")
    head = repo.rev(f"refs/heads/{target}")
    if tip is None or head is None:
        raise gm.MergeError(f"the branch {target if head is None else run.branch} does not exist")
    base = gm.merge_base(repo, head, tip)
    if base is None:
        raise gm.MergeError(f"{run.branch} and {target} share no history: nothing to compare")
    diff = gm.diff_text(repo, base, tip)
    record = run.record
    return {
        "change": change,
        "runId": run.run_id,
        "branch": run.branch,
        "into": target,
        "base": base,
        "tip": tip,
        "files": gm.changed_files(repo, base, tip),
        "diff": diff[:MAX_PATCH_CHARS],
        "diffTruncated": len(diff) > MAX_PATCH_CHARS,
        "commits": gm.commits_between(repo, base, tip),
        "iterations": task_map(record),
        "verification": last_verification(record),
        "costUsd": reported_cost(record),
        "state": record.get("state"),
        "branchState": record.get("branchState"),
        "merge": record.get("merge"),
    }


def task_map(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The task → iteration → commit map: each iteration, the tasks it checked, its commit."""
    rows = []
    for it in record.get("iterations") or []:
        rows.append(
            {
                "n": it.get("n"),
                "tasksChecked": it.get("tasksChecked"),
                "commit": it.get("checkpoint"),
                "filesChanged": it.get("filesChanged"),
                "costUsd": it.get("costUsd"),
            }
        )
    return rows


def last_verification(record: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The last verification the run ran (None: it never verified)."""
    for it in reversed(record.get("iterations") or []):
        if isinstance(it.get("verification"), list):
            return list(it["verification"])
    return None


def reported_cost(record: dict[str, Any]) -> float | None:
    """What the agent reported the run cost; None when no iteration reported a cost."""
    costs = [
        it["costUsd"]
        for it in record.get("iterations") or []
        if isinstance(it.get("costUsd"), (int, float))
    ]
    return round(sum(costs), 6) if costs else None


def bundle_text(b: dict[str, Any]) -> str:
    """The bundle for a terminal: a header, the map, then git's patch."""
    lines = [
        f"# review {b['change']} run {b['runId']}: {b['branch']} against {b['into']}"
        f" (merge-base {b['base'][:12]}, tip {b['tip'][:12]})",
        f"# run {b['state']}" + (f", branch {b['branchState']}" if b["branchState"] else ""),
    ]
    if b["costUsd"] is not None:
        lines.append(f"# cost ${b['costUsd']:.4f}")
    for it in b["iterations"]:
        commit = (it["commit"] or "-")[:12]
        lines.append(f"# iteration {it['n']}: {it['tasksChecked']} task(s) checked → {commit}")
    ver = b["verification"]
    if ver is not None:
        words = ", ".join(f"{v.get('command')} exit {v.get('exitCode')}" for v in ver)
        lines.append(f"# verification: {words or 'nothing ran'}")
    lines.append(f"# {len(b['files'])} file(s):")
    lines += [f"#   {f['status']} {f['path']}" for f in b["files"]]
    return "\n".join(lines) + "\n" + str(b["diff"])
