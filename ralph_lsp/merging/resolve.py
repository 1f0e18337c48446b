""" "Resolve with agent" (SPEC §12): a conflicting run's branch gets the merge of its target,
conflict markers and all, as one commit (the branch's ref moved by compare-and-swap, like any
target); then a run of the change continues on that branch (worktree isolation) with the
conflict as its guidance. Its verification fails while the markers break the project, so the
agent is asked to resolve them; the run ends verified or stuck like any run, and the branch then
merges cleanly. No LSP imports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.git import Repo
from ralph_lsp.git import merge as gm
from ralph_lsp.git.worktrees import branch_name
from ralph_lsp.merging.run_branch import RunBranch, current_branch, find_run, open_repo

#: How much of each conflicted file (and of all of them) the guidance quotes.
FILE_CHARS, TOTAL_CHARS = 4000, 16000


@dataclass(frozen=True)
class ResolvePlan:
    run: RunBranch
    into: str
    commit: str  # the branch's new tip: the merge with conflict markers
    conflicts: list[str]
    guidance: str


def prepare_resolve(root: Path, change: str, run_id: str | None, into: str | None) -> ResolvePlan:
    """Commit the conflicted merge on the run's branch and say what the agent must resolve;
    raises ``MergeError`` when there is nothing to resolve or the branch cannot take it."""
    repo = open_repo(root)
    gm.require_merge_tree(repo)
    run = find_run(repo, root, change, run_id)
    if run.branch != branch_name(change):
        raise gm.MergeError(
            f"{run.branch} is not a worktree run's branch ({branch_name(change)}): fetch it"
            f" into {branch_name(change)} to resolve it with the agent"
        )
    target = into or current_branch(repo)
    head, tip = repo.rev(f"refs/heads/{target}"), repo.rev(f"refs/heads/{run.branch}")
    if head is None or tip is None:
        raise gm.MergeError(f"the branch {target if head is None else run.branch} does not exist")
    check = gm.check(repo, tip, head)  # ours: the run's branch; theirs: the target
    if check.clean:
        raise gm.MergeError(
            f"{run.branch} does not conflict with {target}:"
            f" merge it with `ralph-lsp merge {change}`"
        )
    message = (
        f"ralph: merge {target} into {run.branch} with conflicts in"
        f" {', '.join(check.conflicts)}, to be resolved by the agent"
    )
    commit = gm.commit_tree(repo, check.tree, [tip, head], message)
    gm.advance(repo, run.branch, tip, commit, message)
    return ResolvePlan(run, target, commit, check.conflicts, _guidance(repo, commit, target, check))


def _guidance(repo: Repo, commit: str, target: str, check: gm.Check) -> str:
    lines = [
        f"Resolve the merge conflicts: {target} was merged into this branch and these files hold"
        f" git conflict markers (<<<<<<<, =======, >>>>>>>): {', '.join(check.conflicts)}.",
        "Keep the intent of both sides, remove every marker, and make the verification pass."
        " Do not undo the other side's changes.",
    ]
    budget = TOTAL_CHARS
    for path in check.conflicts:
        text = gm.show_file(repo, commit, path)
        if text is None or budget <= 0:
            continue
        quoted = text[: min(FILE_CHARS, budget)]
        budget -= len(quoted)
        lines += [f"--- {path} (with markers){' (cut)' if len(quoted) < len(text) else ''}", quoted]
    return "\n".join(lines)
