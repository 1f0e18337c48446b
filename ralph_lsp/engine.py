"""The Ralph loop (SPEC §3): iterations, outcomes, stop, guidance, history.

One :class:`Engine` owns every run of a process (the CLI's one, or the server's many). A run
spawns the agent once per iteration, each time fresh, re-reads tasks.md after it, and decides
whether to go on. Progress is judged from tasks.md alone, never from what the agent says.

The engine emits two kinds of events to whoever drives it: :class:`StatusEvent` on every change
of a run's status, and :class:`LogEvent` for the agent's formatted output and the orchestrator's
own messages. It never writes tasks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from ralph_lsp.agents import build_invocation
from ralph_lsp.agents.base import (
    Activity,
    AgentEvent,
    AgentProblem,
    LogLine,
    LogLines,
    ResultInfo,
    feed_lines,
)
from ralph_lsp.history import RunHistory
from ralph_lsp.process import AgentProcess, AgentStartError, SpawnSpec
from ralph_lsp.prompt import build_prompt, infer_verify_commands, scope_story
from ralph_lsp.settings import Settings
from ralph_lsp.tasks import TasksDoc, parse_tasks, read_tasks_text
from ralph_lsp.workspace import Change, resolve_change

log = logging.getLogger(__name__)

FINAL_STATES = ("succeeded", "stuck", "exhausted", "failed", "stopped")
Level = Literal["info", "warning", "error"]

# First wait after a rate limit that names no reset time; doubled each time, capped.
DEFAULT_BACKOFF_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 15 * 60.0
# The prompt may travel as one argv element, which Linux caps at 128 KiB.
MAX_GUIDANCE_CHARS = 16_000
# Agent output reaches renderers in batches: one LogEvent once this many lines or characters
# are collected, or after this delay. The lines of one read of the agent's output are never
# split, so an event holds at most what one read completed (64 KiB) beyond these.
LOG_BATCH_LINES = 256
LOG_BATCH_SECONDS = 0.02
LOG_BATCH_CHARS = 8_000
# One stream-json event can hold a whole file an agent read or edited: read lines this long
# whole so they still parse (what is shown of them is capped by the parsers).
AGENT_LINE_CAP = 16 * 1024 * 1024


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _iterations(n: int) -> str:
    return f"{n} iteration" if n == 1 else f"{n} iterations"


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


class EngineError(Exception):
    """A request the engine refuses; the message says what was wrong and what to do."""


@dataclass
class RunStatus:
    run_id: str
    change: str
    root: Path
    state: str
    iteration: int
    max_iterations: int
    completed: int
    total: int
    reason: str | None
    started_at: str
    updated_at: str
    cost_usd: float | None
    story: str | None = None

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
        }

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


EngineEvent = StatusEvent | LogEvent


@dataclass
class _Guidance:
    text: str
    at: str
    delivered_in: int | None = None


@dataclass
class _IterationOutcome:
    exit_code: int | None = None
    start_error: AgentStartError | None = None
    problems: list[AgentProblem] = field(default_factory=list)
    activity: bool = False
    printed: bool = False  # any output at all: an agent that printed is not a failed start
    result: ResultInfo | None = None
    timed_out: bool = False
    stopped: bool = False
    last_error: str = ""


class _Run:
    def __init__(
        self,
        engine: Engine,
        change: Change,
        settings: Settings,
        max_iterations: int,
        scope: str,
        guidance: Sequence[str],
    ) -> None:
        self.engine = engine
        self.change = change
        self.settings = settings
        self.scope = scope
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        self.id = f"r-{stamp}-{secrets.token_hex(2)}"
        started = now_iso()
        self.status = RunStatus(
            run_id=self.id,
            change=change.name,
            root=change.root,
            state="running",
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
        self.process: AgentProcess | None = None
        self.task: asyncio.Task[None] | None = None
        self.history = RunHistory(change.root, self.id, self._history_error)
        self.iterations: list[dict[str, Any]] = []
        self.transitions: list[dict[str, Any]] = []
        self.ended_at: str | None = None
        self._tasks_stat: tuple[int, int] | None = None

    # -- events ------------------------------------------------------------------------------
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

    def record(self) -> dict[str, Any]:
        return {
            "runId": self.id,
            "change": self.change.name,
            "root": self.change.root.as_uri(),
            "startedAt": self.status.started_at,
            "endedAt": self.ended_at,
            "state": self.status.state,
            "reason": self.status.reason,
            "transitions": list(self.transitions),
            "iterations": list(self.iterations),
            "guidance": [
                {"text": g.text, "at": g.at, "deliveredIn": g.delivered_in} for g in self.guidance
            ],
        }

    def save(self) -> None:
        self.history.save(self.record())

    # -- tasks.md ----------------------------------------------------------------------------
    def read_doc(self) -> TasksDoc:
        """Parse tasks.md; raises _RunEnd('failed') when it vanished or cannot be read."""
        if not self.change.folder.is_dir():
            raise _RunEnd("failed", f"the change folder {self.change.folder} was removed")
        try:
            text = read_tasks_text(self.change.tasks_path)
        except OSError as exc:
            raise _RunEnd(
                "failed", f"tasks.md cannot be read ({exc.strerror or exc}); nothing was changed"
            ) from exc
        if text is None:
            raise _RunEnd("failed", f"{self.change.tasks_path} is missing")
        return parse_tasks(text)

    def poll_tasks(self) -> None:
        """Cheap live progress during an iteration: re-parse only when the file changed."""
        try:
            st = self.change.tasks_path.stat()
        except OSError:
            return
        key = (st.st_mtime_ns, st.st_size)
        if key == self._tasks_stat:
            return
        self._tasks_stat = key
        try:
            text = read_tasks_text(self.change.tasks_path)
        except OSError:
            return
        if text is None:
            return
        doc = parse_tasks(text)
        if (doc.completed, doc.total) != (self.status.completed, self.status.total):
            self.update(completed=doc.completed, total=doc.total)

    # -- the loop ----------------------------------------------------------------------------
    async def main(self) -> None:
        try:
            state, reason = await self._loop()
        except _RunEnd as end:
            state, reason = end.state, end.reason
        except asyncio.CancelledError:
            # No await may be trusted here (the loop may be shutting down): kill synchronously.
            state, reason = "stopped", "the run was cancelled"
            if self.process is not None:
                self.process.kill_now()
        except Exception as exc:  # a bug: say so, never leave the run hanging
            log.exception("run %s crashed", self.id)
            state, reason = "failed", f"internal error: {exc!r}"
            await self._kill_process(self.settings.stop_grace_seconds)
        if self.stop_event.is_set() and state not in ("succeeded",):
            state, reason = "stopped", reason if state == "stopped" else "stopped by the user"
        self.history.close_iteration_log()
        self.ended_at = now_iso()
        self.update(state=state, reason=reason, transition=True)
        self.log(f"■ {state}: {reason}", "info" if state == "succeeded" else "warning")

    async def _loop(self) -> tuple[str, str]:
        s = self.settings
        self.update(reason="reading tasks.md", transition=True)
        doc = self.read_doc()
        self.update(completed=doc.completed, total=doc.total, reason="running")
        if doc.total == 0:
            return "succeeded", "tasks.md lists no tasks: nothing to do"
        if doc.all_done:
            return "succeeded", f"every task is already checked ({doc.completed}/{doc.total})"
        verify = list(s.verify_commands) or infer_verify_commands(self.change.root)
        no_progress = 0
        counted = 0
        spawns = 0
        total_cost: float | None = None
        last_startup_error: str | None = None
        backoff = float(os.environ.get("RALPH_BACKOFF_SECONDS", DEFAULT_BACKOFF_SECONDS))
        while True:
            if self.stop_event.is_set():
                return "stopped", "stopped by the user"
            if counted >= self.status.max_iterations:
                return (
                    "exhausted",
                    f"{_iterations(counted)} ran (maxIterations) and"
                    f" {doc.total - doc.completed} of {doc.total} tasks remain",
                )
            if (
                s.max_cost_usd is not None
                and total_cost is not None
                and total_cost >= s.max_cost_usd
            ):
                return (
                    "exhausted",
                    f"the agent's reported cost ${total_cost:.2f} reached maxCostUsd"
                    f" ${s.max_cost_usd:.2f}; {doc.total - doc.completed} tasks remain",
                )
            n = len(self.iterations) + 1
            story = scope_story(doc, self.scope)
            pending = [g for g in self.guidance if g.delivered_in is None]
            for g in pending:
                g.delivered_in = n
            prompt = build_prompt(
                self.change,
                doc,
                scope=self.scope,
                verify_commands=verify,
                guidance=[g.text for g in pending],
            )
            before = doc.completed
            self.update(
                iteration=counted + 1,
                story=story.id if story else None,
                reason=f"iteration {counted + 1}"
                + (f" · story {story.id} {story.title}" if story else " · whole change"),
                transition=True,
            )
            self.log(
                f"▶ iteration {counted + 1}/{self.status.max_iterations} · "
                + (f"story {story.id}: {story.title}" if story else "whole change")
                + f" · {doc.completed}/{doc.total} tasks"
                + (f" · guidance: {len(pending)}" if pending else "")
            )
            started = now_iso()
            t0 = time.monotonic()
            spawns += 1
            outcome = await self._iterate(n, prompt)
            elapsed = time.monotonic() - t0
            read_error: _RunEnd | None = None
            try:
                doc = self.read_doc()
                checked = doc.completed - before
            except _RunEnd as exc:
                read_error, checked = exc, 0
            res = outcome.result
            self.iterations.append(
                {
                    "n": n,
                    "startedAt": started,
                    "endedAt": now_iso(),
                    "exitCode": outcome.exit_code,
                    "tasksChecked": max(0, checked),
                    "costUsd": res.cost_usd if res else None,
                    "numTurns": res.num_turns if res else None,
                    "usage": res.usage if res else None,
                }
            )
            if res and res.cost_usd is not None:
                total_cost = (total_cost or 0.0) + res.cost_usd
            if read_error is not None:
                self.update(cost_usd=total_cost)
                if outcome.stopped or self.stop_event.is_set():
                    return "stopped", "stopped by the user"
                raise read_error
            self.update(completed=doc.completed, total=doc.total, cost_usd=total_cost)
            summary = (
                f"◀ iteration {counted + 1} ended · exit {outcome.exit_code}"
                f" · {max(0, checked)} task(s) checked · {doc.completed}/{doc.total}"
                f" · {elapsed:.1f}s"
            )
            if res and res.num_turns is not None:
                summary += f" · {res.num_turns} turns"
            if res and res.cost_usd is not None:
                summary += f" · ${res.cost_usd:.4f}"
            if outcome.timed_out:
                summary += f" · timed out after {s.iteration_timeout_seconds:g}s"
            self.log(summary)

            if outcome.stopped or self.stop_event.is_set():
                return "stopped", "stopped by the user"
            if outcome.start_error is not None:
                return "failed", str(outcome.start_error)
            if doc.total == 0:
                return "failed", "tasks.md no longer lists any task (was it emptied?)"
            if doc.all_done:
                return "succeeded", f"every task is checked ({doc.completed}/{doc.total})"
            auth = next((p for p in outcome.problems if p.kind == "auth"), None)
            if auth is not None:
                return "failed", f"the agent cannot authenticate: {auth.message}"
            fatal = next((p for p in outcome.problems if p.kind == "fatal"), None)
            if fatal is not None and checked <= 0:
                return "failed", f"the agent cannot work: {fatal.message}"
            limits = [p for p in outcome.problems if p.kind == "rate_limit"]
            # the problem that names a reset time wins; otherwise the latest one
            limited = next((p for p in limits if p.retry_at is not None), None) or (
                limits[-1] if limits else None
            )
            if limited is not None and checked <= 0 and not outcome.timed_out:
                # Not a no-progress iteration and not counted toward maxIterations.
                wait = backoff
                if limited.retry_at is not None:
                    wait = max(1.0, limited.retry_at - time.time())
                else:
                    backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                until = time.time() + wait
                self.update(
                    reason=f"rate limited ({limited.message}); retrying at {_clock(until)}",
                    transition=True,
                )
                self.log(
                    f"⏸ rate limited: {limited.message} — waiting {wait:.0f}s (until"
                    f" {_clock(until)}); this iteration does not count",
                    "warning",
                )
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.stop_event.wait(), timeout=wait)
                continue
            counted += 1
            # A startup error: the agent exited non-zero before printing anything. One that
            # printed and exited non-zero is judged by progress like any other iteration.
            failed_start = (
                outcome.exit_code not in (0, None)
                and not outcome.activity
                and not outcome.printed
                and checked <= 0
                and not outcome.timed_out
            )
            if failed_start:
                signature = outcome.last_error or f"exit code {outcome.exit_code}"
                if signature == last_startup_error:
                    return "failed", f"the agent failed the same way twice: {signature}"
                last_startup_error = signature
            else:
                last_startup_error = None
            if checked > 0:
                no_progress = 0
            else:
                no_progress += 1
                if no_progress >= s.stuck_after:
                    return "stuck", f"no task checked in {_iterations(no_progress)}"

    async def _iterate(self, n: int, prompt: str) -> _IterationOutcome:
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

    async def _spawn(self, n: int, prompt: str, prompt_file: Path) -> _IterationOutcome:
        s = self.settings
        out = _IterationOutcome()
        try:
            inv = build_invocation(
                s.agent,
                list(s.agent_command) if s.agent_command else None,
                list(s.agent_args),
                prompt,
                prompt_file,
                python=sys.executable,
                cwd=self.change.root,
            )
        except ValueError as exc:
            out.start_error = AgentStartError("not_found", str(exc))
            return out
        env = dict(os.environ)
        env.update(s.env)
        spec = SpawnSpec(argv=inv.argv, cwd=self.change.root, env=env, stdin_data=inv.stdin_data)
        self.history.open_iteration_log(n)
        try:
            proc = await AgentProcess.start(
                spec, raw_sink=self.history.write_raw, line_cap=AGENT_LINE_CAP
            )
        except AgentStartError as exc:
            out.start_error = exc
            self.log(f"✗ {exc}", "error")
            self.history.close_iteration_log()
            return out
        self.process = proc
        parser = inv.parser
        abort = asyncio.Event()
        loop = asyncio.get_running_loop()
        # Agent lines are passed on in small batches (one LogEvent holding several lines), so a
        # flood costs one event per batch, not one per line; a timer keeps a lone line live.
        batch: list[str] = []
        batch_chars = [0]
        batch_level: list[Level] = ["info"]
        timer: list[asyncio.TimerHandle | None] = [None]

        def flush() -> None:
            if timer[0] is not None:
                timer[0].cancel()
                timer[0] = None
            if batch:
                self.log("\n".join(batch), batch_level[0])
                batch.clear()
                batch_chars[0] = 0

        def add_line(text: str, level: Level) -> None:
            if batch and level != batch_level[0]:
                flush()
            batch_level[0] = level
            batch.append(text)
            batch_chars[0] += len(text) + 1
            if len(batch) >= LOG_BATCH_LINES or batch_chars[0] >= LOG_BATCH_CHARS:
                flush()
            elif timer[0] is None:
                timer[0] = loop.call_later(LOG_BATCH_SECONDS, flush)

        def add_lines(texts: tuple[str, ...], level: Level) -> None:
            if batch and level != batch_level[0]:
                flush()
            batch_level[0] = level
            batch.extend(texts)
            batch_chars[0] += sum(map(len, texts)) + len(texts)
            if len(batch) >= LOG_BATCH_LINES or batch_chars[0] >= LOG_BATCH_CHARS:
                flush()
            elif timer[0] is None:
                timer[0] = loop.call_later(LOG_BATCH_SECONDS, flush)

        working_reason = self.status.reason  # what the status says while the agent works
        offline = [False]

        def waiting_for_network(message: str) -> None:
            # The agent waits for its service on its own, as long as it takes: say so where
            # the user looks (status, log) instead of showing a run that merely "runs".
            offline[0] = True
            self.update(reason=f"waiting for the network: {message}", transition=True)
            timeout = s.iteration_timeout_seconds
            bound = (
                f"the iteration still ends at its timeout ({timeout:g}s, iterationTimeoutSeconds)"
                if timeout
                else "set iterationTimeoutSeconds to bound how long an iteration may wait"
            )
            self.log(
                f"⏸ the agent is waiting for the network — {message}; it goes on by itself"
                f" once the network is back; {bound}",
                "warning",
            )

        def handle(events: list[AgentEvent]) -> None:
            for ev in events:
                if isinstance(ev, LogLines):
                    if not ev.texts:
                        continue
                    out.printed = True
                    level: Level = "warning" if ev.kind == "stderr" else "info"
                    if ev.kind == "stderr":
                        last = next((t.strip() for t in reversed(ev.texts) if t.strip()), "")
                        out.last_error = last or out.last_error
                    add_lines(ev.texts, level)
                elif isinstance(ev, LogLine):
                    out.printed = True
                    level = "warning" if ev.kind == "stderr" else "info"
                    if ev.kind == "stderr" and ev.text.strip():
                        out.last_error = ev.text.strip()
                    add_line(ev.text, level)
                elif isinstance(ev, Activity):
                    out.activity = True
                    if offline[0]:
                        offline[0] = False
                        self.update(reason=working_reason, transition=True)
                elif isinstance(ev, ResultInfo):
                    out.result = ev
                    if ev.is_error and ev.text:
                        out.last_error = ev.text.strip()[:500]
                elif isinstance(ev, AgentProblem):
                    out.problems.append(ev)
                    out.last_error = ev.message
                    if ev.kind == "auth":
                        # An agent that cannot authenticate may retry for minutes: end it now.
                        abort.set()
                    elif ev.kind == "offline":
                        waiting_for_network(ev.message)

        async def pump() -> None:
            last_poll = 0.0
            async for stream, lines in proc.batches():
                handle(feed_lines(parser, stream, lines))
                t = time.monotonic()
                if t - last_poll > 0.25:
                    last_poll = t
                    self.poll_tasks()

        pump_task = asyncio.ensure_future(pump())
        stop_task = asyncio.ensure_future(self.stop_event.wait())
        abort_task = asyncio.ensure_future(abort.wait())
        wait_task = asyncio.ensure_future(proc.wait())
        try:
            done, _ = await asyncio.wait(
                {wait_task, stop_task, abort_task},
                timeout=s.iteration_timeout_seconds,
                return_when=asyncio.FIRST_COMPLETED,
            )
            flush()
            if wait_task in done:
                pass
            elif abort_task in done:
                self.log("✗ the agent cannot authenticate: stopping it", "error")
                await proc.terminate(min(s.stop_grace_seconds, 2.0))
            elif stop_task in done:
                out.stopped = True
                await proc.terminate(s.stop_grace_seconds)
            elif not done:
                out.timed_out = True
                self.log(
                    f"⏱ iteration timed out after {s.iteration_timeout_seconds:g}s:"
                    " stopping the agent",
                    "warning",
                )
                await proc.terminate(s.stop_grace_seconds)
            out.exit_code = await proc.wait()
            try:
                await asyncio.wait_for(asyncio.shield(pump_task), timeout=5)
            except asyncio.TimeoutError:
                pump_task.cancel()
            handle(parser.finish(out.exit_code))
            flush()
        finally:
            flush()
            stop_task.cancel()
            abort_task.cancel()
            if not wait_task.done():
                await proc.terminate(0.5)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(pump_task, timeout=1)
            self.process = None
            self.history.close_iteration_log()
        return out

    async def _kill_process(self, grace: float) -> None:
        proc = self.process
        if proc is not None:
            try:
                await asyncio.wait_for(proc.terminate(grace), timeout=grace + 5)
            except Exception:
                proc.kill_now()


class _RunEnd(Exception):
    def __init__(self, state: str, reason: str) -> None:
        super().__init__(reason)
        self.state = state
        self.reason = reason


class Engine:
    """Every run of this process; one run per change at a time."""

    def __init__(self, on_event: Callable[[EngineEvent], None] | None = None) -> None:
        self._on_event = on_event
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
    ) -> RunStatus:
        resolved = resolve_change(root, change)  # UnknownChangeError for unknown names
        key = (resolved.root, resolved.name)
        active = self._active.get(key)
        if active is not None:
            raise EngineError(
                f"change {change!r} is already running (run {active.id},"
                f" iteration {active.status.iteration}); stop it first"
            )
        if max_iterations is not None and (
            isinstance(max_iterations, bool)
            or not isinstance(max_iterations, int)
            or max_iterations < 1
        ):
            raise EngineError("maxIterations must be a whole number of at least 1")
        if scope is not None and scope not in ("story", "change"):
            raise EngineError("iterationScope must be 'story' or 'change'")
        run = _Run(
            self,
            resolved,
            settings,
            max_iterations or settings.max_iterations,
            scope or settings.iteration_scope,
            guidance,
        )
        self._active[key] = run
        run.update(transition=True)
        run.task = asyncio.ensure_future(self._main(run))
        return run.status.copy()

    async def _main(self, run: _Run) -> None:
        key = (run.change.root, run.change.name)
        try:
            await run.main()
        finally:
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
        if not text.strip():
            raise EngineError("guidance text is empty")
        if len(text) > MAX_GUIDANCE_CHARS:
            raise EngineError(
                f"guidance is {len(text)} characters long; keep it under {MAX_GUIDANCE_CHARS}"
            )
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

    async def shutdown(self) -> None:
        runs = list(self._active.values())
        for run in runs:
            run.stop_event.set()
        await asyncio.gather(*(r.task for r in runs if r.task is not None), return_exceptions=True)

    def shutdown_now(self) -> None:
        """Synchronous last resort: kill every agent tree at once."""
        for run in list(self._active.values()):
            run.stop_event.set()
            if run.process is not None:
                with contextlib.suppress(Exception):
                    run.process.kill_now()
