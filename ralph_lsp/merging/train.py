"""The merge train (SPEC §12): a queue's succeeded runs merged in queue order, each onto the
result of the previous ones and verified there; a run that conflicts or fails is parked
``needs-review`` and the train goes on without it. One summary at the end. No LSP imports.

Pipelined: once a merge is verified, the target is moved to it (:func:`finish`: the
compare-and-swap, the checked-out work tree following) while the next run is already merged
onto that verified commit and verified; the next one's target moves only after the previous
one's did, from that commit. Should the previous move fail, the next one's work is thrown
away: the previous run is retried as a lone merge would be, then the next one made again
from the target as it is."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph_lsp.git import GitError, Repo, drivers_pinned
from ralph_lsp.git import merge as gm
from ralph_lsp.merging.merge import (
    REFUSED,
    VERIFIED,
    Outcome,
    Say,
    Scratch,
    Step,
    finish,
    merge_branch,
)
from ralph_lsp.merging.run_branch import (
    MERGED,
    NEEDS_REVIEW,
    RunBranch,
    current_branch,
    open_repo,
    train_runs,
)
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
    with drivers_pinned():  # the repository's drivers looked up once a step, not per command
        result = await _train(root, settings, say, into, strategy, run_ids, stop)
    result.duration_ms = int((time.monotonic() - started) * 1000)
    return result


async def _train(
    root: Path,
    settings: Settings,
    say: Say,
    into: str | None,
    strategy: gm.Strategy,
    run_ids: list[str] | None,
    stop: asyncio.Event | None,
) -> TrainResult:
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
        await _drive(_Train(repo, target, strategy, settings, say, stop, scratch), runs, result)
    finally:
        await scratch.close()
    return result


@dataclass
class _Train:
    repo: Repo
    into: str
    strategy: gm.Strategy
    settings: Settings
    say: Say
    stop: asyncio.Event | None
    scratch: Scratch

    async def merge(self, run: RunBranch, step: Step) -> Outcome:
        return await merge_branch(
            self.repo,
            run,
            self.into,
            self.strategy,
            self.settings,
            self.say,
            self.stop,
            self.scratch,
            step,
        )

    async def finish(self, run: RunBranch, o: Outcome) -> str:
        """Move the target to ``o``'s verified commit: ``merged``, ``refused`` (``o`` says
        why), or ``again`` (the target moved meanwhile: to be merged again from it)."""
        try:
            await asyncio.to_thread(finish, self.repo, run, o)
        except gm.TargetMoved as exc:
            o.state, o.reason = REFUSED, str(exc)
            self.say(f"⎇ {exc}: merging again from the new {self.into}")
            return "again"
        except (gm.MergeError, GitError, OSError) as exc:
            o.state, o.reason = REFUSED, str(exc)
        self.say(f"⎇ {run.change}: {o.state}: {o.reason}")
        return o.state


async def _drive(t: _Train, runs: list[RunBranch], result: TrainResult) -> None:
    held: tuple[RunBranch, Outcome, asyncio.Task[str]] | None = None
    try:
        for k, run in enumerate(runs):
            if t.stop is not None and t.stop.is_set():
                break
            t.say(f"⎇ merge train: {run.change} ({run.branch}, run {run.run_id})")
            base = held[1].commit if held is not None else None
            more = k + 1 < len(runs)
            outcome = await t.merge(run, Step(base=base, hold=True, more=more))
            if held is not None:
                moved = await held[2]
                if moved == "again":  # the previous run, retried as a lone merge is
                    result.outcomes[-1] = await t.merge(held[0], Step(again=True))
                if moved != MERGED:  # this one was made on a commit the target is not at
                    outcome = await t.merge(run, Step(hold=True, more=more))
            held = None
            if outcome.state == VERIFIED:
                held = (run, outcome, asyncio.create_task(t.finish(run, outcome)))
            result.outcomes.append(outcome)
    finally:
        if held is not None:
            await held[2]
