"""One run's loop (SPEC §3): iterations, verification, limits, stop and guidance, until a final
state.

:class:`Run` spawns the agent once per iteration, each time fresh (``agent_spawn``), re-reads
tasks.md after it, runs the verification when due (``verification.Verification``), and asks the
policy whether to go on. Its record and status are kept by the half it inherits
(``reporting.RunReporting``). Progress is judged from tasks.md alone, never from what the agent
says. The review round (SPEC §13) is a hook of a few lines at the point of success, its body in
``review_round``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from ralph_lsp.loop import agent_spawn, budget, on_success, policy, sandboxing, spawn_facts, verify
from ralph_lsp.loop import run_git as rungit
from ralph_lsp.loop.following import TasksFollowing
from ralph_lsp.loop.iteration import IterationOutcome
from ralph_lsp.loop.policy import DEFAULT_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS
from ralph_lsp.loop.prompt import build_prompt, scope_story
from ralph_lsp.loop.reporting import Guidance, RunReporting
from ralph_lsp.loop.review_round import review_round
from ralph_lsp.loop.run_view import ReviewState
from ralph_lsp.loop.verification import Verification
from ralph_lsp.openspec.tasks import TasksDoc
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.proc.process import AgentProcess
from ralph_lsp.runs.claims import ChangeClaim
from ralph_lsp.runs.events import EndEvent, IterationEvent
from ralph_lsp.runs.history import RunHistory
from ralph_lsp.runs.ledger import Ledger
from ralph_lsp.runs.records import IterationRecord, RateLimitedRecord, TransitionRecord
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import EngineEvent, RunEnd, RunStatus, clock, iso, now_iso
from ralph_lsp.settings import Settings, model_for

# The longest a rate limit is waited for at once (a reset time far away is waited in turns).
MAX_WAIT_SECONDS = 6 * 3600.0


log = logging.getLogger(__name__)


def _initial_backoff() -> float:
    """``RALPH_BACKOFF_SECONDS``: the first wait after a limit that names no reset time."""
    try:
        value = float(os.environ.get("RALPH_BACKOFF_SECONDS", DEFAULT_BACKOFF_SECONDS))
    except ValueError:
        return DEFAULT_BACKOFF_SECONDS
    return min(max(value, 0.0), MAX_BACKOFF_SECONDS) if value == value else DEFAULT_BACKOFF_SECONDS


class Run(RunReporting, TasksFollowing):
    def __init__(
        self,
        send: Callable[[EngineEvent], None],
        pace: Callable[[], Awaitable[None]],
        change: Change,
        settings: Settings,
        max_iterations: int,
        scope: str,
        guidance: Sequence[str],
        run_id: str,
        start_story: str | None = None,
    ) -> None:
        self.send, self._pace = send, pace  # its events (reporting.py); the host's pace
        self.start_story = start_story  # ralph.run's `story`: worked on first
        self.change, self.settings, self.scope, self.id = change, settings, scope, run_id
        self.claim: ChangeClaim | None = None
        started = now_iso()
        self.status = RunStatus(
            run_id=self.id,
            change=change.name,
            root=change.root,
            state=RunState.RUNNING,
            iteration=0,
            max_iterations=max_iterations,
            completed=0,
            total=0,
            reason="starting",
            started_at=started,
            updated_at=started,
            cost_usd=None,
        )
        self.guidance = [Guidance(t, started) for t in guidance if t.strip()]
        # SPEC §12: a follow-up run (review comments) spawns the agent on its guidance even when
        # every task is already checked; it then ends like any run (verified or not).
        self.follow_up = False
        self.stop_event = asyncio.Event()
        self.stop_reason = "stopped by the user"
        self.archived_to: str | None = None  # where the agent archived the change, if it did
        self.process: AgentProcess | None = None
        self.task: asyncio.Task[None] | None = None
        self.history = RunHistory(change.root, self.id, self._history_error)
        # The record's growing lists: their older entries on disk (runs/ledger.py)
        self.iterations = Ledger[IterationRecord](self.history.ledger_path("iterations"))
        self.rate_limited = Ledger[RateLimitedRecord](self.history.ledger_path("rate-limited"))
        self.verification = Verification(self)
        self.transitions = Ledger[TransitionRecord](self.history.ledger_path("transitions"))
        self.ended_at: str | None = None
        self.doc: TasksDoc | None = None  # tasks.md as last read
        self._tasks_stat: tuple[int, int] | None = None
        # Where the agent works and tasks.md is read: the change itself, or its copy in the
        # run's git worktree (SPEC §8); history, status and log stay with ``change``.
        self.work: Change = change
        self.git: rungit.RunGit | None = None
        self.pruned: list[str] = []  # runs retention removed as this one started
        self.sandbox: sandboxing.RunSandbox | None = None  # every process of the run (§10)
        self.budget = budget.plan(settings, {**os.environ, **settings.env}, change.root)
        self.review = ReviewState()  # its review rounds (SPEC §13): loop/review_round.py

    def reason(self) -> str | None:
        return self.status.reason

    async def paced(self) -> None:
        await self._pace()

    def live_processes(self) -> list[AgentProcess]:
        """The agent's and a verification command's process, whichever runs now."""
        found = [self.process] if self.process is not None else []
        if self.verification.process is not None:
            found.append(self.verification.process)
        return found

    async def main(self) -> None:
        try:
            state, reason = await self._loop()
        except RunEnd as end:
            state, reason = end.state, end.reason
        except asyncio.CancelledError:
            # No await may be trusted here (the loop may be shutting down): kill synchronously.
            state, reason = RunState.STOPPED, "the run was cancelled"
            for proc in self.live_processes():
                proc.kill_now()
        except Exception as exc:  # a bug: say so, never leave the run hanging
            log.exception("run %s crashed", self.id)
            state, reason = RunState.FAILED, f"internal error: {exc!r}"
            await self._kill_process(self.settings.stop_grace_seconds)
        if self.stop_event.is_set() and state not in (RunState.SUCCEEDED, RunState.PLANNED):
            state, reason = RunState.STOPPED, self.stop_reason
        if state is RunState.SUCCEEDED and self.archived_to:
            reason += f"; the agent archived the change to {self.archived_to}"
        elif state is RunState.SUCCEEDED and self.settings.archive_on_success:
            reason += await on_success.archive(self.work, self.log)
        reason = await self._end_git(reason)
        if self.sandbox is not None:
            await self.sandbox.close()
        self.history.close_iteration_log()
        self.ended_at = now_iso()
        self.update(state=state, reason=reason, phase=None, waiting=None, transition=True)
        spent = self.tally.summary().text()
        self.log(
            f"■ {state}: {reason}" + (f" · {spent}" if spent else ""),
            "info" if state in (RunState.SUCCEEDED, RunState.PLANNED) else "warning",
        )
        self.emit(EndEvent(*self.key, state, reason))
        self.history.release_reserve()

    async def _loop(self) -> tuple[RunState, str]:
        await self._prepare_git()
        self.sandbox = await sandboxing.RunSandbox.open(
            self.settings, self.work.root, self.change.root, self.log
        )
        if self.sandbox is not None:
            self.update(sandbox=self.sandbox.to_json())
        self.update(reason="reading tasks.md", transition=True)
        doc = self.read_doc()
        self.update(completed=doc.completed, total=doc.total, reason="running")
        end = _blocked_end(doc)
        if end is not None:  # only a person can go on: not even verification is worth it
            return end.state, end.reason
        self.verification.choose()
        self._say_user_config()
        self._say_project_context()
        verified = failed = None
        if doc.total and doc.all_done and self.verification.enabled():
            verified, failed = await self.verification.run()
        end = self.verification.before_start(doc, verified, failed)
        if end is not None and not (self.follow_up and self.guidance and doc.total):
            if not self.review.wanted(self.settings, end, doc.total):
                return end.state, end.reason
            self.review.pending = end  # reviewed before anything else (SPEC §13)
        if self.git is not None:
            await self.git.begin()
        counters = self.verification.counters(_initial_backoff(), failed)
        limits = self._limits()
        while True:
            if self.stop_event.is_set():
                return RunState.STOPPED, "stopped by the user"
            if self.review.pending is not None:  # a success waits for its review round
                end, counters, doc = await review_round(self, counters, doc)
                if end is not None:
                    return end.state, end.reason
                continue
            end = policy.before_spawn(counters, limits, doc.completed, doc.total) or (
                _blocked_end(doc) or _full_end(self._disk_full())
            )
            if end is not None:
                return end.state, end.reason
            doc, decision = await self._iteration(doc, counters, limits)
            full = self._disk_full()
            if full is not None:  # nothing is left corrupt, but nothing more can be kept
                return RunState.FAILED, full
            if isinstance(decision, policy.End):
                if not self.review.wanted(self.settings, decision, doc.total):
                    return decision.state, decision.reason
                self.review.pending, counters = decision, decision.counters or counters
                continue
            if isinstance(decision, policy.Wait):
                await self._wait(decision)
            counters = decision.counters

    def _limits(self) -> policy.Limits:
        """The run's limits, and what its budgets count said once."""
        limits = budget.limits(self.settings, self.status.max_iterations, escalating=True)
        for name in limits.must_report:
            self.log(
                f"the {name} budget counts what this agentCommand reports (Claude's stream-json"
                f" result); an iteration that reports no {name} ends the run"
            )
        return limits

    async def _checkpoint(self, n: int, after: TasksDoc, pending: list[Guidance]) -> None:
        """A counted iteration's checkpoint (SPEC §8) into its record, then its end events."""
        if self.git is not None:
            made = await self.git.after_iteration(n, after.completed, after.total)
            self.iterations.last()["checkpoint"] = made["checkpoint"]
            self.iterations.last()["filesChanged"] = made["filesChanged"]
        self.tell_iteration_end(n, pending)

    def _disk_full(self) -> str | None:
        """Why the run must end because the disk is full (its history or a checkpoint could
        not be written), or None."""
        if self.history.full is not None:
            return self.history.full
        return self.git.no_space() if self.git is not None else None

    async def _prepare_git(self) -> None:
        """Checkpoints and, with ``isolation: worktree``, the run's own worktree (SPEC §8)."""
        try:
            self.git = await rungit.prepare(
                self.change.root,
                self.change.name,
                self.id,
                self.settings,
                lambda text: self.log(text, "warning"),
                self.log,
            )
        except rungit.IsolationError as exc:
            raise RunEnd(RunState.FAILED, str(exc)) from exc
        if self.git.worktree is not None:
            self.work = Change(self.git.worktree.root, self.change.name)
            self.update(worktree=self.git.worktree_json())
        if self.pruned:  # retention removed these runs' history when the run was started
            await asyncio.to_thread(
                rungit.prune_checkpoints, self.change.root, self.change.name, self.pruned
            )

    async def _end_git(self, reason: str) -> str:
        if self.git is None:
            return reason
        try:
            branch = await self.git.end()
        except Exception:  # never let the worktree's cleanup hide the run's outcome
            log.exception("ending the git side of run %s failed", self.id)
            branch = None
        if branch is None:
            return reason
        return f"{reason}; the work is on branch {branch} (review: git diff HEAD...{branch})"

    async def _iteration(
        self, doc: TasksDoc, counters: policy.Counters, limits: policy.Limits
    ) -> tuple[TasksDoc, policy.Decision]:
        """One spawn of the agent, and what the policy makes of it."""
        n = counters.counted + 1  # a spawn that does not count keeps the number for the next
        story = scope_story(doc, self.scope, self.start_story)
        counters, self.choice = policy.choose_model(
            counters, limits, story.id if story else None, model_for(self.settings, "apply")
        )
        prompt, pending = self._prompt(n, doc, counters)
        self._announce(n, story, doc, len(pending))
        started, t0 = now_iso(), time.monotonic()
        self.emit(IterationEvent(*self.key, "start", n, story.id if story else None, started))
        outcome = await self._iterate(n, prompt)
        elapsed = time.monotonic() - t0
        read_error: RunEnd | None = None
        after = doc
        try:
            after = self.read_doc()
        except RunEnd as exc:
            read_error = exc
        result = spawn_facts.facts(
            outcome, doc.completed, after, self.budget, self.stop_event.is_set(), self.choice.model
        )
        checks: list[verify.Result] = []
        if read_error is None and self.verification.due_after(result, counters):
            self.update(completed=after.completed, total=after.total)
            verified, failed = await self.verification.run()
            checks = list(self.verification.last_results)
            result = replace(result, **self.verification.facts(verified, failed, counters))
            outcome.refusals += self.verification.take_refusals()
        decision = policy.after_iteration(result, counters, limits, time.time())
        counts = not isinstance(decision, policy.Wait)
        if not counts or result.start_error is not None or policy.failed_start(result):
            for g in pending:  # nothing was delivered: the next spawn gets it
                g.delivered_in = None
        self._record_spawn(n, started, outcome, result, counts, checks, (doc, after))
        refused = tuple(dict.fromkeys([*self.status.refusals, *(r.rule for r in outcome.refusals)]))
        if refused != self.status.refusals:
            self.update(refusals=refused[-20:])
        if counts:
            await self._checkpoint(n, after, pending)
        self.status.cost_estimated = self.status.cost_estimated or result.cost_estimated
        cost = policy.add_cost(counters.cost_usd, result.cost_usd)
        self.update(completed=after.completed, total=after.total, cost_usd=cost)
        self._summarize(n, outcome, result, after, elapsed)
        if read_error is not None:
            if result.stopped:
                return after, policy.End(RunState.STOPPED, "stopped by the user")
            raise read_error
        return after, decision

    def _prompt(
        self, n: int, doc: TasksDoc, counters: policy.Counters
    ) -> tuple[str, list[Guidance]]:
        """Iteration ``n``'s prompt, and the guidance it delivers (marked delivered in it)."""
        pending = [g for g in self.guidance if g.delivered_in is None]
        for g in pending:
            g.delivered_in = n
        prompt = build_prompt(
            self.work,
            doc,
            scope=self.scope,
            verify_commands=[c.line for c in self.verification.commands],
            guidance=[g.text for g in pending],
            verify_failure=self.verification.last_failure if counters.failing else None,
            start_story=self.start_story,
            **self.verification.gate.prompt_args(),
        )
        return prompt, pending

    async def _wait(self, wait: policy.Wait) -> None:
        """A rate or usage limit: wait (stoppable) without counting the spawn."""
        seconds = min(wait.seconds, MAX_WAIT_SECONDS)
        until = time.time() + seconds
        self.update(
            reason=f"rate limited ({wait.message}); retrying at {clock(until)}",
            phase="waiting",
            waiting={"kind": "rateLimit", "until": iso(until)},
            transition=True,
        )
        self.log(
            f"⏸ rate limited: {wait.message} — waiting {seconds:.0f}s (until"
            f" {clock(until)}); this iteration does not count",
            "warning",
        )
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.stop_event.wait(), timeout=seconds)

    async def _iterate(self, n: int, prompt: str) -> IterationOutcome:
        return await agent_spawn.iterate(self, n, prompt)

    async def _kill_process(self, grace: float) -> None:
        proc = self.process
        if proc is not None:
            try:
                await asyncio.wait_for(proc.terminate(grace), timeout=grace + 5)
            except Exception:
                proc.kill_now()


def _full_end(why: str | None) -> policy.End | None:
    return None if why is None else policy.End(RunState.FAILED, why)


def _blocked_end(doc: TasksDoc) -> policy.End | None:
    blocked = doc.blocked_open()
    open_tasks = doc.total - doc.completed
    return policy.all_blocked(open_tasks, [(t.label, why) for t, why in blocked])
