"""The Ralph loop (SPEC §3): iterations, outcomes, stop, guidance, history.

One :class:`Engine` owns every run of a process (the CLI's one, or the server's many). A run
spawns the agent once per iteration, each time fresh, re-reads tasks.md after it, and decides
whether to go on. Progress is judged from tasks.md alone, never from what the agent says.

The engine emits events to whoever drives it: :class:`StatusEvent` on every change of a run's
status, :class:`LogEvent` for the agent's formatted output and the orchestrator's own messages,
and (``loop/events.py``) iteration start/end, verification, checkpoint, guidance delivered and
the end. It never writes tasks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from ralph_lsp.agents import build_invocation, verify_rules
from ralph_lsp.loop import policy, verify
from ralph_lsp.loop import run_git as rungit
from ralph_lsp.loop.events import (
    CheckpointEvent,
    EndEvent,
    GuidanceEvent,
    IterationEvent,
    VerificationEvent,
)
from ralph_lsp.loop.history import (
    BlockedRecord,
    ChangeBusy,
    ChangeClaim,
    IterationRecord,
    RateLimitedRecord,
    RunHistory,
    RunRecord,
    SpawnRecord,
    TransitionRecord,
    new_run_id,
    process_started_at,
    prune_runs,
)
from ralph_lsp.loop.iteration import AgentIteration, IterationOutcome, bounded
from ralph_lsp.loop.policy import DEFAULT_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS, RunState
from ralph_lsp.loop.prompt import build_prompt, scope_story
from ralph_lsp.openspec.project_context import read_project_context
from ralph_lsp.openspec.tasks import Story, TasksDoc, read_tasks_text
from ralph_lsp.openspec.tasks_fast import parse_tasks
from ralph_lsp.openspec.workspace import ARCHIVE, Change, resolve_change
from ralph_lsp.proc.process import AgentProcess, AgentStartError, SpawnSpec
from ralph_lsp.settings import SCOPES, Settings, positive_int

log = logging.getLogger(__name__)
_PROCESS_STARTED = process_started_at(os.getpid())

FINAL_STATES = tuple(state.value for state in RunState if state.final)
Level = Literal["info", "warning", "error"]
Phase = Literal["agent", "verifying", "waiting"]

# The longest a rate limit is waited for at once (a reset time far away is waited in turns).
MAX_WAIT_SECONDS = 6 * 3600.0
# One guidance text at most (the prompt bounds all guidance together, see prompt.py).
MAX_GUIDANCE_CHARS = 16_000


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _initial_backoff() -> float:
    """``RALPH_BACKOFF_SECONDS``: the first wait after a limit that names no reset time."""
    try:
        value = float(os.environ.get("RALPH_BACKOFF_SECONDS", DEFAULT_BACKOFF_SECONDS))
    except ValueError:
        return DEFAULT_BACKOFF_SECONDS
    return min(max(value, 0.0), MAX_BACKOFF_SECONDS) if value == value else DEFAULT_BACKOFF_SECONDS


def _iso(epoch: float) -> str:
    stamp = datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")
    return stamp.replace("+00:00", "Z")


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


class EngineError(Exception):
    """A request the engine refuses; the message says what was wrong and what to do."""


@dataclass
class RunStatus:
    run_id: str
    change: str
    root: Path
    state: RunState
    iteration: int
    max_iterations: int
    completed: int
    total: int
    reason: str | None
    started_at: str
    updated_at: str
    cost_usd: float | None
    story: str | None = None
    # What the run is doing now, so that no client reads the English reason to know it.
    phase: Phase | None = None
    waiting: dict[str, Any] | None = None  # {"kind": "rateLimit" | "network", "until"?}
    # With worktree isolation: {"branch", "root", "tasksUri"} of the run's worktree (SPEC §8).
    worktree: dict[str, Any] | None = None
    # The permission rules the agent was refused in this run, first seen first (SPEC §4 v2).
    refusals: tuple[str, ...] = ()

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "change": self.change,
            "root": self.root.as_uri(),
            "state": self.state,
            "iteration": self.iteration,
            "maxIterations": self.max_iterations,
            "completed": self.completed,
            "total": self.total,
            "reason": self.reason,
            "startedAt": self.started_at,
            "updatedAt": self.updated_at,
            "costUsd": self.cost_usd,
            "story": self.story,
            "phase": self.phase,
            "waiting": dict(self.waiting) if self.waiting else None,
            "worktree": dict(self.worktree) if self.worktree else None,
            "refusals": list(self.refusals),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunStatus:
        """The inverse of :meth:`to_json` (raises KeyError/TypeError/ValueError on a bad one)."""
        return _status_from_json(cls, data)

    def copy(self) -> RunStatus:
        return RunStatus(**{k: getattr(self, k) for k in self.__dataclass_fields__})


@dataclass(frozen=True)
class StatusEvent:
    status: RunStatus


@dataclass(frozen=True)
class LogEvent:
    root: Path
    change: str
    text: str
    level: Level = "info"


EngineEvent = (
    StatusEvent
    | LogEvent
    | IterationEvent
    | VerificationEvent
    | CheckpointEvent
    | GuidanceEvent
    | EndEvent
)


@dataclass
class _Guidance:
    text: str
    at: str
    delivered_in: int | None = None


class _Run:
    def __init__(
        self,
        engine: Engine,
        change: Change,
        settings: Settings,
        max_iterations: int,
        scope: str,
        guidance: Sequence[str],
        run_id: str,
        start_story: str | None = None,
    ) -> None:
        self.engine = engine
        self.start_story = start_story  # ralph.run's `story`: worked on first
        self.change = change
        self.settings = settings
        self.scope = scope
        self.id = run_id
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
        self.guidance = [_Guidance(t, started) for t in guidance if t.strip()]
        self.stop_event = asyncio.Event()
        self.stop_reason = "stopped by the user"
        self.archived_to: str | None = None  # where the agent archived the change, if it did
        self.process: AgentProcess | None = None
        self.task: asyncio.Task[None] | None = None
        self.history = RunHistory(change.root, self.id, self._history_error)
        self.iterations: list[IterationRecord] = []
        self.rate_limited: list[RateLimitedRecord] = []  # spawns that did not count
        self.verify: list[verify.Command] = []
        self.verifier: verify.Runner | None = None  # while verification runs
        self.last_results: list[verify.Result] = []
        self.last_failure: verify.Result | None = None
        self.transitions: list[TransitionRecord] = []
        self.ended_at: str | None = None
        self.doc: TasksDoc | None = None  # tasks.md as last read
        self._tasks_stat: tuple[int, int] | None = None
        # Where the agent works and tasks.md is read: the change itself, or its copy in the
        # run's git worktree (SPEC §8); history, status and log stay with ``change``.
        self.work: Change = change
        self.git: rungit.RunGit | None = None

    # -- events ------------------------------------------------------------------------------
    @property
    def key(self) -> tuple[Path, str, str]:
        """(root, change, run id): what every event of this run names first."""
        return self.change.root, self.change.name, self.id

    def emit(self, event: EngineEvent) -> None:
        self.engine._emit(event)

    def log(self, text: str, level: Level = "info") -> None:
        self.engine._emit(LogEvent(self.change.root, self.change.name, text, level))

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
        self.engine._emit(StatusEvent(self.status.copy()))

    def record(self) -> RunRecord:
        return {
            "runId": self.id,
            "change": self.change.name,
            "root": self.change.root.as_uri(),
            "startedAt": self.status.started_at,
            "endedAt": self.ended_at,
            "state": self.status.state,
            "reason": self.status.reason,
            "owner": {"pid": os.getpid(), "startedAt": _PROCESS_STARTED},
            "transitions": list(self.transitions),
            "iterations": list(self.iterations),
            "rateLimited": list(self.rate_limited),
            # iterations whose raw output was removed to keep the run under its cap
            "rawOutputDropped": list(self.history.dropped),
            "worktree": dict(self.status.worktree) if self.status.worktree else None,
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
        }

    def save(self) -> None:
        self.history.save(self.record())

    # -- tasks.md ----------------------------------------------------------------------------
    def read_doc(self) -> TasksDoc:
        """Parse tasks.md; raises _RunEnd('failed') when it vanished or cannot be read."""
        path = self.work.tasks_path
        if not self.work.folder.is_dir():
            archived = self._archived_tasks()
            if archived is None:
                raise _RunEnd(RunState.FAILED, f"the change folder {self.work.folder} was removed")
            path = archived
        try:
            text = read_tasks_text(path)
        except OSError as exc:
            raise _RunEnd(
                RunState.FAILED,
                f"tasks.md cannot be read ({exc.strerror or exc}); nothing was changed",
            ) from exc
        if text is None:
            raise _RunEnd(RunState.FAILED, f"{path} is missing")
        doc = parse_tasks(text)
        if path != self.work.tasks_path and not (doc.total and doc.all_done):
            raise _RunEnd(
                RunState.FAILED,
                f"the change was archived to {path.parent} with"
                f" {doc.total - doc.completed} of {doc.total} tasks open",
            )
        self.doc = doc
        return doc

    def _archived_tasks(self) -> Path | None:
        """The tasks.md of this change archived by the agent (OpenSpec's last step moves it to
        ``openspec/changes/archive/<date>-<name>/``), newest first, if there is one."""
        archive = self.work.folder.parent / ARCHIVE
        try:
            found = sorted(
                (e.path for e in os.scandir(archive) if e.name.endswith(f"-{self.change.name}")),
                reverse=True,
            )
        except OSError:
            return None
        for folder in found:
            path = Path(folder) / "tasks.md"
            if path.is_file():
                if not self.archived_to:
                    self.archived_to = str(path.parent)
                    self.log(f"the agent archived the change to {path.parent}")
                return path
        return None

    def poll_tasks(self) -> tuple[int, int]:
        """Cheap live progress during an iteration: re-parse only when the file changed.
        Returns (completed, total) as the status now says."""
        try:
            st = self.work.tasks_path.stat()
        except OSError:
            return self.status.completed, self.status.total
        key = (st.st_mtime_ns, st.st_size)
        if key != self._tasks_stat:
            self._tasks_stat = key
            try:
                text = read_tasks_text(self.work.tasks_path)
            except OSError:
                text = None
            if text is not None:
                doc = parse_tasks(text)
                if (doc.completed, doc.total) != (self.status.completed, self.status.total):
                    self.update(completed=doc.completed, total=doc.total)
        return self.status.completed, self.status.total

    def reason(self) -> str | None:
        return self.status.reason

    async def paced(self) -> None:
        if self.engine.pace is not None:
            await self.engine.pace()

    def live_processes(self) -> list[AgentProcess]:
        """The agent's and a verification command's process, whichever runs now."""
        found = [self.process] if self.process is not None else []
        if self.verifier is not None and self.verifier.process is not None:
            found.append(self.verifier.process)
        return found

    # -- the loop ----------------------------------------------------------------------------
    async def main(self) -> None:
        try:
            state, reason = await self._loop()
        except _RunEnd as end:
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
        if self.stop_event.is_set() and state is not RunState.SUCCEEDED:
            state, reason = RunState.STOPPED, self.stop_reason
        if state is RunState.SUCCEEDED and self.archived_to:
            reason += f"; the agent archived the change to {self.archived_to}"
        reason = await self._end_git(reason)
        self.history.close_iteration_log()
        self.ended_at = now_iso()
        self.update(state=state, reason=reason, phase=None, waiting=None, transition=True)
        self.log(f"■ {state}: {reason}", "info" if state is RunState.SUCCEEDED else "warning")
        self.engine._emit(EndEvent(self.change.root, self.change.name, self.id, state, reason))

    async def _loop(self) -> tuple[RunState, str]:
        await self._prepare_git()
        self.update(reason="reading tasks.md", transition=True)
        doc = self.read_doc()
        self.update(completed=doc.completed, total=doc.total, reason="running")
        end = _blocked_end(doc)
        if end is not None:  # only a person can go on: not even verification is worth it
            return end.state, end.reason
        self._choose_verification()
        context, problem = read_project_context(self.work.root)
        if problem:
            self.log(problem, "warning")
        elif context:
            self.log(f"project context from openspec/config.yaml ({len(context)} characters)")
        verified = failed = None
        if doc.total and doc.all_done and self._verifies():
            verified, failed = await self._verify()
        end = policy.before_start(doc.completed, doc.total, verified, failed)
        if end is not None:
            return end.state, end.reason
        if self.git is not None:
            await self.git.begin()
        counters = policy.Counters(backoff=_initial_backoff(), failing=failed)
        limits = policy.Limits(
            self.status.max_iterations, self.settings.stuck_after, self.settings.max_cost_usd
        )
        while True:
            if self.stop_event.is_set():
                return RunState.STOPPED, "stopped by the user"
            end = policy.before_spawn(counters, limits, doc.completed, doc.total) or (
                _blocked_end(doc)
            )
            if end is not None:
                return end.state, end.reason
            doc, decision = await self._iteration(doc, counters, limits)
            if isinstance(decision, policy.End):
                return decision.state, decision.reason
            if isinstance(decision, policy.Wait):
                await self._wait(decision)
            counters = decision.counters

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
            raise _RunEnd(RunState.FAILED, str(exc)) from exc
        if self.git.worktree is not None:
            self.work = Change(self.git.worktree.root, self.change.name)
            self.update(worktree=self.git.worktree_json())
        await asyncio.to_thread(
            rungit.prune_checkpoints, self.change.root, self.change.name, self.id
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
        pending = [g for g in self.guidance if g.delivered_in is None]
        for g in pending:
            g.delivered_in = n
        prompt = build_prompt(
            self.work,
            doc,
            scope=self.scope,
            verify_commands=[c.line for c in self.verify],
            guidance=[g.text for g in pending],
            verify_failure=self.last_failure if counters.failing else None,
            start_story=self.start_story,
        )
        self._announce(n, story, doc, len(pending))
        started, t0 = now_iso(), time.monotonic()
        self.emit(IterationEvent(*self.key, "start", n, story.id if story else None, started))
        outcome = await self._iterate(n, prompt)
        elapsed = time.monotonic() - t0
        read_error: _RunEnd | None = None
        after = doc
        try:
            after = self.read_doc()
        except _RunEnd as exc:
            read_error = exc
        result = _facts(outcome, doc.completed, after, stopped=self.stop_event.is_set())
        checks: list[verify.Result] = []
        if read_error is None and self._verifies_after(result, counters.failing):
            self.update(completed=after.completed, total=after.total)
            verified, failed = await self._verify()
            checks = list(self.last_results)
            fixed = counters.failing is not None and failed is None
            result = replace(result, verified=verified, verify_failed=failed, verify_fixed=fixed)
        decision = policy.after_iteration(result, counters, limits, time.time())
        counts = not isinstance(decision, policy.Wait)
        if not counts or result.start_error is not None or policy.failed_start(result):
            for g in pending:  # nothing was delivered: the next spawn gets it
                g.delivered_in = None
        self._record_spawn(n, started, outcome, result, counts, checks)
        refused = tuple(dict.fromkeys([*self.status.refusals, *(r.rule for r in outcome.refusals)]))
        if refused != self.status.refusals:
            self.update(refusals=refused[-20:])
        if counts and self.git is not None:
            made = await self.git.after_iteration(n, after.completed, after.total)
            self.iterations[-1]["checkpoint"] = made["checkpoint"]
            self.iterations[-1]["filesChanged"] = made["filesChanged"]
        if counts:
            self._ended(n, pending)
        cost = policy.add_cost(counters.cost_usd, result.cost_usd)
        self.update(completed=after.completed, total=after.total, cost_usd=cost)
        self._summarize(n, outcome, result, after, elapsed)
        if read_error is not None:
            if result.stopped:
                return after, policy.End(policy.RunState.STOPPED, "stopped by the user")
            raise read_error
        return after, decision

    def _ended(self, n: int, pending: list[_Guidance]) -> None:
        """The events of a counted iteration's end: checkpoint, the iteration, guidance."""
        entry = self.iterations[-1]
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

    # -- verification ------------------------------------------------------------------------
    def _choose_verification(self) -> None:
        """The commands in use and where they came from, said in the run's first lines."""
        try:
            self.verify = verify.commands(self.settings.verify_commands, self.work.root)
        except ValueError as exc:
            raise _RunEnd(RunState.FAILED, str(exc)) from None
        if self.settings.verify_when == "off":
            self.log("verification is off (verifyWhen): success is every task checked")
        elif not self.verify:
            self.log(
                "no verification command is set (verifyCommands) or defined by the project:"
                " success will be every task checked, and nothing is verified",
                "warning",
            )
        else:
            used = "; ".join(f"{c.line} ({c.source})" for c in self.verify)
            self.log(f"verification ({self.settings.verify_when}): {used}")

    def _verifies(self) -> bool:
        return bool(self.verify) and self.settings.verify_when != "off"

    def _verifies_after(self, r: policy.IterationResult, failing: str | None) -> bool:
        """Verification after an iteration: when every task is checked, after one that checked
        a task (verifyWhen each), and after every iteration while it fails."""
        if not self._verifies() or r.stopped or r.start_error or r.total == 0:
            return False
        if policy.rate_limit(r) is not None:
            return False
        each = self.settings.verify_when == "each" and r.checked > 0
        return r.completed >= r.total or each or failing is not None

    async def _verify(self) -> tuple[str | None, str | None]:
        """Run the commands; (what passed, None) or (None, what failed)."""
        listed = verify.summary(self.verify)
        self.update(phase="verifying", reason=f"verifying: {listed}", transition=True)
        env = dict(os.environ)
        env.update(self.settings.env)
        runner = verify.Runner(
            self.work.root,
            env,
            bounded(self.settings.verify_timeout_seconds) or 0.0,
            self.stop_event,
            lambda lines, err: self.log("\n".join(lines), "warning" if err else "info"),
            grace=bounded(self.settings.stop_grace_seconds) or 0.0,
        )
        self.verifier = runner
        try:
            self.last_results = await runner.run(self.verify)
        finally:
            self.verifier = None
        self.update(phase=None)
        self.last_failure = next((r for r in self.last_results if not r.passed), None)
        results = tuple(dict(r.to_json()) for r in self.last_results)
        self.emit(VerificationEvent(*self.key, results, self.last_failure is None))
        if self.last_failure is not None:
            return None, self.last_failure.describe()
        if len(self.last_results) < len(self.verify):  # stopped before every command ran
            return None, "verification was stopped"
        return listed, None

    def _announce(self, n: int, story: Story | None, doc: TasksDoc, guidance: int) -> None:
        where = f"story {story.id} {story.title}" if story else "whole change"
        self.update(
            iteration=n,
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

    def _record_spawn(
        self,
        n: int,
        started: str,
        outcome: IterationOutcome,
        result: policy.IterationResult,
        counts: bool,
        checks: list[verify.Result],
    ) -> None:
        res = outcome.result
        spawn: SpawnRecord = {
            "startedAt": started,
            "endedAt": now_iso(),
            "exitCode": outcome.exit_code,
            "costUsd": res.cost_usd if res else None,
            "numTurns": res.num_turns if res else None,
            "usage": res.usage if res else None,
            "verification": [c.to_json() for c in checks] if checks else None,
            "refusals": [r.to_json() for r in outcome.refusals],
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
        if res and res.cost_usd is not None:
            summary += f" · ${res.cost_usd:.4f}"
        if outcome.timed_out:
            summary += f" · timed out after {self.settings.iteration_timeout_seconds:g}s"
        self.log(summary)

    async def _wait(self, wait: policy.Wait) -> None:
        """A rate or usage limit: wait (stoppable) without counting the spawn."""
        seconds = min(wait.seconds, MAX_WAIT_SECONDS)
        until = time.time() + seconds
        self.update(
            reason=f"rate limited ({wait.message}); retrying at {_clock(until)}",
            phase="waiting",
            waiting={"kind": "rateLimit", "until": _iso(until)},
            transition=True,
        )
        self.log(
            f"⏸ rate limited: {wait.message} — waiting {seconds:.0f}s (until"
            f" {_clock(until)}); this iteration does not count",
            "warning",
        )
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.stop_event.wait(), timeout=seconds)

    async def _iterate(self, n: int, prompt: str) -> IterationOutcome:
        prompt_file = self.history.prompt_file(n)
        temporary = False
        try:
            if prompt_file is None:
                raise OSError("history unavailable")
            prompt_file.write_text(prompt, encoding="utf-8")
        except OSError:
            # No history folder: the prompt goes to a private temporary file, removed after.
            fd, name = tempfile.mkstemp(prefix="ralph-prompt-", suffix=".md")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(prompt)
            prompt_file, temporary = Path(name), True
        try:
            return await self._spawn(n, prompt, prompt_file)
        finally:
            if temporary:
                with contextlib.suppress(OSError):
                    prompt_file.unlink()

    async def _spawn(self, n: int, prompt: str, prompt_file: Path) -> IterationOutcome:
        s = self.settings
        try:
            inv = build_invocation(
                s.agent,
                list(s.agent_command) if s.agent_command else None,
                list(s.agent_args),
                prompt,
                prompt_file,
                python=sys.executable,
                cwd=self.work.root,
                # the checks the prompt asks for may run without asking (SPEC §4 v2)
                allowed_tools=[*verify_rules([c.line for c in self.verify]), *s.allowed_tools],
            )
        except ValueError as exc:
            return IterationOutcome(start_error=AgentStartError("not_found", str(exc)))
        env = dict(os.environ)
        env.update(s.env)
        spec = SpawnSpec(argv=inv.argv, cwd=self.work.root, env=env, stdin_data=inv.stdin_data)
        self.history.open_iteration_log(n)
        iteration = AgentIteration(self, inv, spec, self.history.write_raw)
        try:
            if not await iteration.start():
                return iteration.out
            self.process = iteration.process
            return await iteration.run()
        finally:
            self.process = None
            self.history.close_iteration_log()

    async def _kill_process(self, grace: float) -> None:
        proc = self.process
        if proc is not None:
            try:
                await asyncio.wait_for(proc.terminate(grace), timeout=grace + 5)
            except Exception:
                proc.kill_now()


def _status_from_json(cls: type[RunStatus], data: dict[str, Any]) -> RunStatus:
    from urllib.parse import unquote, urlparse

    uri = urlparse(str(data["root"]))
    if uri.scheme != "file":
        raise ValueError(f"root is not a file: URI: {data['root']!r}")
    phase = data.get("phase")
    return cls(
        run_id=str(data["runId"]),
        change=str(data["change"]),
        root=Path(unquote(uri.path)),
        state=RunState(data["state"]),
        iteration=int(data["iteration"]),
        max_iterations=int(data["maxIterations"]),
        completed=int(data["completed"]),
        total=int(data["total"]),
        reason=data.get("reason"),
        started_at=str(data["startedAt"]),
        updated_at=str(data["updatedAt"]),
        cost_usd=data.get("costUsd"),
        story=data.get("story"),
        phase=phase if phase in ("agent", "verifying", "waiting") else None,
        waiting=data.get("waiting") or None,
        worktree=data.get("worktree") or None,
        refusals=tuple(data.get("refusals") or ()),
    )


def _blocked_end(doc: TasksDoc) -> policy.End | None:
    blocked = doc.blocked_open()
    open_tasks = doc.total - doc.completed
    return policy.all_blocked(open_tasks, [(t.label, why) for t, why in blocked])


def _blocked_json(doc: TasksDoc) -> list[BlockedRecord]:
    """The open blocked tasks, for the history record."""
    return [
        {"id": t.id, "line": t.line + 1, "text": t.text, "reason": why}
        for t, why in doc.blocked_open()
    ]


def _facts(
    out: IterationOutcome, completed_before: int, after: TasksDoc, *, stopped: bool
) -> policy.IterationResult:
    """The facts of one spawn, as the run policy reads them."""
    res = out.result
    return policy.IterationResult(
        completed_before=completed_before,
        completed=after.completed,
        total=after.total,
        exit_code=out.exit_code,
        start_error=str(out.start_error) if out.start_error is not None else None,
        printed=out.printed,
        activity=out.activity,
        timed_out=out.timed_out,
        stopped=out.stopped or stopped,
        problems=tuple(out.problems),
        last_error=out.last_error,
        cost_usd=res.cost_usd if res else None,
    )


class _RunEnd(Exception):
    def __init__(self, state: RunState, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


class Engine:
    """Every run of this process; one run per change at a time."""

    def __init__(self, on_event: Callable[[EngineEvent], None] | None = None) -> None:
        self._on_event = on_event
        # Awaited after each batch of agent output: a slow reader of the events holds the
        # agent back (its pipe fills) instead of events piling up (SPEC §4, §9).
        self.pace: Callable[[], Awaitable[None]] | None = None
        self._active: dict[tuple[Path, str], _Run] = {}
        self._finished: dict[tuple[Path, str], RunStatus] = {}

    def _emit(self, event: EngineEvent) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:  # a renderer's bug must not kill a run
            log.exception("engine event handler failed")

    async def start(
        self,
        root: Path,
        change: str,
        settings: Settings,
        *,
        max_iterations: int | None = None,
        scope: str | None = None,
        guidance: Sequence[str] = (),
        story: str | None = None,
    ) -> RunStatus:
        resolved = resolve_change(root, change)  # UnknownChangeError for unknown names
        key = (resolved.root, resolved.name)
        active = self._active.get(key)
        if active is not None:
            raise EngineError(
                f"change {change!r} is already running (run {active.id},"
                f" iteration {active.status.iteration}); stop it first"
            )
        if max_iterations is not None:
            try:
                max_iterations = positive_int(max_iterations)
            except ValueError:
                raise EngineError("maxIterations must be a whole number of at least 1") from None
        if scope is not None and scope not in SCOPES:
            raise EngineError(f"iterationScope must be one of {', '.join(SCOPES)}")
        for text in guidance:
            _check_guidance(text, allow_empty=True)
        if story is not None:
            _check_story(resolved, story)
        refusal = await rungit.refusal(resolved.root, settings)
        if refusal is not None:
            raise EngineError(refusal)
        run_id = new_run_id()
        try:  # one run per change on the machine: another process may hold it
            claim = ChangeClaim.take(resolved.root, resolved.name, run_id)
        except ChangeBusy as exc:
            raise EngineError(str(exc)) from None
        # Retention: the newest historyKeepRuns runs of the change, this one included.
        prune_runs(resolved.root, resolved.name, settings.history_keep_runs - 1)
        run = _Run(
            self,
            resolved,
            settings,
            max_iterations or settings.max_iterations,
            scope or settings.iteration_scope,
            guidance,
            run_id,
            story,
        )
        run.claim = claim
        self._active[key] = run
        run.update(transition=True)
        run.task = asyncio.ensure_future(self._main(run))
        return run.status.copy()

    async def _main(self, run: _Run) -> None:
        key = (run.change.root, run.change.name)
        try:
            await run.main()
        finally:
            if run.claim is not None:
                run.claim.release()
            self._active.pop(key, None)
            self._finished[key] = run.status.copy()

    def _find(self, root: Path, change: str) -> _Run:
        run = self._active.get((root, change))
        if run is None:
            raise EngineError(f"change {change!r} is not running")
        return run

    async def stop(self, root: Path, change: str) -> RunStatus:
        run = self._find(root, change)
        run.log("■ stop requested: stopping the agent and everything it started")
        run.stop_event.set()
        if run.task is not None:
            await asyncio.shield(run.task)
        return run.status.copy()

    def guide(self, root: Path, change: str, text: str) -> None:
        run = self._find(root, change)
        _check_guidance(text)
        run.guidance.append(_Guidance(text, now_iso()))
        run.save()
        run.log("✎ guidance queued for the next iteration")

    def statuses(self, root: Path | None = None, change: str | None = None) -> list[RunStatus]:
        out: list[RunStatus] = []
        keys = set(self._active) | set(self._finished)
        for key in sorted(keys, key=lambda k: (str(k[0]), k[1])):
            if root is not None and key[0] != root:
                continue
            if change is not None and key[1] != change:
                continue
            run = self._active.get(key)
            out.append(run.status.copy() if run else self._finished[key])
        return out

    def active_count(self) -> int:
        return len(self._active)

    async def wait(self, root: Path, change: str) -> RunStatus:
        run = self._active.get((root, change))
        if run is not None and run.task is not None:
            await asyncio.shield(run.task)
        status = self._finished.get((root, change))
        if status is None:
            raise EngineError(f"change {change!r} has not run")
        return status

    async def shutdown(self, reason: str | None = None) -> None:
        """Stop every run and wait for their ends; ``reason`` replaces "stopped by the user"."""
        runs = list(self._active.values())
        for run in runs:
            if reason:
                run.stop_reason = reason
            run.stop_event.set()
        await asyncio.gather(*(r.task for r in runs if r.task is not None), return_exceptions=True)

    def shutdown_now(self) -> None:
        """Synchronous last resort: kill every agent tree at once."""
        for run in list(self._active.values()):
            run.stop_event.set()
            for proc in run.live_processes():
                with contextlib.suppress(Exception):
                    proc.kill_now()


def _check_guidance(text: str, *, allow_empty: bool = False) -> None:
    if not isinstance(text, str):
        raise EngineError("guidance must be text")
    if not text.strip() and not allow_empty:
        raise EngineError("guidance text is empty")
    if len(text) > MAX_GUIDANCE_CHARS:
        raise EngineError(
            f"guidance is {len(text)} characters long; keep it under {MAX_GUIDANCE_CHARS}"
        )


def _check_story(change: Change, story: str) -> None:
    """``story`` names a story of the change with an open task that is not blocked."""
    try:
        text = read_tasks_text(change.tasks_path) or ""
    except OSError as exc:
        raise EngineError(f"cannot read {change.tasks_path}: {exc}") from None
    doc = parse_tasks(text)
    found = doc.story(story)
    if found is None:
        known = ", ".join(s.id for s in doc.stories) or "none"
        raise EngineError(f"change {change.name!r} has no story {story!r} (stories: {known})")
    if not any(doc.workable(t) for t in found.tasks):
        blocked = any(doc.blocked_reason(t) for t in found.tasks)
        what = "every open task is blocked" if blocked else "every task is checked"
        raise EngineError(f"story {story} ({found.title}): {what}; nothing to run")
