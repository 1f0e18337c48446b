"""A run's status and the events the engine emits (SPEC §3, §5): what every renderer (the
terminal, the server, a runner's event stream) reads of a run.

:class:`RunStatus` is the ``ralph/runStatus`` object; :class:`StatusEvent` carries one on every
change of a run's status, :class:`LogEvent` a formatted line of the agent's output or of the
orchestrator's own messages. :func:`deliver` hands an event to its renderer, :func:`already_running`
words the refusal of a second run of a change, and :func:`keep_task` holds a follower's task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

from ralph_lsp.runs.events import (
    CheckpointEvent,
    EndEvent,
    GuidanceEvent,
    IterationEvent,
    ReviewEvent,
    TasksEvent,
    VerificationEvent,
)
from ralph_lsp.runs.states import RunState

FINAL_STATES = tuple(state.value for state in RunState if state.final)


Level = Literal["info", "warning", "error"]


Phase = Literal["agent", "verifying", "waiting"]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso(epoch: float) -> str:
    stamp = datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")
    return stamp.replace("+00:00", "Z")


def clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


class EngineError(Exception):
    """A request the engine refuses; the message says what was wrong and what to do."""


def already_running(
    change: str, run_id: str, iteration: int, pid: int | None = None
) -> EngineError:
    """The refusal of a second run of ``change`` (``pid``: the other process that runs it)."""
    where = "(" if pid is None else f"in another ralph-lsp process (pid {pid}, "
    return EngineError(
        f"change {change!r} is already running {where}run {run_id}, iteration {iteration});"
        " stop it first"
    )


_Event = TypeVar("_Event")
_Result = TypeVar("_Result")


def deliver(
    on_event: Callable[[_Event], None] | None, event: _Event, logger: logging.Logger, failure: str
) -> None:
    """``event`` to whoever renders it: a renderer's bug is logged (``failure``) and never ends
    the run, the attachment or the queue that emitted it."""
    if on_event is None:
        return
    try:
        on_event(event)
    except Exception:
        logger.exception(failure)


def keep_task(
    tasks: set[asyncio.Task[Any]], coro: Coroutine[Any, Any, _Result]
) -> asyncio.Task[_Result]:
    """``coro`` as a task held in ``tasks`` until it ends (asyncio itself keeps only a weak
    reference to a task, which could be collected mid-way)."""
    task = asyncio.ensure_future(coro)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


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
    cost_estimated: bool = False  # cost_usd is (partly) estimated from tokens (loop/budget.py)
    # What the run is doing now, so that no client reads the English reason to know it.
    phase: Phase | None = None
    waiting: dict[str, Any] | None = None  # {"kind": "rateLimit" | "network", "until"?}
    # With worktree isolation: {"branch", "root", "tasksUri"} of the run's worktree (SPEC §8).
    worktree: dict[str, Any] | None = None
    # The permission rules the agent was refused in this run, first seen first (SPEC §4 v2).
    refusals: tuple[str, ...] = ()
    # A run of a queue (SPEC §9): {"id", "position", "total"}; None for a run of its own.
    queue: dict[str, Any] | None = None
    # The run's sandbox (SPEC §10): {"kind", "writable", "hidden", "allowedDomains"}; None when
    # it is off (or not yet opened).
    sandbox: dict[str, Any] | None = None
    # "plan" for a planning run (SPEC §14): its change is drafted, then waits for approval.
    kind: str = "run"
    # A planning run's open questions (design.md's ## Open Questions), once it is planned.
    questions: tuple[str, ...] = ()
    # SPEC §15: the model of the iteration under way (or the last), and the run's costs so far
    # (runs/receipts.py costs_json: totalUsd, perVerifiedTaskUsd, noProgressUsd, …).
    model: str | None = None
    costs: dict[str, Any] | None = None

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
            "costEstimated": self.cost_estimated,
            "story": self.story,
            "phase": self.phase,
            "waiting": dict(self.waiting) if self.waiting else None,
            "worktree": dict(self.worktree) if self.worktree else None,
            "refusals": list(self.refusals),
            "queue": dict(self.queue) if self.queue else None,
            "sandbox": dict(self.sandbox) if self.sandbox else None,
            "kind": self.kind,
            "questions": list(self.questions),
            "model": self.model,
            "costs": dict(self.costs) if self.costs else None,
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
    | TasksEvent
    | ReviewEvent
    | EndEvent
)


class RunEnd(Exception):
    """Ends a run from deep inside its loop, with its final state and reason."""

    def __init__(self, state: RunState, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


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
        cost_estimated=data.get("costEstimated") is True,
        phase=phase if phase in ("agent", "verifying", "waiting") else None,
        waiting=data.get("waiting") or None,
        worktree=data.get("worktree") or None,
        refusals=tuple(data.get("refusals") or ()),
        queue=data.get("queue") if isinstance(data.get("queue"), dict) else None,
        sandbox=data.get("sandbox") if isinstance(data.get("sandbox"), dict) else None,
        kind="plan" if data.get("kind") == "plan" else "run",
        questions=tuple(str(q) for q in data.get("questions") or ()),
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        costs=data.get("costs") if isinstance(data.get("costs"), dict) else None,
    )
