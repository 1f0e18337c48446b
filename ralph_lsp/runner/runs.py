"""Runs: the engine's surface (start, stop, guide, statuses, wait, shutdown) over the runs this
process hosts and the live runs it is attached to, with every event to one callback.

The server's engine (``session.engine``) is a :class:`Runs`. ``start`` spawns a detached runner
and attaches to it when ``ralph.runsOutliveEditor`` (``placement.in_own_runner``: the run goes
on if the server ends), else hosts the run here (:class:`RunHost`: it stops with the server, as
in v2). ``attach_all`` follows every live run of the given roots (status and output tail first,
then live) and gives each run that ended while no editor watched its one final status.
``shutdown`` stops the runs hosted here and only detaches from the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.workspace import resolve_change
from ralph_lsp.placement import in_own_runner, runs_on_ray
from ralph_lsp.runner.client import Attachment, RunnerError, request, spawn
from ralph_lsp.runner.host import EngineFactory, RunHost
from ralph_lsp.runner.live import LiveRun, find_live, live_path, read_live, take_ended
from ralph_lsp.runs.request import AS_SETTINGS, RunRequest
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import (
    EngineError,
    EngineEvent,
    RunStatus,
    StatusEvent,
    already_running,
    deliver,
    keep_task,
)
from ralph_lsp.settings import Settings

log = logging.getLogger(__name__)
Key = tuple[Path, str]
FIRST_STATUS_TIMEOUT = 10.0
# A live run's runner that does not answer at once is asked again (attach_all).
ATTACH_TRIES = 4
ATTACH_RETRY_SECONDS = 0.5


class Runs:
    def __init__(
        self,
        on_event: Callable[[EngineEvent], None] | None = None,
        *,
        sink_tells_user: Callable[[], bool] | None = None,
        remote_engine: EngineFactory | None = None,
    ) -> None:
        self._on_event = on_event
        # The engine of a run hosted here whose ralph.runner is "ray" (given by the layer that
        # knows it: the server, the remote runner); None: such a run is refused here.
        self._remote_engine = remote_engine
        # Whether the events' receiver tells a person of a hosted run's end (a queue runner
        # asks whether an editor watches; else its ended note is left for the next attach).
        self._tells_user: bool | Callable[[], bool] = sink_tells_user or True
        self._hosts: dict[Key, RunHost] = {}
        self._attached: dict[Key, Attachment] = {}
        self._latest: dict[Key, RunStatus] = {}
        self._done: dict[Key, asyncio.Task[Any]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ending: set[asyncio.Task[Any]] = set()  # onRunEnd of runs ended here
        self._closing = False

    # -- events ------------------------------------------------------------------------------
    def _emit(self, event: EngineEvent) -> None:
        if isinstance(event, StatusEvent):
            self._latest[(event.status.root, event.status.change)] = event.status
        deliver(self._on_event, event, log, "run event handler failed")

    def feed(self, event: EngineEvent) -> None:
        """An event of a run followed through someone else (a queue runner's stream); ignored
        for a run followed here directly, which sends its own."""
        if isinstance(event, StatusEvent):
            key = (event.status.root, event.status.change)
        else:
            key = (event.root, event.change)
        if key in self._attached or key in self._hosts:
            return
        self._emit(event)

    # -- start -------------------------------------------------------------------------------
    async def start(
        self,
        root: Path,
        change: str,
        settings: Settings,
        request: RunRequest = AS_SETTINGS,
    ) -> RunStatus:
        resolved = resolve_change(root, change)  # UnknownChangeError for unknown names
        key = (resolved.root, resolved.name)
        if request.follow_up and runs_on_ray(settings):
            raise EngineError("a follow-up run (review comments) runs here, not on Ray")
        current = self._latest.get(key)
        attached = self._attached.get(key)
        if current is not None and not current.final and attached is not None:
            pid = attached.live.pid
            raise already_running(change, current.run_id, current.iteration, pid)
        if current is not None and not current.final and key in self._hosts:
            raise already_running(change, current.run_id, current.iteration)
        find_live(resolved.root)  # a runner found gone is marked interrupted first
        if in_own_runner(settings):
            return await self._start_runner(key, settings, request)
        engine = None
        if runs_on_ray(settings):
            if self._remote_engine is None:
                raise EngineError("ralph.runner 'ray' cannot run here: this process has no Ray")
            engine = self._remote_engine
        host = RunHost(
            *key,
            settings,
            request,
            sink=self._emit,
            sink_tells_user=self._tells_user,
            engine=engine,
        )
        status = await host.start()
        self._hosts[key] = host
        self._done[key] = keep_task(self._tasks, self._hosted(key, host))
        return status

    async def _hosted(self, key: Key, host: RunHost) -> None:
        try:
            await host.wait()
        finally:
            self._hosts.pop(key, None)
            # its onRunEnd goes on after it (its engine's); ends_told waits for it
            keep_task(self._ending, host.engine.ends_told())

    async def ends_told(self) -> None:
        """Once the ``onRunEnd`` commands of the runs hosted here have ended (a runner's run
        has its runner's: none here)."""
        hosted = [h.engine.ends_told() for h in list(self._hosts.values())]
        await asyncio.gather(*hosted, *list(self._ending), return_exceptions=True)

    async def _start_runner(self, key: Key, settings: Settings, request: RunRequest) -> RunStatus:
        try:
            spawned = await spawn(*key, settings, request)
        except RunnerError as exc:
            raise EngineError(str(exc)) from None
        keep_task(self._tasks, spawned.process.wait())  # reaped when it ends, while we live
        live = read_live(live_path(*key))
        if live is None or live.run_id != spawned.run_id:
            raise EngineError(f"the runner of {key[1]!r} ended before it could be followed")
        status = await self._attach(live)
        if status is None:
            raise EngineError(f"the runner of {key[1]!r} does not answer")
        return status

    # -- attach ------------------------------------------------------------------------------
    async def attach_all(self, roots: Iterable[Path]) -> None:
        """Follow every live run of ``roots``; tell the runs that ended unwatched."""
        for root in roots:
            lives = await asyncio.to_thread(find_live, root)
            for live in lives:
                await self._attach_found(live)
            self._tell_ended(root, seen_running=False)

    async def _attach_found(self, live: LiveRun) -> None:
        """Follow a run found live. A runner that does not answer at once is asked again a few
        times before its run is left to be told at its end, and the reason is logged: a silent
        miss left the editor showing nothing of a run that was going on."""
        key = (live.root, live.change)
        last: Exception | None = None
        for _ in range(ATTACH_TRIES):
            if key in self._attached or key in self._hosts:
                return
            try:
                await self._attach(live)
                return
            except (RunnerError, OSError) as exc:
                last = exc
            await asyncio.sleep(ATTACH_RETRY_SECONDS)
            if read_live(live_path(*key)) is None:
                return  # it ended meanwhile: told as ended runs are
        log.warning("the runner of %r (pid %s) did not answer: %s", live.change, live.pid, last)

    async def _attach(self, live: LiveRun) -> RunStatus | None:
        key = (live.root, live.change)
        attached = Attachment(live, self._emit)
        await attached.open(editor=True)
        self._attached[key] = attached
        self._done[key] = keep_task(self._tasks, self._follow(key, attached))
        try:
            await asyncio.wait_for(attached.first_status.wait(), FIRST_STATUS_TIMEOUT)
        except asyncio.TimeoutError:
            return None
        return attached.status

    async def _follow(self, key: Key, attached: Attachment) -> None:
        await attached.closed
        if self._attached.get(key) is attached:
            del self._attached[key]
        if attached.final is None and not self._closing:
            # The runner hung up without an end: it died. Say so as its final status.
            await asyncio.to_thread(find_live, key[0])
            self._tell_ended(key[0], seen_running=True)

    def _tell_ended(self, root: Path, *, seen_running: bool) -> None:
        """The final status of each run of ``root`` that ended with no editor told; a client
        that never saw it running first sees it running, so it says once that it ended."""
        for data in take_ended(root):
            try:
                final = RunStatus.from_json(data)
            except (KeyError, TypeError, ValueError):
                continue
            if not seen_running:
                self._emit(StatusEvent(replace(final, state=RunState.RUNNING)))
            self._emit(StatusEvent(final))

    # -- control -----------------------------------------------------------------------------
    async def stop(self, root: Path, change: str) -> RunStatus:
        key = (root, change)
        host = self._hosts.get(key)
        if host is not None:
            return await host.stop()
        reply = await self._request(key, {"type": "stop"})
        return RunStatus.from_json(reply["status"])

    async def guide(self, root: Path, change: str, text: str) -> None:
        key = (root, change)
        host = self._hosts.get(key)
        if host is not None:
            await host.guide(text)
            return
        await self._request(key, {"type": "guide", "text": text})

    async def _request(self, key: Key, message: dict[str, Any]) -> dict[str, Any]:
        attached = self._attached.get(key)
        try:
            if attached is not None:
                reply = await attached.send(message)
            else:  # started elsewhere after we looked: reach it through its live file
                live = next((r for r in find_live(key[0]) if r.change == key[1]), None)
                if live is None:
                    raise EngineError(f"change {key[1]!r} is not running")
                reply = await request(live, message)
        except RunnerError as exc:
            raise EngineError(str(exc)) from None
        if not reply.get("ok"):
            raise EngineError(str(reply.get("error") or f"change {key[1]!r} is not running"))
        return reply

    # -- what the server reads -----------------------------------------------------------------
    def statuses(self, root: Path | None = None, change: str | None = None) -> list[RunStatus]:
        return [
            status.copy()
            for key, status in sorted(
                self._latest.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])
            )
            if (root is None or key[0] == root) and (change is None or key[1] == change)
        ]

    def active_count(self) -> int:
        return sum(1 for s in self._latest.values() if not s.final)

    async def wait(self, root: Path, change: str) -> RunStatus:
        task = self._done.get((root, change))
        if task is not None:
            await asyncio.shield(task)
        status = self._latest.get((root, change))
        if status is None:
            raise EngineError(f"change {change!r} has not run")
        return status

    # -- the end ---------------------------------------------------------------------------------
    async def shutdown(self, reason: str | None = None) -> None:
        """Stop the runs hosted here (their ends awaited); detach from the others."""
        self._closing = True
        hosts = list(self._hosts.values())
        for attached in list(self._attached.values()):
            await attached.close()
        await asyncio.gather(*(h.engine.shutdown(reason) for h in hosts), return_exceptions=True)
        await asyncio.gather(
            *(
                self._done[k]
                for k in list(self._done)
                if k in self._hosts or not self._done[k].done()
            ),
            return_exceptions=True,
        )

    def shutdown_now(self) -> None:
        """Synchronous last resort: kill the agent trees of the runs hosted here."""
        for host in list(self._hosts.values()):
            host.engine.shutdown_now()

    def unfinished(self) -> list[RunStatus]:
        """Runs followed but not hosted here that have not ended (they go on without us)."""
        return [s for k, s in self._latest.items() if not s.final and k not in self._hosts]
