"""A queue of changes (SPEC §9 "Queues"): several changes run through one :class:`Engine`.

One after another in the one work tree by default; with ``parallel`` above 1, up to that many at
once, each in its own git worktree (SPEC §8), which is refused outside git before anything
starts. A change that ends ``stuck``, ``failed``, ``exhausted`` or ``interrupted`` does not stop
the queue unless ``stop_on_failure``. One budget (``max_cost_usd``) bounds the whole queue: a
change that would start once it is spent does not start (``skipped``, with the reason), and a
change that starts gets at most what is left as its own ``maxCostUsd``. :meth:`Queue.stop`
stops the running change(s) and drops the rest, naming them.

The queue knows only the engine's face (start, wait, stop, statuses), so the same queue can run
in the CLI, the server or a runner process. Whoever drives it gets :class:`QueueEvent` s (the
whole queue's status on every change of an item) beside the engine's own events, and the queue
keeps its record at ``.ralph/queues/<queueId>/record.json`` (rewritten atomically). As it ends,
the queue starts its own ``ralph.onRunEnd`` command (``loop/on_end.py``), after its runs'; its
host awaits :meth:`Queue.ends_told` before it exits, and says where the command's word goes
(``say_end``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from ralph_lsp.loop import run_git as rungit
from ralph_lsp.loop import sandboxing
from ralph_lsp.loop.engine import EngineError, RunStatus
from ralph_lsp.loop.on_end import QueueSay, queue_ended
from ralph_lsp.openspec.workspace import UnknownChangeError, resolve_change
from ralph_lsp.placement import runs_on_ray
from ralph_lsp.runs.history import (
    atomic_write_json,
    history_root,
    make_history_root,
    read_small_file,
)
from ralph_lsp.runs.receipts import combined_costs, costs_text
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.runs.service import RunService
from ralph_lsp.runs.status import Level, deliver, now_iso
from ralph_lsp.sandbox import refusal as sandbox_refusal
from ralph_lsp.settings import Settings

log = logging.getLogger(__name__)

QUEUES_DIR = "queues"
# An item's states beside a run's final ones: not started yet, started, never started.
PENDING, RUNNING, SKIPPED, DROPPED = "pending", "running", "skipped", "dropped"
FAILURES = ("stuck", "failed", "exhausted", "interrupted")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


@dataclass
class QueueItem:
    """One change of a queue and what became of it."""

    change: str
    state: str = PENDING
    reason: str | None = None
    run_id: str | None = None
    iterations: int = 0
    completed: int = 0
    total: int = 0
    cost_usd: float | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_s: float | None = None
    branch: str | None = None
    costs: dict[str, Any] | None = None  # SPEC §15: the run's costs (runs/receipts.py)
    _t0: float = field(default=0.0, repr=False)

    def to_json(self) -> dict[str, Any]:
        """Every public field, its name in camelCase (``run_id`` is ``runId``)."""
        return {_camel(f.name): getattr(self, f.name) for f in fields(self) if f.name[0] != "_"}

    def take(self, status: RunStatus) -> None:
        """What the run's status says of this item."""
        self.run_id = status.run_id
        self.iterations = status.iteration
        self.completed, self.total = status.completed, status.total
        self.cost_usd = status.cost_usd
        self.costs = dict(status.costs) if status.costs else self.costs
        if status.worktree:
            self.branch = status.worktree.get("branch")
        if status.final:
            self.state, self.reason = str(status.state), status.reason


@dataclass(frozen=True)
class QueueOptions:
    parallel: int = 1
    stop_on_failure: bool = False
    max_cost_usd: float | None = None

    @classmethod
    def of(cls, settings: Settings, **overrides: Any) -> QueueOptions:
        """The options a queue's settings give (``queueParallel``, ``queueMaxCostUsd``)."""
        values: dict[str, Any] = {
            "parallel": settings.queue_parallel,
            "max_cost_usd": settings.queue_max_cost_usd,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass(frozen=True)
class QueueEvent:
    """The whole queue's status (:meth:`Queue.to_json`), sent on every change of an item."""

    status: dict[str, Any]


def new_queue_id() -> str:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"q-{stamp}-{os.getpid():x}{os.urandom(2).hex()}"


class Queue:
    """Runs ``changes`` of ``root`` through ``engine``; see the module's docstring."""

    def __init__(
        self,
        engine: RunService,
        root: Path,
        changes: Sequence[str],
        settings: Settings,
        options: QueueOptions | None = None,
        on_event: Callable[[QueueEvent], None] | None = None,
    ) -> None:
        self.engine = engine
        self.root = root
        self.settings = settings
        self.options = options or QueueOptions()
        self.id = new_queue_id()
        self.items = [QueueItem(c) for c in changes]
        self.state = PENDING
        self.reason: str | None = None
        self.started_at = now_iso()
        self.ended_at: str | None = None
        self._on_event = on_event
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._wake = asyncio.Event()
        #: where the queue's onRunEnd command's word goes (the host's; the log by default)
        self.say_end: QueueSay = _logged
        self._end_told: asyncio.Task[None] | None = None

    # -- the face -----------------------------------------------------------------------------

    async def start(self) -> dict[str, Any]:
        """Check the queue (before any change starts) and start it; its first status."""
        await self._check()
        self.state = RUNNING
        self._emit()
        self._task = asyncio.ensure_future(self._main())
        return self.to_json()

    async def wait(self) -> dict[str, Any]:
        if self._task is not None:
            await asyncio.shield(self._task)
        return self.to_json()

    async def ends_told(self) -> None:
        """Once the onRunEnd commands of the queue's runs, then its own, have ended."""
        await self.engine.ends_told()
        if self._end_told is not None:
            await asyncio.shield(self._end_told)

    async def stop(self) -> list[str]:
        """Stop the running change(s) and drop the rest; the changes dropped."""
        self._stopping = True
        dropped = self._drop("the queue was stopped before it started")
        self.reason = "stopped by the user" + (f"; dropped {', '.join(dropped)}" if dropped else "")
        running = [i for i in self.items if i.state == RUNNING]
        await asyncio.gather(*(self._stop_one(i.change) for i in running), return_exceptions=True)
        self._wake.set()
        await self.wait()
        return dropped

    @property
    def done(self) -> bool:
        return self.ended_at is not None

    def position(self) -> int:
        """k of ``k/n``: how many changes have started (or were passed over)."""
        return sum(1 for i in self.items if i.state != PENDING)

    def to_json(self) -> dict[str, Any]:
        costs = [i.cost_usd for i in self.items if i.cost_usd]
        return {
            "queueId": self.id,
            "root": self.root.as_uri(),
            "state": self.state,
            "reason": self.reason,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "parallel": self.options.parallel,
            "stopOnFailure": self.options.stop_on_failure,
            "maxCostUsd": self.options.max_cost_usd,
            "costUsd": round(sum(costs), 6) if costs else None,
            # SPEC §15: the total, cost per verified task and spend without progress of its runs
            "costs": combined_costs([i.costs for i in self.items]),
            "position": self.position(),
            "total": len(self.items),
            "items": [i.to_json() for i in self.items],
        }

    def queue_of(self, change: str) -> dict[str, Any]:
        """``{"id", "position", "total"}`` for a run of ``change`` (its ``ralph/runStatus``)."""
        names = [i.change for i in self.items]
        return {"id": self.id, "position": names.index(change) + 1, "total": len(names)}

    # -- the loop -----------------------------------------------------------------------------

    async def _check(self) -> None:
        if not self.items:
            raise EngineError("the queue is empty: name at least one change")
        names = [i.change for i in self.items]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise EngineError(f"a queue names each change once; named twice: {', '.join(twice)}")
        for name in names:
            try:
                resolve_change(self.root, name)
            except UnknownChangeError as exc:
                raise EngineError(str(exc)) from None
        # Fail closed once for the whole queue (SPEC §10), not once per change (a Ray job's
        # sandbox is its worker's, checked there).
        boxed: str | None = None
        if not runs_on_ray(self.settings):
            mode = sandboxing.mode(self.settings)[0]
            boxed = await asyncio.to_thread(sandbox_refusal, mode)
        if boxed is not None:
            raise EngineError(boxed)
        if self.options.parallel > 1:
            refusal = await rungit.refusal(self.root, self.run_settings(None))
            if refusal is not None:
                refusal = refusal.split("; run with isolation")[0]
                raise EngineError(
                    f"running {self.options.parallel} changes at once puts each in its own git"
                    f" worktree, and {refusal}; run them one after another (parallel 1)"
                )

    def run_settings(self, remaining: float | None) -> Settings:
        """A change's settings: its own limits, worktree isolation when several run at once,
        and a cost limit no higher than what is left of the queue's budget."""
        settings = self.settings
        if self.options.parallel > 1:
            settings = settings.replace(isolation="worktree")
        if remaining is not None:
            own = settings.max_cost_usd
            settings = settings.replace(
                max_cost_usd=remaining if own is None else min(own, remaining)
            )
        return settings

    def spent(self) -> float:
        total = 0.0
        for item in self.items:
            if item.state == RUNNING:
                item.cost_usd = self._live_cost(item.change)
            total += max(0.0, item.cost_usd or 0.0)  # nothing refunds a queue's budget
        return total

    def _live_cost(self, change: str) -> float | None:
        for st in self.engine.statuses(self.root, change):
            return st.cost_usd
        return None

    async def _main(self) -> None:
        running: dict[asyncio.Future[RunStatus], QueueItem] = {}
        try:
            while True:
                await self._fill(running)
                if not running:
                    break
                wake: asyncio.Future[Any] = asyncio.ensure_future(self._wake.wait())
                waiting: set[asyncio.Future[Any]] = {*running, wake}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                wake.cancel()
                self._wake.clear()
                for fut in done:
                    if fut is not wake:
                        item = running.pop(fut)
                        failure = fut.exception()
                        if failure is not None:  # the engine's bug must not hang the queue
                            item.state, item.reason = "failed", f"its end was lost: {failure}"
                            self._ended(item)
                        else:
                            self._finish(item, fut.result())
        finally:
            self._end()
            argv, status = self.settings.on_run_end, self.to_json()
            told = self.engine.ends_told
            self._end_told = queue_ended(argv, status, self.root, self.say_end, told)

    async def _fill(self, running: dict[asyncio.Future[RunStatus], QueueItem]) -> None:
        """Start pending changes while there is room (and budget)."""
        while not self._stopping and len(running) < self.options.parallel:
            item = next((i for i in self.items if i.state == PENDING), None)
            if item is None:
                return
            remaining = None
            if self.options.max_cost_usd is not None:
                spent = self.spent()
                remaining = self.options.max_cost_usd - spent
                if remaining <= 0:
                    self._skip(item, spent)
                    continue
            fut = await self._start_one(item, remaining)
            if fut is not None:
                running[fut] = item

    async def _start_one(
        self, item: QueueItem, remaining: float | None
    ) -> asyncio.Future[RunStatus] | None:
        item.state, item.started_at, item._t0 = RUNNING, now_iso(), time.monotonic()
        try:
            status = await self.engine.start(
                self.root,
                item.change,
                self.run_settings(remaining),
                RunRequest(queue=self.queue_of(item.change)),
            )
        except (EngineError, UnknownChangeError) as exc:
            item.state, item.reason = "failed", _not_started(item.change, exc)
            self._ended(item)
            self._after_failure(item)
            return None
        item.take(status)
        self._emit()
        return asyncio.ensure_future(self.engine.wait(self.root, item.change))

    def _finish(self, item: QueueItem, status: RunStatus) -> None:
        item.take(status)
        if item.state == RUNNING:
            item.state = "failed"
        self._ended(item)
        self._after_failure(item)

    def _ended(self, item: QueueItem) -> None:
        item.ended_at = now_iso()
        item.duration_s = round(time.monotonic() - item._t0, 3) if item._t0 else None
        self._emit()

    def _after_failure(self, item: QueueItem) -> None:
        if item.state in FAILURES and self.options.stop_on_failure and not self._stopping:
            self._stopping = True
            dropped = self._drop(f"the queue stopped after {item.change} ended {item.state}")
            self.reason = f"{item.change} ended {item.state} (--stop-on-failure)" + (
                f"; dropped {', '.join(dropped)}" if dropped else ""
            )

    def _skip(self, item: QueueItem, spent: float) -> None:
        budget = self.options.max_cost_usd
        item.state = SKIPPED
        item.reason = f"not started: the queue's budget of ${budget:g} is spent (${spent:.4f})"
        self._emit()

    def _drop(self, reason: str) -> list[str]:
        dropped = []
        for item in self.items:
            if item.state == PENDING:
                item.state, item.reason = DROPPED, reason
                dropped.append(item.change)
        if dropped:
            self._emit()
        return dropped

    async def _stop_one(self, change: str) -> None:
        try:
            await self.engine.stop(self.root, change)
        except EngineError:
            pass  # it ended meanwhile

    def _end(self) -> None:
        self.ended_at = now_iso()
        if self._stopping and self.reason and self.reason.startswith("stopped"):
            self.state = "stopped"
        else:
            self.state = "done"
        ok = sum(1 for i in self.items if i.state == "succeeded")
        summary = f"{ok}/{len(self.items)} succeeded"
        spent = costs_text(combined_costs([i.costs for i in self.items]))
        summary += f" · {spent}" if spent else ""
        self.reason = f"{summary}; {self.reason}" if self.reason else summary
        self._emit()

    def _emit(self) -> None:
        status = self.to_json()
        self._save(status)
        deliver(self._on_event, QueueEvent(status), log, "queue event handler failed")

    def _save(self, status: dict[str, Any]) -> None:
        try:
            base = make_history_root(self.root)
            atomic_write_json(base / QUEUES_DIR / self.id / "record.json", status)
        except OSError as exc:  # the queue goes on without its record
            log.warning("cannot write the queue's record: %s", exc)


def load_queues(root: Path, limit: int = 20) -> list[dict[str, Any]]:
    """The newest ``limit`` queue records of ``root``, newest first (damaged ones left out)."""
    import json

    base = history_root(root) / QUEUES_DIR
    try:
        folders = sorted((p for p in base.iterdir() if p.is_dir()), reverse=True)
    except OSError:
        return []
    out = []
    for folder in folders[:limit]:
        try:
            record = json.loads(read_small_file(folder / "record.json"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("items"), list):
            out.append(record)
    return out


def _logged(text: str, level: Level) -> None:
    log.log(logging.WARNING if level in ("warning", "error") else logging.INFO, "%s", text)


def _not_started(change: str, exc: Exception) -> str:
    """Why a queued change did not start. Every change was checked when the queue started, so an
    unknown one was removed or renamed while it waited."""
    if isinstance(exc, UnknownChangeError):
        others = f" (the changes now: {', '.join(exc.known)})" if exc.known else ""
        return (
            f"change {change!r} no longer exists: it was removed or renamed while it waited in"
            f" the queue{others}; the queue went on"
        )
    return f"did not start: {exc}"
