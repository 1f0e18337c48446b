"""The engine's events beyond status and log lines (SPEC §9): what a watcher of a run needs to
follow it as its history records it, without reading ``.ralph/``.

Each names the run (root, change, run id). They are emitted by the engine next to the
:class:`~ralph_lsp.loop.engine.StatusEvent` and :class:`~ralph_lsp.loop.engine.LogEvent` it
always emitted; a renderer that does not care about one ignores it. ``ralph_lsp.runner.events``
turns every engine event into one versioned JSON object of the event stream and back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class IterationEvent:
    """An iteration started (``phase`` "start": ``n``, ``story``, ``startedAt``) or ended
    (``phase`` "end": ``record`` holds the history's iteration fields, SPEC §3)."""

    root: Path
    change: str
    run_id: str
    phase: Literal["start", "end"]
    n: int
    story: str | None = None
    started_at: str | None = None
    record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VerificationEvent:
    """Verification ran: one result per command (``command``, ``exitCode``, ``durationMs``,
    ``outputTail``), and whether all passed."""

    root: Path
    change: str
    run_id: str
    results: tuple[dict[str, Any], ...]
    passed: bool


@dataclass(frozen=True)
class CheckpointEvent:
    """The checkpoint recorded after iteration ``n`` (SPEC §8)."""

    root: Path
    change: str
    run_id: str
    n: int
    checkpoint: str | None
    files_changed: tuple[str, ...] | None


@dataclass(frozen=True)
class GuidanceEvent:
    """Guidance delivered in iteration ``delivered_in``'s prompt."""

    root: Path
    change: str
    run_id: str
    text: str
    delivered_in: int


@dataclass(frozen=True)
class TasksEvent:
    """The run's ``tasks.md`` as it now reads where the run works, for a watcher that cannot
    read that file (a remote run's: SPEC §9). Sent by a remote job before the status that
    follows a change of the file; a local run's watchers read the file itself."""

    root: Path
    change: str
    run_id: str
    text: str


@dataclass(frozen=True)
class ReviewEvent:
    """A review round ended (SPEC §13): ``record`` holds the round as the history keeps it
    (``round``, ``reviewer``, ``model``, ``verdict``, ``tasksAdded``, ``refusals``,
    ``costUsd``, …)."""

    root: Path
    change: str
    run_id: str
    record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EndEvent:
    """The run ended: its final state and reason. The last event of a run."""

    root: Path
    change: str
    run_id: str
    state: str
    reason: str | None
