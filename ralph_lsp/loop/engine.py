"""The engine (SPEC §3): every run of a process, one per change at a time.

One :class:`Engine` owns the runs of a process (the CLI's one, or the server's many): it checks a
request (unknown change, story, guidance), claims the change for this process, applies history
retention, and starts the run's loop (``run.Run``) as a task; it stops, guides, waits for and
shuts down runs. Whoever drives it gets the runs' events (``status``: :class:`StatusEvent` on
every change of a run's status, :class:`LogEvent` for the agent's formatted output and the
orchestrator's own messages). It never writes tasks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from ralph_lsp.loop import preconditions
from ralph_lsp.loop.on_end import EndCommands
from ralph_lsp.loop.plan_run import PlanRun
from ralph_lsp.loop.reporting import Guidance
from ralph_lsp.loop.run import Run
from ralph_lsp.openspec.tasks import read_tasks_text
from ralph_lsp.openspec.tasks_fast import parse_tasks
from ralph_lsp.openspec.workspace import Change, resolve_change
from ralph_lsp.runs.claims import ChangeBusy, ChangeClaim
from ralph_lsp.runs.history import new_run_id, prune_runs
from ralph_lsp.runs.request import AS_SETTINGS, RunRequest
from ralph_lsp.runs.status import (
    EngineError,
    EngineEvent,
    LogEvent,
    RunStatus,
    StatusEvent,
    already_running,
    deliver,
    now_iso,
)
from ralph_lsp.setting_values import positive_int
from ralph_lsp.settings import SCOPES, Settings

# One guidance text at most (the prompt bounds all guidance together, see prompt.py).
MAX_GUIDANCE_CHARS = 16_000

# The loop's face: what drives runs needs only this module.
__all__ = ["Engine", "EngineError", "EngineEvent", "LogEvent", "RunStatus", "StatusEvent"]

log = logging.getLogger(__name__)


class Engine:
    """Every run of this process; one run per change at a time."""

    def __init__(self, on_event: Callable[[EngineEvent], None] | None = None) -> None:
        self._on_event = on_event
        # Awaited after each batch of agent output: a slow reader of the events holds the
        # agent back (its pipe fills) instead of events piling up (SPEC §4, §9).
        self.pace: Callable[[], Awaitable[None]] | None = None
        self._active: dict[tuple[Path, str], Run] = {}
        self._finished: dict[tuple[Path, str], RunStatus] = {}
        # ralph.onRunEnd of each run it executes, started as the run ends (loop/on_end.py)
        self.end_commands = EndCommands(self._emit)
        self.ends_told = self.end_commands.settled  # RunService's: once they have ended

    def _emit(self, event: EngineEvent) -> None:
        deliver(self._on_event, event, log, "engine event handler failed")

    async def start(
        self,
        root: Path,
        change: str,
        settings: Settings,
        request: RunRequest = AS_SETTINGS,
    ) -> RunStatus:
        resolved = resolve_change(root, change)  # UnknownChangeError for unknown names
        key = (resolved.root, resolved.name)
        active = self._active.get(key)
        if active is not None:
            raise already_running(change, active.id, active.status.iteration)
        max_iterations = _check_request(resolved, request)
        if request.follow_up and not any(t.strip() for t in request.guidance):
            raise EngineError("a follow-up run needs guidance: the review comments to address")
        # git, budget, and fail closed (SPEC §10): no sandbox here, no run, no agent spawned
        refusal = await preconditions.refusal(resolved.root, settings)
        if refusal is not None:
            raise EngineError(refusal)
        run_id = new_run_id()
        try:  # one run per change on the machine: another process may hold it
            claim = ChangeClaim.take(resolved.root, resolved.name, run_id)
        except ChangeBusy as exc:
            raise EngineError(str(exc)) from None
        # Retention: the newest historyKeepRuns runs of the change, this one included.
        pruned = prune_runs(resolved.root, resolved.name, settings.history_keep_runs - 1)
        args = (
            self._emit,
            self._paced,
            resolved,
            settings,
            max_iterations or settings.max_iterations,
            request.scope or settings.iteration_scope,
            request.guidance,
            run_id,
            request.story,
        )
        # a planning run drafts the change (SPEC §14); any other run implements it
        run = Run(*args) if request.plan is None else PlanRun(*args, description=request.plan)
        run.claim = claim
        # A follow-up: the agent runs on the guidance even when every task is checked.
        run.follow_up = request.follow_up
        run.pruned = pruned  # their checkpoints go too, once the run's git side is ready
        run.status.queue = request.queue  # a run of a queue says which, and where in it
        self._active[key] = run
        run.update(transition=True)
        if claim.warning:
            run.log(claim.warning, "warning")
        run.task = asyncio.ensure_future(self._main(run))
        return run.status.copy()

    async def _main(self, run: Run) -> None:
        key = (run.change.root, run.change.name)
        try:
            await run.main()
        finally:
            if run.claim is not None:
                run.claim.release()
            self._active.pop(key, None)
            self._finished[key] = run.status.copy()
            if run.status.final:  # its final status is out: then its onRunEnd
                self.end_commands.run_ended(run.settings.on_run_end, run.status.copy())

    async def _paced(self) -> None:
        """Returns once the host's watchers keep up (``pace``, read when a run asks)."""
        if self.pace is not None:
            await self.pace()

    def _find(self, root: Path, change: str) -> Run:
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
        run.guidance.append(Guidance(text, now_iso()))
        run.save(now=True)
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


def _check_request(change: Change, request: RunRequest) -> int | None:
    """``ralph.run``'s own arguments checked; the maxIterations to use (None: the setting's)."""
    max_iterations, scope, story = request.max_iterations, request.scope, request.story
    if max_iterations is not None:
        try:
            max_iterations = positive_int(max_iterations)
        except ValueError:
            raise EngineError("maxIterations must be a whole number of at least 1") from None
    if scope is not None and scope not in SCOPES:
        raise EngineError(f"iterationScope must be one of {', '.join(SCOPES)}")
    for text in request.guidance:
        _check_guidance(text, allow_empty=True)
    if request.plan is not None:  # a planning run's description (SPEC §14)
        if not isinstance(request.plan, str) or not request.plan.strip():
            raise EngineError("a planning run needs a description of the change")
        _check_guidance(request.plan)
    if story is not None:
        _check_story(change, story)
    return max_iterations


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
