"""QueueHost: a whole queue in a runner process of its own, so it outlives the editor as a run
does (``python -m ralph_lsp.runner --changes …``).

It drives a :class:`~ralph_lsp.loop.queue.Queue` over :class:`~ralph_lsp.runner.runs.Runs` with
each change hosted in this process (a :class:`~ralph_lsp.runner.host.RunHost`: its own live file
and control socket, so ``stop``/``guide``/``attach`` and a new server's ``attach_all`` reach it
as any run). The queue itself is discoverable at ``.ralph/live/queues/<queueId>.json`` (a
:class:`~ralph_lsp.runner.live.LiveRun` whose run id and change are the queue's id) with a control
socket of its own:

- client → runner: ``{"type": "hello", "editor": bool}`` subscribes; ``{"type": "stop", "id"}``
  stops the queue (its running changes stopped, the rest dropped);
- runner → client: ``{"v", "type": "queue", "status"}`` (the queue's status: at once, then on
  every change of an item), every event of its runs as they come (the event stream), and to a
  stop ``{"type": "reply", "id", "ok", "stopped", "dropped", "status"}``.

The runner runs ``onRunEnd`` itself, for each run and for the queue, whether an editor watches or
not. When the queue ends with no editor subscribed, its final status is left as an ended note
(``.ralph/live/queues/<queueId>.ended.json``) that the next server to attach takes, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ralph_lsp.loop.engine import EngineEvent
from ralph_lsp.loop.queue import Queue, QueueEvent, QueueOptions
from ralph_lsp.runner import events
from ralph_lsp.runner.control import ControlError, listen, same_user, socket_path
from ralph_lsp.runner.host import EngineFactory
from ralph_lsp.runner.live import HEARTBEAT_SECONDS, LiveRun
from ralph_lsp.runner.queue_live import ENDED, queue_live_path, queues_live_dir
from ralph_lsp.runner.runs import Runs
from ralph_lsp.runs import safe_dir
from ralph_lsp.runs.history import atomic_write_json
from ralph_lsp.settings import Settings

log = logging.getLogger(__name__)


def queue_line(status: dict[str, Any]) -> bytes:
    return (json.dumps({"v": events.VERSION, "type": "queue", "status": status}) + "\n").encode()


class QueueHost:
    """``await host.start()`` (the queue's first status) then ``await host.wait()``."""

    def __init__(
        self,
        root: Path,
        changes: Sequence[str],
        settings: Settings,
        options: QueueOptions,
        remote_engine: EngineFactory | None = None,
    ) -> None:
        self.root = root
        # Each change in this process: the runner is what outlives the editor.
        self.runs = Runs(
            on_event=self._on_run_event,
            sink_tells_user=self._watched,
            remote_engine=remote_engine,
        )
        run_settings = settings.replace(runs_outlive_editor=False)
        self.queue = Queue(self.runs, root, changes, run_settings, options, self._on_queue)
        self.queue.say_end = _say
        self.settings = settings
        self.clients: dict[asyncio.StreamWriter, bool] = {}  # writer → subscribed as an editor
        self.live: LiveRun | None = None
        self._server: asyncio.AbstractServer | None = None
        self._socket: Path | None = None
        self._heartbeat: asyncio.Task[None] | None = None

    def _watched(self) -> bool:
        return any(self.clients.values())

    async def start(self) -> dict[str, Any]:
        status = await self.queue.start()  # EngineError: refused before anything starts
        try:
            await self._open()
        except (ControlError, OSError) as exc:
            log.warning("this queue cannot be attached to from elsewhere: %s", exc)
        return status

    async def _open(self) -> None:
        safe_dir.make_folder(queues_live_dir(self.root))  # never through a link
        path = socket_path(self.root, "queue", self.queue.id)
        self._server = await listen(path, self._serve)
        self._socket = path
        q = self.queue
        self.live = LiveRun.of_this_process(
            q.id, q.id, self.root, str(path), q.started_at, q.to_json()
        )
        self._write_live()
        self._heartbeat = asyncio.ensure_future(self._beat())

    def _write_live(self) -> None:
        if self.live is None:
            return
        self.live = self.live.seen(self.queue.to_json())
        with contextlib.suppress(OSError):
            atomic_write_json(queue_live_path(self.root, self.queue.id), self.live.to_json())

    async def _beat(self) -> None:
        while self.live is not None:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            self._write_live()

    async def wait(self) -> dict[str, Any]:
        try:
            status = await self.queue.wait()
            await self.queue.ends_told()  # its runs' onRunEnd commands, then its own
        finally:
            await self._close()
        return status

    async def stop(self) -> dict[str, Any]:
        stopped = [i.change for i in self.queue.items if i.state == "running"]
        dropped = await self.queue.stop()
        return {"stopped": stopped, "dropped": dropped, "status": self.queue.to_json()}

    async def _close(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        live, self.live = self.live, None
        if live is not None:
            if not self._watched():
                with contextlib.suppress(OSError):
                    path = queues_live_dir(self.root) / f"{self.queue.id}{ENDED}"
                    atomic_write_json(path, self.queue.to_json())
            with contextlib.suppress(OSError):
                safe_dir.unlink(queue_live_path(self.root, self.queue.id))
        if self._server is not None:
            self._server.close()
        for writer in list(self.clients):
            writer.close()
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.unlink()

    # -- events -----------------------------------------------------------------------------
    def _broadcast(self, data: bytes) -> None:
        for writer in self.clients:
            if not writer.is_closing():
                writer.write(data)

    def _on_queue(self, event: QueueEvent) -> None:
        self._broadcast(queue_line(event.status))
        self._write_live()

    def _on_run_event(self, event: EngineEvent) -> None:
        self._broadcast(events.dumps(event))

    # -- the control socket -------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not same_user(writer.get_extra_info("socket")):
            writer.transport.abort()
            return
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                with contextlib.suppress(ValueError):
                    message = json.loads(line)
                    if isinstance(message, dict):
                        await self._handle(writer, message)
        except (ConnectionError, ValueError, asyncio.LimitOverrunError):
            pass
        finally:
            self.clients.pop(writer, None)
            writer.close()

    async def _handle(self, writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "hello":
            writer.write(queue_line(self.queue.to_json()))
            self.clients[writer] = bool(message.get("editor"))
            return
        reply: dict[str, Any] = {"type": "reply", "id": message.get("id"), "ok": True}
        if kind == "stop":
            reply.update(await self.stop())
        else:
            reply.update(ok=False, error=f"unknown request {kind!r}")
        writer.write((json.dumps(reply) + "\n").encode())


def _say(text: str, level: str) -> None:
    """A queue's onRunEnd word: the runner's stderr (its log file when detached)."""
    print(f"[{level}] {text}", file=sys.stderr, flush=True)
