"""The verification step of a run (SPEC §3 "Verified success"): which commands, when they are
due, and running them as the run's own phase (``verifying``).

A run owns one :class:`Verification`; what it needs of its run is :class:`VerificationHost`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Protocol

from ralph_lsp.agents.base import Refusal
from ralph_lsp.loop import policy, sandboxing, verify
from ralph_lsp.loop.conformance_step import ConformanceGate
from ralph_lsp.loop.iteration import bounded
from ralph_lsp.openspec.tasks import TasksDoc
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.proc.process import AgentProcess
from ralph_lsp.runs.events import VerificationEvent
from ralph_lsp.runs.history import RunHistory
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import Level, RunEnd
from ralph_lsp.settings import Settings


class VerificationHost(Protocol):
    """What the step needs of its run."""

    settings: Settings
    stop_event: asyncio.Event
    work: Change
    sandbox: sandboxing.RunSandbox | None  # the checks run inside it: no network but a loopback
    history: RunHistory  # the conformance gate keeps the last verification's cases there

    @property
    def key(self) -> tuple[Path, str, str]: ...

    def emit(self, event: VerificationEvent) -> None: ...
    def log(self, text: str, level: Level = "info") -> None: ...
    def update(self, *, transition: bool = False, **changes: Any) -> None: ...


class Verification:
    def __init__(self, host: VerificationHost) -> None:
        self.host = host
        self.commands: list[verify.Command] = []
        self.runner: verify.Runner | None = None  # while verification runs
        self.last_results: list[verify.Result] = []
        self.last_failure: verify.Result | None = None
        self.refusals: list[Refusal] = []  # what the sandbox refused the checks
        self.gate = ConformanceGate(host)  # the scenarios' tests, read after each verification

    @property
    def process(self) -> AgentProcess | None:
        """A verification command's process, while one runs."""
        return self.runner.process if self.runner is not None else None

    def choose(self) -> None:
        """The commands in use and where they came from, said in the run's first lines."""
        try:
            self.commands = verify.commands(self.host.settings.verify_commands, self.host.work.root)
        except ValueError as exc:
            raise RunEnd(RunState.FAILED, str(exc)) from None
        if self.host.settings.verify_when == "off":
            self.host.log("verification is off (verifyWhen): success is every task checked")
        elif not self.commands:
            self.host.log(
                "no verification command is set (verifyCommands) or defined by the project:"
                " success will be every task checked, and nothing is verified",
                "warning",
            )
        else:
            used = "; ".join(f"{c.line} ({c.source})" for c in self.commands)
            self.host.log(f"verification ({self.host.settings.verify_when}): {used}")
        self.gate.start(self.enabled())

    def _lines(self, lines: list[str], err: bool) -> None:
        if self.host.sandbox is not None:
            self.refusals += sandboxing.refusals_in(lines)
        self.host.log("\n".join(lines), "warning" if err else "info")

    def take_refusals(self) -> list[Refusal]:
        """What the sandbox refused the checks since the last call."""
        taken, self.refusals = self.refusals, []
        return taken

    def enabled(self) -> bool:
        return bool(self.commands) and self.host.settings.verify_when != "off"

    def due_after(self, r: policy.IterationResult, counters: policy.Counters) -> bool:
        """Verification after an iteration: when every task is checked, after one that checked
        a task (verifyWhen each), and after every iteration while it fails or the conformance
        gate is not met."""
        if not self.enabled() or r.stopped or r.start_error or r.total == 0:
            return False
        if policy.rate_limit(r) is not None:
            return False
        each = self.host.settings.verify_when == "each" and r.checked > 0
        unmet = counters.failing is not None or counters.unmet is not None
        return r.completed >= r.total or each or unmet

    def before_start(
        self, doc: TasksDoc, verified: str | None, failed: str | None
    ) -> policy.End | None:
        """``policy.before_start`` after the run's first verification (and its conformance)."""
        summary, unmet = self.gate.said()
        return policy.before_start(doc.completed, doc.total, verified, failed, summary, unmet)

    def counters(self, backoff: float, failed: str | None) -> policy.Counters:
        """The run's first counters, as its first verification (if any) left them."""
        return policy.Counters(backoff=backoff, failing=failed, **self.gate.counters())

    def facts(
        self, verified: str | None, failed: str | None, counters: policy.Counters
    ) -> dict[str, Any]:
        """The fields of an IterationResult this verification gives: what passed or failed,
        whether it made a failing check pass, and the conformance gate after it."""
        fixed = counters.failing is not None and failed is None
        return {
            "verified": verified,
            "verify_failed": failed,
            "verify_fixed": fixed,
            **self.gate.facts(),
        }

    async def run(self) -> tuple[str | None, str | None]:
        """Run the commands; (what passed, None) or (None, what failed)."""
        listed = verify.summary(self.commands)
        self.host.update(phase="verifying", reason=f"verifying: {listed}", transition=True)
        env = dict(os.environ)
        env.update(self.host.settings.env)
        runner = verify.Runner(
            self.host.work.root,
            env,
            bounded(self.host.settings.verify_timeout_seconds) or 0.0,
            self.host.stop_event,
            self._lines,
            grace=bounded(self.host.settings.stop_grace_seconds) or 0.0,
            wrap=self.host.sandbox.check if self.host.sandbox is not None else None,
        )
        self.runner = runner
        box = self.host.sandbox
        self.gate.begin()
        runner.env_for = self.gate.env_for
        if box is not None:
            box.watch_git()
        try:
            self.last_results = await runner.run(self.commands)
        finally:
            self.runner = None
            if box is not None:  # before the checkpoint runs git
                self.refusals += box.undo_git("a verification command")
            self.gate.end()
        self.host.update(phase=None)
        self.last_failure = next((r for r in self.last_results if not r.passed), None)
        results = tuple(dict(r.to_json()) for r in self.last_results)
        self.host.emit(VerificationEvent(*self.host.key, results, self.last_failure is None))
        if self.last_failure is not None:
            return None, self.last_failure.describe()
        if len(self.last_results) < len(self.commands):  # stopped before every command ran
            return None, "verification was stopped"
        return listed, None
