"""A run's record and status: what the run says of itself (SPEC §3 "History").

:class:`RunReporting` is the part of a run that keeps its status, its transitions, its iterations
and its guidance, saves them as the history record after every change, and emits the status and
log events. The loop (``run.Run``) decides; this part tells. The record's lists that grow with
the iterations are :class:`~ralph_lsp.runs.ledger.Ledger` s: their older entries live on disk, so
a run's memory does not grow with its length.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph_lsp.agents.user_config import user_config
from ralph_lsp.loop import budget, policy, spawn_facts, verify
from ralph_lsp.loop.iteration import IterationOutcome
from ralph_lsp.loop.run_git import RunGit
from ralph_lsp.loop.run_view import ReviewState
from ralph_lsp.loop.verification import Verification
from ralph_lsp.openspec.project_context import read_project_context
from ralph_lsp.openspec.tasks import Story, TasksDoc
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.runs.costs import CostTally
from ralph_lsp.runs.events import CheckpointEvent, GuidanceEvent, IterationEvent
from ralph_lsp.runs.history import RunHistory, process_started_at
from ralph_lsp.runs.ledger import Ledger
from ralph_lsp.runs.receipts import costs_json
from ralph_lsp.runs.records import (
    BlockedRecord,
    IterationRecord,
    RateLimitedRecord,
    SpawnRecord,
    TransitionRecord,
)
from ralph_lsp.runs.status import (
    EngineEvent,
    Level,
    LogEvent,
    RunStatus,
    StatusEvent,
    now_iso,
)
from ralph_lsp.settings import Settings

_PROCESS_STARTED = process_started_at(os.getpid())


@dataclass
class Guidance:
    text: str
    at: str
    delivered_in: int | None = None


class RunReporting:
    """The record-and-status half of a run (mixed into ``run.Run``)."""

    #: the costs of the counted iterations so far (made on first use by ``tally`` below)
    _tally: CostTally | None = None
    #: the model of the spawn under way, and why (the run sets it before each spawn)
    choice = policy.ModelChoice(None, None)
    budget: budget.Budget  # how the run prices what its agent reports

    @property
    def tally(self) -> CostTally:
        if self._tally is None:
            self._tally = CostTally()
        return self._tally

    #: where the run's events go (the engine's, or a test's): the run knows no engine
    send: Callable[[EngineEvent], None]
    id: str
    change: Change
    work: Change  # where the agent works (the change, or its copy in the run's worktree)
    settings: Settings
    status: RunStatus
    start_story: str | None
    guidance: list[Guidance]
    transitions: Ledger[TransitionRecord]
    iterations: Ledger[IterationRecord]
    rate_limited: Ledger[RateLimitedRecord]
    history: RunHistory
    ended_at: str | None
    doc: TasksDoc | None
    git: RunGit | None
    review: ReviewState
    verification: Verification

    @property
    def key(self) -> tuple[Path, str, str]:
        """(root, change, run id): what every event of this run names first."""
        return self.change.root, self.change.name, self.id

    def emit(self, event: EngineEvent) -> None:
        self.send(event)

    def log(self, text: str, level: Level = "info") -> None:
        self.send(LogEvent(self.change.root, self.change.name, text, level))

    def tell_iteration_end(self, n: int, pending: list[Guidance]) -> None:
        """The events of a counted iteration's end: checkpoint, the iteration, guidance."""
        entry = self.iterations.last()
        if self.git is not None:
            files = entry["filesChanged"]
            self.emit(
                CheckpointEvent(
                    *self.key, n, entry["checkpoint"], None if files is None else tuple(files)
                )
            )
        self.emit(IterationEvent(*self.key, "end", n, record=dict(entry)))
        for g in pending:
            if g.delivered_in == n:
                self.emit(GuidanceEvent(*self.key, g.text, n))

    def _history_error(self, message: str) -> None:
        self.log(message, "warning")

    def update(self, *, transition: bool = False, **changes: Any) -> None:
        for key, value in changes.items():
            setattr(self.status, key, value)
        self.status.updated_at = now_iso()
        if transition:
            self.transitions.append(
                {
                    "state": self.status.state,
                    "at": self.status.updated_at,
                    "reason": self.status.reason,
                }
            )
        self.save()
        self.send(StatusEvent(self.status.copy()))

    def record(self) -> dict[str, Any]:
        """The record as :class:`RunRecord` has it, its growing lists as their ledgers (written
        whole by ``RunHistory.save``)."""
        return {
            "runId": self.id,
            "change": self.change.name,
            "root": self.change.root.as_uri(),
            "startedAt": self.status.started_at,
            "endedAt": self.ended_at,
            "state": self.status.state,
            "reason": self.status.reason,
            "owner": {"pid": os.getpid(), "startedAt": _PROCESS_STARTED},
            "transitions": self.transitions,
            "iterations": self.iterations,
            "rateLimited": self.rate_limited,
            "reviews": self.review.rounds,  # each review round (SPEC §13)
            # iterations whose raw output was removed to keep the run under its cap
            "rawOutputDropped": self.history.dropped,
            "worktree": dict(self.status.worktree) if self.status.worktree else None,
            "sandbox": dict(self.status.sandbox) if self.status.sandbox else None,
            "guidance": [
                {"text": g.text, "at": g.at, "deliveredIn": g.delivered_in} for g in self.guidance
            ],
            "story": self.start_story,
            "blocked": _blocked_json(self.doc) if self.doc is not None else [],
            # the latest numbers, for a reader of the record alone (`ralph-lsp runs`)
            "progress": {
                "completed": self.status.completed,
                "total": self.status.total,
                "maxIterations": self.status.max_iterations,
            },
            # the last verification's conformance table (SPEC §13), its cases beside the record
            "conformance": self.verification.gate.record_json(),
            # SPEC §15: the total, cost per verified task, the spend without progress
            "costs": costs_json(self.tally.summary()),
        }

    def save(self, now: bool = False) -> None:
        """The record saved; ``now``: on disk before this returns (what another process was
        told is done, a guidance queued, is in the file it then reads)."""
        self.history.save(self.record(), now)

    def _announce(self, n: int, story: Story | None, doc: TasksDoc, guidance: int) -> None:
        where = f"story {story.id} {story.title}" if story else "whole change"
        self.update(
            iteration=n,
            model=self.choice.model or self.status.model,
            story=story.id if story else None,
            reason=f"iteration {n} · {where}",
            phase="agent",
            waiting=None,
            transition=True,
        )
        self.log(
            f"▶ iteration {n}/{self.status.max_iterations} · "
            + (f"story {story.id}: {story.title}" if story else "whole change")
            + f" · {doc.completed}/{doc.total} tasks"
            + (f" · guidance: {guidance}" if guidance else "")
        )

    def _say_user_config(self) -> None:
        """What of the user's own agent config the preset leaves out (ralph.agentUserConfig)."""
        s = self.settings
        if s.agent_command:
            return
        env = {**os.environ, **s.env}
        for note in user_config(
            s.agent, s.agent_user_config, env, s.agent_args, self.work.root
        ).notes:
            self.log(note)

    def _say_project_context(self) -> None:
        context, problem = read_project_context(self.work.root)
        if problem:
            self.log(problem, "warning")
        elif context:
            self.log(f"project context from openspec/config.yaml ({len(context)} characters)")

    def _record_spawn(
        self,
        n: int,
        started: str,
        outcome: IterationOutcome,
        result: policy.IterationResult,
        counts: bool,
        checks: list[verify.Result],
        docs: tuple[TasksDoc, TasksDoc],
    ) -> None:
        """The spawn's record, its receipt (SPEC §15) included; ``docs``: tasks.md before and
        after it."""
        res = outcome.result
        timeout = self.settings.iteration_timeout_seconds
        receipt = spawn_facts.receipt(outcome, result, self.choice, self.budget, docs, timeout)
        spawn: SpawnRecord = {
            "startedAt": started,
            "endedAt": now_iso(),
            "exitCode": outcome.exit_code,
            "costUsd": result.cost_usd,
            "costEstimated": result.cost_estimated,
            "numTurns": res.num_turns if res else None,
            "verification": [c.to_json() for c in checks] if checks else None,
            # the conformance table after that verification (None: it did not run, or no gate)
            "conformance": self.verification.gate.table_json() if checks else None,
            "refusals": [
                {"tool": r.tool, "input": r.input, "rule": r.rule} for r in outcome.refusals
            ],
            **receipt,
        }
        if counts:
            entry: IterationRecord = {
                "n": n,
                **spawn,
                "tasksChecked": max(0, result.checked),
                "checkpoint": None,
                "filesChanged": None,
            }
            self.iterations.append(entry)
            self.tally.add(entry)
            self.status.costs = costs_json(self.tally.summary())
            self.status.model = entry["model"] or self.status.model
        else:  # a rate-limited spawn has no number of its own: kept apart, before iteration n
            self.rate_limited.append({"beforeIteration": n, **spawn})

    def _summarize(
        self,
        n: int,
        outcome: IterationOutcome,
        result: policy.IterationResult,
        after: TasksDoc,
        elapsed: float,
    ) -> None:
        res = outcome.result
        summary = (
            f"◀ iteration {n} ended · exit {outcome.exit_code}"
            f" · {max(0, result.checked)} task(s) checked · {after.completed}/{after.total}"
            f" · {elapsed:.1f}s"
        )
        if res and res.num_turns is not None:
            summary += f" · {res.num_turns} turns"
        if result.cost_usd is not None:
            summary += f" · ${result.cost_usd:.4f}" + (
                " (estimate)" if result.cost_estimated else ""
            )
        if outcome.timed_out:
            summary += f" · timed out after {self.settings.iteration_timeout_seconds:g}s"
        self.log(summary)


def _blocked_json(doc: TasksDoc) -> list[BlockedRecord]:
    """The open blocked tasks, for the history record."""
    return [
        {"id": t.id, "line": t.line + 1, "text": t.text, "reason": why}
        for t, why in doc.blocked_open()
    ]
