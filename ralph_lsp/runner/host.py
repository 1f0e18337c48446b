"""RunHost: one run's engine in this process, with its control endpoint and live file.

It fans the engine's events out to the output tail (for clients that attach later), to every
subscribed client of the control socket, and to an optional ``sink`` (the terminal, ``--events``
on stdout, or the server's feed), and handles the clients' stop and guide. The detached runner
(``python -m ralph_lsp.runner``), the foreground ``ralph-lsp run`` and the server (with
``ralph.runsOutliveEditor`` false) all host their runs through it, so ``ralph-lsp stop``,
``guide`` and ``attach`` reach a run wherever it was started.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from ralph_lsp.runner import events
from ralph_lsp.runner.control import (
    HIGH_WATER,
    STALL_SECONDS,
    TAIL_LINES,
    ControlError,
    listen,
    same_user,
    socket_path,
)
from ralph_lsp.runner.live import (
    HEARTBEAT_SECONDS,
    LiveRun,
    live_dir,
    remove_live,
    write_ended,
    write_live,
)
from ralph_lsp.runs import safe_dir
from ralph_lsp.runs.events import EndEvent, IterationEvent
from ralph_lsp.runs.request import AS_SETTINGS, RunRequest
from ralph_lsp.runs.service import RunService
from ralph_lsp.runs.status import EngineError, EngineEvent, LogEvent, RunStatus, StatusEvent
from ralph_lsp.settings import Settings

log = logging.getLogger(__name__)
Sink = Callable[[EngineEvent], None]
_malloc_trim: Callable[[int], int] | bool | None = False  # False: not looked up yet


def return_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``), once per
    iteration: an iteration frees about as much as it allocates (output, tasks.md parsed,
    records written), and without this the process's RSS kept some of it every time, the
    allocator's and not the run's (the 1,000-iteration soak, docs/benchmarks.md). Elsewhere
    (no glibc) nothing is done."""
    global _malloc_trim
    if _malloc_trim is False:
        _malloc_trim = None
        with contextlib.suppress(OSError, AttributeError):
            import ctypes  # the server has it already (server/watching/inotify.py)

            _malloc_trim = ctypes.CDLL(None).malloc_trim  # the process's own libc
    if callable(_malloc_trim):
        _malloc_trim(0)


class HostedEngine(RunService, Protocol):
    """What a host needs of the engine that executes its run: a
    :class:`~ralph_lsp.runs.service.RunService` (the local
    :class:`~ralph_lsp.loop.engine.Engine`, or one that executes it elsewhere: a Ray job's
    follower, ``ralph_lsp.remote``) that can also be shut down at once. ``pace`` is awaited
    between events to hold the run back while a subscriber is slow (backpressure)."""

    pace: Callable[[], Awaitable[None]] | None

    def shutdown_now(self) -> None: ...


EngineFactory = Callable[[Sink], HostedEngine]
"""Makes the engine of a hosted run, given where its events go."""


class _Client:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.subscribed = False
        self.editor = False  # an editor's server: being told the end counts as notified

    def send(self, data: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(data)

    def buffered(self) -> int:
        return self.writer.transport.get_write_buffer_size()

    def drop(self) -> None:
        """Disconnect (what was written still goes out if the peer reads it)."""
        self.writer.close()
        loop = asyncio.get_running_loop()
        loop.call_later(STALL_SECONDS, self.writer.transport.abort)


class RunHost:
    """``await host.start()`` then ``await host.wait()``; ``sink_tells_user`` says whether the
    sink is a person (a terminal, an editor) who is told how the run ended (a callable: asked
    at the end)."""

    def __init__(
        self,
        root: Path,
        change: str,
        settings: Settings,
        request: RunRequest = AS_SETTINGS,
        *,
        sink: Sink | None = None,
        sink_tells_user: bool | Callable[[], bool] = True,
        endpoint: bool = True,
        engine: EngineFactory | None = None,
    ) -> None:
        self.root, self.change, self.settings = root, change, settings
        self.request = request
        self.sink, self.sink_tells_user, self.endpoint = sink, sink_tells_user, endpoint
        if engine is None:
            # The engine (agents, git, prices) is imported by the first run hosted here: a
            # process that only follows live runs (a server at its start) never imports it.
            from ralph_lsp.loop.engine import Engine

            engine = Engine
        self.engine: HostedEngine = engine(self._on_event)
        self.engine.pace = self._pace
        self.status: RunStatus | None = None
        self.live: LiveRun | None = None
        self.clients: set[_Client] = set()
        self._tail: deque[tuple[int, bytes]] = deque()
        self._tail_lines = 0
        self._status_line: bytes | None = None
        self._end_line: bytes | None = None
        self._told_end = False
        self._server: asyncio.AbstractServer | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._socket: Path | None = None
        self._answering = 0  # requests being answered: the end waits for their replies

    @property
    def run_id(self) -> str:
        assert self.status is not None
        return self.status.run_id

    # -- the run -----------------------------------------------------------------------------
    async def start(self) -> RunStatus:
        """Start the run (EngineError/UnknownChangeError when it cannot start), then open the
        endpoint and the live file (a run without them still runs; the log says why)."""
        status = await self.engine.start(self.root, self.change, self.settings, self.request)
        self.root, self.change = status.root, status.change
        self.status = status
        if self.endpoint:
            try:
                await self._open(status)
            except (ControlError, OSError) as exc:
                self._log(f"this run cannot be attached to or controlled from elsewhere: {exc}")
        return status

    async def _open(self, status: RunStatus) -> None:
        # Where history cannot be written there is no live file: no socket either.
        safe_dir.make_folder(live_dir(status.root))  # never through a link
        path = socket_path(status.root, status.change, status.run_id)
        self._server = await listen(path, self._serve)
        self._socket = path
        self.live = LiveRun.of_this_process(
            status.run_id,
            status.change,
            status.root,
            str(path),
            status.started_at,
            status.to_json(),
        )
        write_live(self.live)
        self._heartbeat = asyncio.ensure_future(self._beat())

    async def _beat(self) -> None:
        while self.live is not None:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            self._refresh_live()

    def _refresh_live(self) -> None:
        if self.live is None or self.status is None or self.status.final:
            return
        self.live = self.live.seen(self.status.to_json())
        try:
            write_live(self.live, later=True)
        except OSError as exc:
            log.warning("the live file of %s cannot be refreshed: %s", self.change, exc)

    async def wait(self) -> RunStatus:
        """Until the run ends; then the endpoint and the live file go."""
        try:
            status = await self.engine.wait(self.root, self.change)
        finally:
            await self._close()
        return status

    async def _close(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        live, self.live = self.live, None
        final = self.status
        if live is not None:
            remove_live(live.root, live.change, live.run_id)
            if final is not None and final.final and not self._told_end:
                with contextlib.suppress(OSError):
                    write_ended(live.root, live.change, final.to_json())
        if self._server is not None:
            self._server.close()
        for _ in range(500):  # a stop's reply goes out before the socket closes (at most 5 s)
            if not self._answering:
                break
            await asyncio.sleep(0.01)
        for client in list(self.clients):
            client.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                asyncio.gather(*(c.writer.wait_closed() for c in self.clients)), 2.0
            )
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.unlink()

    async def stop(self) -> RunStatus:
        return await self.engine.stop(self.root, self.change)

    async def guide(self, text: str) -> None:
        done = self.engine.guide(self.root, self.change, text)
        if inspect.isawaitable(done):
            await done

    def _log(self, text: str) -> None:
        self._on_event(LogEvent(self.root, self.change, text, "warning"))

    # -- events ------------------------------------------------------------------------------
    def _on_event(self, event: EngineEvent) -> None:
        if isinstance(event, IterationEvent) and event.phase == "end":
            return_free_memory()
        data = events.dumps(event)
        if isinstance(event, StatusEvent):
            self.status = event.status
            self._status_line = data
        elif isinstance(event, LogEvent):
            lines = event.text.count("\n") + 1
            self._tail.append((lines, data))
            self._tail_lines += lines
            while len(self._tail) > 1 and self._tail_lines - self._tail[0][0] >= TAIL_LINES:
                self._tail_lines -= self._tail.popleft()[0]
        elif isinstance(event, EndEvent):
            self._end_line = data
            told = any(c.subscribed and c.editor for c in self.clients)
            tells = self.sink_tells_user
            tells = tells() if callable(tells) else tells
            self._told_end = told or (self.sink is not None and tells)
        for client in self.clients:
            if client.subscribed:
                client.send(data)
        if self.sink is not None:
            self.sink(event)

    async def _pace(self) -> None:
        """Hold the run back while a subscriber's buffer is full; drop one that stalls."""
        for client in list(self.clients):
            if client.buffered() <= HIGH_WATER:
                continue
            try:
                await asyncio.wait_for(client.writer.drain(), STALL_SECONDS)
            except (asyncio.TimeoutError, ConnectionError, RuntimeError):
                log.warning("a client of %s stopped reading: disconnected", self.change)
                self.clients.discard(client)
                client.drop()

    # -- the control socket -------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not same_user(writer.get_extra_info("socket")):
            writer.transport.abort()
            return
        writer.transport.set_write_buffer_limits(high=HIGH_WATER, low=HIGH_WATER // 4)
        client = _Client(writer)
        self.clients.add(client)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    await self._handle(client, message)
        except (ConnectionError, ValueError, asyncio.LimitOverrunError):
            pass
        finally:
            self.clients.discard(client)
            writer.close()

    async def _handle(self, client: _Client, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "hello":
            self._subscribe(client, bool(message.get("editor")))
            return
        reply: dict[str, Any] = {"type": "reply", "id": message.get("id"), "ok": True}
        self._answering += 1
        try:
            if kind == "stop":
                reply["status"] = (await self.stop()).to_json()
            elif kind == "guide":
                text = message.get("text")
                if not isinstance(text, str):
                    raise EngineError("guidance must be text")
                await self.guide(text)
            else:
                raise EngineError(f"unknown request {kind!r}")
        except EngineError as exc:
            reply.update(ok=False, error=str(exc))
        finally:
            self._answering -= 1
        client.send((json.dumps(reply) + "\n").encode())

    def _subscribe(self, client: _Client, editor: bool) -> None:
        client.editor = editor
        hello = {"v": events.VERSION, "type": "hello", "runId": self.run_id, "pid": os.getpid()}
        client.send((json.dumps(hello) + "\n").encode())
        if self._status_line is not None:
            client.send(self._status_line)
        for _, data in self._tail:
            client.send(data)
        if self._end_line is not None:
            client.send(self._end_line)
            if editor:
                self._told_end = True
        client.subscribed = True
