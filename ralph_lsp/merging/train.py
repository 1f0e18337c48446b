"""The merge train (SPEC §12): a queue's succeeded runs merged in queue order, each onto the
result of the previous ones and verified there; a run that conflicts or fails is parked
``needs-review`` and the train goes on without it. One summary at the end. No LSP imports."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph_lsp.git import merge as gm
from ralph_lsp.merging.merge import REFUSED, Outcome, Say, Scratch, merge_branch
from ralph_lsp.merging.runs import MERGED, NEEDS_REVIEW, current_branch, open_repo, train_runs
from ralph_lsp.settings import Settings


@dataclass
class TrainResult:
    into: str
    outcomes: list[Outcome] = field(default_factory=list)
    duration_ms: int = 0

    def count(self, state: str) -> int:
        return sum(1 for o in self.outcomes if o.state == state)

    @property
    def verify_ms(self) -> int:
        return sum(o.verify_ms for o in self.outcomes)

    def summary(self) -> str:
        """One line: ``merge train into main: 2 merged, 1 parked (needs-review), 0 refused``."""
        return (
            f"merge train into {self.into}: {self.count(MERGED)} merged,"
            f" {self.count(NEEDS_REVIEW)} parked (needs-review), {self.count(REFUSED)} refused"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "into": self.into,
            "merged": self.count(MERGED),
            "parked": self.count(NEEDS_REVIEW),
            "refused": self.count(REFUSED),
            "durationMs": self.duration_ms,
            "verifyMs": self.verify_ms,
            "outcomes": [o.to_json() for o in self.outcomes],
        }


async def merge_train(
    root: Path,
    settings: Settings,
    say: Say,
    *,
    into: str | None = None,
    strategy: gm.Strategy = "merge",
    run_ids: list[str] | None = None,
    stop: asyncio.Event | None = None,
) -> TrainResult:
    """Merge the train's runs one after another (``run_ids``: exactly these, in this order)."""
    started = time.monotonic()
    repo = open_repo(root)
    await asyncio.to_thread(gm.require_merge_tree, repo)
    target = into if into else await asyncio.to_thread(current_branch, repo)
    runs = await asyncio.to_thread(train_runs, repo, root, False)
    if run_ids is not None:
        by_id = {r.run_id: r for r in runs}
        runs = [by_id[i] for i in run_ids if i in by_id]
    result = TrainResult(target)
    if not runs:
        say("⎇ merge train: no unmerged succeeded run ended on a branch; nothing to merge")
    scratch = Scratch(repo)  # one integration worktree for the whole train
    try:
        for run in runs:
            if stop is not None and stop.is_set():
                break
            say(f"⎇ merge train: {run.change} ({run.branch}, run {run.run_id})")
            outcome = await merge_branch(repo, run, target, strategy, settings, say, stop, scratch)
            result.outcomes.append(outcome)
    finally:
        await scratch.close()
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result
