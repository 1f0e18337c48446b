"""What the parts of a run's loop (``agent_spawn``, ``review_round``) may use of the run: the
:class:`RunView` protocol, which ``run.Run`` satisfies, and the run's :class:`ReviewState`.

The parts are below the run, not beside it: ``run.py`` imports them, they import this; and a
run reports through the callables it was given (``reporting.RunReporting.send``), never
through the engine that started it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ralph_lsp.loop import budget, policy, sandboxing
from ralph_lsp.loop.run_git import RunGit
from ralph_lsp.loop.verification import Verification
from ralph_lsp.openspec.tasks import TasksDoc
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.proc.process import AgentProcess
from ralph_lsp.runs.costs import CostTally
from ralph_lsp.runs.history import RunHistory
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import EngineEvent, Level, RunStatus
from ralph_lsp.settings import Settings


@dataclass
class ReviewState:
    """A run's review: its rounds (the record's ``reviews``) and the success waiting for one."""

    rounds: list[dict[str, Any]] = field(default_factory=list)
    pending: policy.End | None = None

    def wanted(self, settings: Settings, end: policy.End, total: int) -> bool:
        """Whether ``end`` waits for a review round: a success of a change with tasks, when
        ``ralph.review.agent`` names a reviewer."""
        return end.state is RunState.SUCCEEDED and total > 0 and settings.review_agent is not None


class RunView(Protocol):
    """A run as the spawn of its agent and its review round see it."""

    id: str
    change: Change
    work: Change  # where the agent works (the change, or its copy in the run's worktree)
    settings: Settings
    status: RunStatus
    stop_event: asyncio.Event
    history: RunHistory
    git: RunGit | None
    sandbox: sandboxing.RunSandbox | None
    process: AgentProcess | None
    verification: Verification
    review: ReviewState
    budget: budget.Budget
    choice: policy.ModelChoice

    @property
    def key(self) -> tuple[Path, str, str]: ...

    @property
    def tally(self) -> CostTally: ...

    def emit(self, event: EngineEvent) -> None: ...
    def log(self, text: str, level: Level = "info") -> None: ...
    def update(self, *, transition: bool = False, **changes: Any) -> None: ...
    def save(self, now: bool = False) -> None: ...
    def read_doc(self) -> TasksDoc: ...
    def poll_tasks(self) -> tuple[int, int]: ...
    def reason(self) -> str | None: ...
    async def paced(self) -> None: ...
