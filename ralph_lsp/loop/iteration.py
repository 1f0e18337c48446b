"""One spawn of the agent: start it, read and batch its output, follow tasks.md, and end it.

:class:`AgentIteration` is the mechanics the run loop (``engine.py``) uses once per spawn. It
knows nothing of limits or outcomes: it returns an :class:`IterationOutcome` of facts, which the
run policy (``policy.py``) judges. What it needs from its run comes through :class:`RunHooks`.

While the agent runs, tasks.md is followed on a timer, whether the agent prints or not, so the
status never goes stale behind a silent agent; an agent that has checked every task but does
not exit gets ``finishGraceSeconds`` and is then stopped as by a stop (the iteration counts).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ralph_lsp.agents import Invocation
from ralph_lsp.agents.base import (
    Activity,
    AgentEvent,
    AgentProblem,
    LogLine,
    LogLines,
    Refusal,
    ResultInfo,
    feed_lines,
)
from ralph_lsp.loop import sandboxing
from ralph_lsp.proc.process import AgentProcess, AgentStartError, SpawnSpec
from ralph_lsp.settings import Settings

Level = Literal["info", "warning", "error"]
# An exit code as waited for -> the exit code and start error the run records (sandboxed)
Ended = Callable[[int | None], tuple[int | None, AgentStartError | None]]

# Agent output reaches renderers in batches: one log event once this many lines or characters
# are collected, or after this delay. The lines of one read of the agent's output are never
# split, so an event holds at most what one read completed (64 KiB) beyond these.
LOG_BATCH_LINES = 256
LOG_BATCH_SECONDS = 0.02
LOG_BATCH_CHARS = 8_000
# One stream-json event can hold a whole file an agent read or edited: read lines this long
# whole so they still parse (what is shown of them is capped by the parsers).
AGENT_LINE_CAP = 16 * 1024 * 1024
# How often tasks.md is looked at while the agent runs (a stat; a parse only when it changed).
TASKS_POLL_SECONDS = 0.25
# Longest time any one wait is given (a huge setting is capped here, never an overflow).
MAX_SECONDS = 365 * 24 * 3600.0


def bounded(seconds: float | None) -> float | None:
    return None if seconds is None else min(max(seconds, 0.0), MAX_SECONDS)


class RunHooks(Protocol):
    """What an iteration needs from its run."""

    settings: Settings
    stop_event: asyncio.Event

    def log(self, text: str, level: Level = "info") -> None: ...
    def update(self, *, transition: bool = False, **changes: Any) -> None: ...
    def poll_tasks(self) -> tuple[int, int]: ...  # (completed, total) as tasks.md says now
    def reason(self) -> str | None: ...
    async def paced(self) -> None: ...  # returns once the run's watchers keep up


class ProcessHolder(Protocol):
    """A run whose agent process an iteration is, and the sandbox it runs in (if any)."""

    sandbox: sandboxing.RunSandbox | None
    process: AgentProcess | None


@dataclass
class IterationOutcome:
    exit_code: int | None = None
    start_error: AgentStartError | None = None
    problems: list[AgentProblem] = field(default_factory=list)
    activity: bool = False
    printed: bool = False  # any output at all: an agent that printed is not a failed start
    result: ResultInfo | None = None
    timed_out: bool = False
    stopped: bool = False
    finished_lingering: bool = False  # every task checked, stopped after finishGraceSeconds
    last_error: str = ""
    refusals: list[Refusal] = field(default_factory=list)  # tool calls the agent was refused


class LogBatch:
    """Agent lines passed on in small batches (one log event holding several lines), so a flood
    costs one event per batch, not one per line; a timer keeps a lone line live."""

    def __init__(self, emit: Any) -> None:
        self._emit = emit
        self._lines: list[str] = []
        self._chars = 0
        self._level: Level = "info"
        self._timer: asyncio.TimerHandle | None = None

    def add(self, texts: tuple[str, ...] | list[str], level: Level) -> None:
        if self._lines and level != self._level:
            self.flush()
        self._level = level
        self._lines.extend(texts)
        self._chars += sum(map(len, texts)) + len(texts)
        if len(self._lines) >= LOG_BATCH_LINES or self._chars >= LOG_BATCH_CHARS:
            self.flush()
        elif self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(LOG_BATCH_SECONDS, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._lines:
            self._emit("\n".join(self._lines), self._level)
            self._lines = []
            self._chars = 0


class AgentIteration:
    """One spawn: ``await AgentIteration(run, invocation, spec, raw_sink).run()``."""

    def __init__(self, run: RunHooks, inv: Invocation, spec: SpawnSpec, raw_sink: Any) -> None:
        self.run_hooks = run
        self.settings = run.settings
        self.inv = inv
        self.spec = spec
        self.raw_sink = raw_sink
        self.out = IterationOutcome()
        self.batch = LogBatch(run.log)
        self.abort = asyncio.Event()  # the agent cannot authenticate: end it now
        self.finished = asyncio.Event()  # every task checked and the grace is over
        self.offline = False
        self.working_reason: str | None = None
        self.process: AgentProcess | None = None
        self.sandboxed = False  # read the output for what the run's sandbox refused
        # sandboxed: the exit code and start error as the run records them (loop/sandboxing.py)
        self.ended: Ended | None = None

    async def start(self) -> bool:
        """Start the agent; False (with ``start_error`` set) when it could not be executed."""
        try:
            self.process = await AgentProcess.start(
                self.spec, raw_sink=self.raw_sink, line_cap=AGENT_LINE_CAP
            )
        except AgentStartError as exc:
            self.out.start_error = exc
            self.run_hooks.log(f"✗ {exc}", "error")
            return False
        self.working_reason = self.run_hooks.reason()
        return True

    async def run_as(
        self, holder: ProcessHolder, who: str, close_log: Callable[[], None]
    ) -> IterationOutcome:
        """Start and run the agent as ``holder``'s process, in its sandbox when it has one (the
        sandbox's refusals and git pointers put back, ``who`` naming the agent); then
        ``close_log``."""
        box = holder.sandbox
        self.sandboxed = box is not None
        self.ended = None if box is None else box.agent_ended
        if box is not None:
            box.watch_git()
        try:
            if not await self.start():
                return self.out
            holder.process = self.process
            return await self.run()
        finally:
            holder.process = None
            close_log()
            if box is not None:  # git's pointers put back; connections refused
                self.out.refusals += box.undo_git(who)
                self.out.refusals += box.take_refusals()

    # -- events ------------------------------------------------------------------------------
    def handle(self, events: list[AgentEvent]) -> None:
        out = self.out
        for ev in events:
            if isinstance(ev, LogLines):
                if ev.texts:
                    self._lines(ev.texts, ev.kind == "stderr")
            elif isinstance(ev, LogLine):
                self._lines((ev.text,), ev.kind == "stderr")
            elif isinstance(ev, Activity):
                out.activity = True
                if self.offline:
                    self.offline = False
                    self.run_hooks.update(
                        reason=self.working_reason, phase="agent", waiting=None, transition=True
                    )
            elif isinstance(ev, ResultInfo):
                out.result = ev
                if ev.is_error and ev.text:
                    out.last_error = ev.text.strip()[:500]
            elif isinstance(ev, AgentProblem):
                self._problem(ev)
            elif isinstance(ev, Refusal):
                out.refusals.append(ev)
                self.batch.add(
                    (f"⚠ refused: {ev.rule} — allow it with ralph.allowedTools",), "warning"
                )

    def _lines(self, texts: tuple[str, ...], stderr: bool) -> None:
        self.out.printed = True
        if self.sandboxed:
            self.out.refusals += sandboxing.refusals_in(texts)
        if stderr:
            last = next((t.strip() for t in reversed(texts) if t.strip()), "")
            self.out.last_error = last or self.out.last_error
        self.batch.add(texts, "warning" if stderr else "info")

    def _problem(self, ev: AgentProblem) -> None:
        self.out.problems.append(ev)
        self.out.last_error = ev.message
        if ev.kind == "auth":
            self.abort.set()  # an agent that cannot authenticate may retry for minutes
        elif ev.kind == "offline":
            self._waiting_for_network(ev.message)

    def _waiting_for_network(self, message: str) -> None:
        # The agent waits for its service on its own, as long as it takes: say so where the
        # user looks (status, log) instead of showing a run that merely "runs".
        self.offline = True
        self.run_hooks.update(
            reason=f"waiting for the network: {message}",
            phase="waiting",
            waiting={"kind": "network"},
            transition=True,
        )
        timeout = self.settings.iteration_timeout_seconds
        bound = (
            f"the iteration still ends at its timeout ({timeout:g}s, iterationTimeoutSeconds)"
            if timeout
            else "set iterationTimeoutSeconds to bound how long an iteration may wait"
        )
        self.run_hooks.log(
            f"⏸ the agent is waiting for the network — {message}; it goes on by itself"
            f" once the network is back; {bound}",
            "warning",
        )

    # -- the running agent -------------------------------------------------------------------
    async def _pump(self, proc: AgentProcess) -> None:
        async for stream, lines in proc.batches():
            self.handle(feed_lines(self.inv.parser, stream, lines))
            await self.run_hooks.paced()  # a slow watcher holds the agent back

    async def _follow_tasks(self) -> None:
        """tasks.md while the agent runs: live progress, and the finish grace."""
        grace = bounded(self.settings.finish_grace_seconds) or 0.0
        all_done_since: float | None = None
        while True:
            await asyncio.sleep(TASKS_POLL_SECONDS)
            completed, total = self.run_hooks.poll_tasks()
            if not (total and completed >= total):
                all_done_since = None
                continue
            now = time.monotonic()
            if all_done_since is None:
                all_done_since = now
            if now - all_done_since >= grace:
                self.finished.set()
                return

    async def run(self) -> IterationOutcome:
        """Wait for the agent's end (exit, stop, auth failure, timeout or finish grace)."""
        proc = self.process
        assert proc is not None
        s = self.settings
        pump = asyncio.ensure_future(self._pump(proc))
        watchers = {
            "exit": asyncio.ensure_future(proc.wait()),
            "stop": asyncio.ensure_future(self.run_hooks.stop_event.wait()),
            "abort": asyncio.ensure_future(self.abort.wait()),
            "finished": asyncio.ensure_future(self.finished.wait()),
        }
        follow = asyncio.ensure_future(self._follow_tasks())
        try:
            done, _ = await asyncio.wait(
                set(watchers.values()),
                timeout=bounded(s.iteration_timeout_seconds),
                return_when=asyncio.FIRST_COMPLETED,
            )
            self.batch.flush()
            first = next((k for k, t in watchers.items() if t in done), "timeout")
            await self._end(proc, first)
            self.out.exit_code = await proc.wait()
            if self.ended is not None:
                self.out.exit_code, self.out.start_error = self.ended(self.out.exit_code)
                if self.out.start_error is not None:
                    self.run_hooks.log(f"✗ {self.out.start_error}", "error")
            try:
                await asyncio.wait_for(asyncio.shield(pump), timeout=5)
            except asyncio.TimeoutError:
                pump.cancel()
            self.handle(self.inv.parser.finish(self.out.exit_code))
        finally:
            self.batch.flush()
            follow.cancel()
            for name, task in watchers.items():
                if name != "exit":
                    task.cancel()
            if not watchers["exit"].done():
                await proc.terminate(0.5)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(pump, timeout=1)
        return self.out

    async def _end(self, proc: AgentProcess, why: str) -> None:
        s = self.settings
        log = self.run_hooks.log
        grace = bounded(s.stop_grace_seconds) or 0.0
        if why == "exit":
            return
        if why == "abort":
            log("✗ the agent cannot authenticate: stopping it", "error")
            await proc.terminate(min(grace, 2.0))
        elif why == "stop":
            self.out.stopped = True
            await proc.terminate(grace)
        elif why == "finished":
            self.out.finished_lingering = True
            log(
                f"✓ every task is checked, but the agent was still running"
                f" {s.finish_grace_seconds:g}s later (finishGraceSeconds): stopping it",
                "warning",
            )
            await proc.terminate(grace)
        else:
            self.out.timed_out = True
            log(
                f"⏱ iteration timed out after {s.iteration_timeout_seconds:g}s: stopping the agent",
                "warning",
            )
            await proc.terminate(grace)
