"""Spawning one agent under the watchdog, reading its output, and stopping its whole tree.

The engine never starts an agent directly: it starts ``python -m ralph_lsp.proc.watchdog`` (see
``watchdog.py``), which starts the agent in a new session and guarantees that no process of the
agent's tree survives the iteration, a stop, or the death of this process (even by SIGKILL).

Pipes between this process and the watchdog:

* the agent's stdout and stderr: read here in chunks, split into lines (a line is capped, so a
  10 MB line costs bounded memory), handed out by ``AgentProcess.batches()`` (the lines of one
  read at a time) or ``AgentProcess.lines()`` (one at a time);
* the agent's stdin: ``/dev/null``, or a pipe this process writes the prompt into from a task;
* control (here → watchdog): ``stop <grace>``; its end-of-file (this process died, or dropped the
  ``AgentProcess``) makes the watchdog end the tree at once;
* status (watchdog → here): the agent's pid, its exit code, and "done" once the tree is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import IO, Any

from ralph_lsp.proc import inspection, tree, watchdog
from ralph_lsp.proc.reading import CHUNK, LINE_CAP, LineSplitter, OutputReading, RawSink, Stream
from ralph_lsp.proc.spawning import (
    START_TIMEOUT,
    AgentStartError,
    SpawnSpec,
    StartErrorKind,
    feed_stdin,
    inspection_args,
    package_parent,
    read_available,
    resolve_program,
)
from ralph_lsp.proc.stopping import (
    TreeStopping,
    become_subreaper,
    end_orphans,
    kill_all_now,
    kill_session,
    kill_tagged,
    kill_watchdog,
    live,
    reap,
)

__all__ = [
    "LINE_CAP",
    "AgentProcess",
    "AgentStartError",
    "LineSplitter",
    "RawSink",
    "SpawnSpec",
    "Stream",
    "kill_all_now",
    "resolve_program",
]

log = logging.getLogger(__name__)


class AgentProcess(OutputReading, TreeStopping):
    """One running agent, under its watchdog. Create with ``await AgentProcess.start(spec)``."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        agent_pid: int,
        control: int,
        status: asyncio.StreamReader,
        status_transport: asyncio.BaseTransport,
        raw_sink: RawSink | None,
        line_cap: int,
    ) -> None:
        self.pid = agent_pid
        self.watchdog_pid = popen.pid
        self.leftover: list[int] = []  # pids the watchdog could not kill (normally empty)
        self._popen = popen
        self._control: int | None = control
        self._status = status
        self._transports: list[asyncio.BaseTransport] = [status_transport]
        self._raw_sink = raw_sink
        self._sink_failed = False
        self._line_cap = line_cap
        self._exit_code: int | None = None
        self._done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        # One item per read: the lines it completed (64 reads of at most CHUNK bytes).
        self._queue: asyncio.Queue[tuple[Stream, list[str]] | None] = asyncio.Queue(maxsize=64)
        self._discard = False
        self._lines_taken = False
        self._tasks: list[asyncio.Task[None]] = []
        self._watchdog_started: float | None = None  # its start time (seconds since the epoch)
        self.tag = ""  # RALPH_LSP_TREE of the agent's tree (see proc/inspection.py)

    # Long: the spawn and its every failure mode in order; each step depends on the last.
    @classmethod
    async def start(
        cls, spec: SpawnSpec, raw_sink: RawSink | None = None, *, line_cap: int = LINE_CAP
    ) -> AgentProcess:
        """Start the agent of ``spec`` under a watchdog. Raises ``AgentStartError``."""
        if not spec.argv:
            raise AgentStartError(
                "not_found", "the agent command is empty; set ralph.agentCommand or ralph.agent"
            )
        if not spec.cwd.is_dir():
            raise AgentStartError(
                "os_error", f"the agent's working directory {str(spec.cwd)!r} is not a folder"
            )
        exe, argv = spec.command(resolve_program(spec.argv[0], spec.env.get("PATH"), spec.cwd))
        become_subreaper()
        tag = f"{os.getpid()}-{os.urandom(8).hex()}"
        loop = asyncio.get_running_loop()
        control_r, control_w = os.pipe()
        status_r, status_w = os.pipe()
        stdin_r: int | None = None
        stdin_w: int | None = None
        if spec.stdin_data is not None:
            stdin_r, stdin_w = os.pipe()
        command = [
            sys.executable,
            "-E",  # the agent's PYTHON* variables are not the watchdog's business
            "-S",  # nor site-packages: stdlib only, found from its working folder (faster start)
            "-m",
            "ralph_lsp.proc.watchdog",
            "--control",
            str(control_r),
            "--status",
            str(status_w),
            "--cwd",
            os.path.abspath(spec.cwd),
            "--exe",
            exe,
            "--tag",
            tag,
            *inspection_args(),
            "--",
            *argv,
        ]
        try:
            fds = (control_r, control_w, status_r, status_w, stdin_r, stdin_w)
            popen = await _popen(
                fds,
                command,
                stdin=subprocess.DEVNULL if stdin_r is None else stdin_r,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(control_r, status_w),
                # Not the agent's folder: `-m` puts the working folder first on sys.path, and a
                # project's own json.py must not shadow the watchdog's.
                cwd=package_parent(),
                env=spec.env,
                # Its own group: a SIGKILL sent to the engine's whole process group must not
                # take the watchdog along before it has ended the agent's tree.
                start_new_session=True,
            )
        except OSError as err:
            for fd in (control_r, control_w, status_r, status_w, stdin_r, stdin_w):
                if fd is not None:
                    os.close(fd)
            if err.errno == errno.E2BIG:  # the watchdog gets the agent's command line
                _kind, text = watchdog.describe_start_error(err, spec.argv[0], exe)
                raise AgentStartError("os_error", text) from err
            raise AgentStartError(
                "os_error", f"could not start the process watchdog ({sys.executable}): {err}"
            ) from err
        for fd in (control_r, status_w, stdin_r):
            if fd is not None:
                os.close(fd)
        assert popen.stdout is not None and popen.stderr is not None

        status = asyncio.StreamReader(limit=1 << 20)
        status_transport, _ = await loop.connect_read_pipe(
            _protocol_factory(status), os.fdopen(status_r, "rb", buffering=0)
        )
        try:
            first = await asyncio.wait_for(status.readline(), START_TIMEOUT)
        except BaseException:
            kill_watchdog(popen, control_w, status_transport, stdin_w)
            raise
        message = _decode(first)
        agent_pid = message.get("pid")
        if not isinstance(agent_pid, int):
            kill_watchdog(popen, control_w, status_transport, stdin_w)
            if "error" in message:
                kind: StartErrorKind = "os_error"
                if message["error"] == "not_found":
                    kind = "not_found"
                elif message["error"] == "not_executable":
                    kind = "not_executable"
                raise AgentStartError(kind, str(message.get("message", "")))
            detail = read_available(popen.stderr.fileno()).strip() or "no message"
            raise AgentStartError(
                "os_error", f"the process watchdog failed before starting the agent: {detail}"
            )

        self = cls(popen, agent_pid, control_w, status, status_transport, raw_sink, line_cap)
        self.tag = tag
        self._watchdog_started = inspection.current().start_time(popen.pid)
        live.add(self)
        pipes: list[tuple[Stream, IO[bytes]]] = [("stdout", popen.stdout), ("stderr", popen.stderr)]
        for name, pipe in pipes:
            reader = asyncio.StreamReader(limit=CHUNK)
            transport, _ = await loop.connect_read_pipe(_protocol_factory(reader), pipe)
            self._transports.append(transport)
            self._tasks.append(asyncio.create_task(self._pump(name, reader)))
        if stdin_w is not None:
            assert spec.stdin_data is not None
            self._tasks.append(asyncio.create_task(feed_stdin(stdin_w, spec.stdin_data)))
        self._tasks.append(asyncio.create_task(self._follow_status()))
        for task in self._tasks:
            task.add_done_callback(_log_failure)
        return self

    @property
    def returncode(self) -> int | None:
        """The agent's exit code once its whole tree is gone, else None."""
        return self._done.result() if self._done.done() else None

    async def wait(self) -> int:
        """The agent's exit code (``-N`` if killed by signal N), once its whole tree is gone.

        Does not depend on the output pipes: an escaped grandchild holding stdout is killed by
        the watchdog when the agent exits.
        """
        return await asyncio.shield(self._done)

    async def _follow_status(self) -> None:
        done = False
        try:
            while True:
                line = await self._status.readline()
                if not line:
                    break
                message = _decode(line)
                exit_code = message.get("exit")
                if isinstance(exit_code, int):
                    self._exit_code = exit_code
                if message.get("done") is True:
                    done = True
                    leftover = message.get("leftover")
                    if isinstance(leftover, list):
                        self.leftover = [pid for pid in leftover if isinstance(pid, int)]
        except asyncio.CancelledError:
            # The event loop is going away (asyncio.run's teardown): leave the watchdog alone.
            # It ends the tree when this process exits (atexit, or EOF on its control pipe).
            raise
        except Exception:
            log.exception("lost the status pipe of watchdog %d; killing agent %d", *self._pids())
            self.kill_now()
        # The watchdog closed the status pipe: it has exited or is exiting.
        await reap(self._popen)
        if not done:
            # The watchdog died before it could finish (someone killed it): end what is left
            # of the agent's session ourselves.
            log.error("watchdog %d of agent %d died unexpectedly", *self._pids())
            kill_session(self.pid)
            await end_orphans(self._watchdog_started)
            kill_tagged(self.tag)
        if self.leftover:
            log.error("agent %d left processes it could not kill: %s", self.pid, self.leftover)
        self._close_control()
        live.discard(self)
        if not self._done.done():
            code = self._exit_code if self._exit_code is not None else -signal.SIGKILL
            self._done.set_result(code)

    def __del__(self) -> None:
        # A dropped handle must not leave its agent running: EOF on the control pipe tells the
        # watchdog to end the tree.
        if getattr(self, "_control", None) is not None:
            self._close_control()


async def _popen(fds: tuple[int | None, ...], *args: Any, **kw: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` in a thread: the calling thread waits until the child has exec'd,
    which on a loaded machine took tens to hundreds of ms, and on the event loop held every
    other run and request meanwhile. Cancelled while it goes on, the watchdog it starts is
    killed once it exists, and ``fds`` (the pipes it was given) are closed then."""

    def spawn() -> subprocess.Popen[bytes]:
        return subprocess.Popen(*args, **kw)

    spawning = asyncio.ensure_future(asyncio.to_thread(spawn))
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        spawning.add_done_callback(lambda done: _abandon(done, fds))
        raise


def _abandon(done: asyncio.Future[subprocess.Popen[bytes]], fds: tuple[int | None, ...]) -> None:
    if not done.cancelled() and done.exception() is None:
        popen = done.result()
        tree.signal_tree(popen.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            popen.kill()
        popen.wait()
        for pipe in (popen.stdout, popen.stderr):
            if pipe is not None:
                pipe.close()
    for fd in fds:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _decode(line: bytes) -> dict[str, object]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _protocol_factory(reader: asyncio.StreamReader) -> Callable[[], asyncio.StreamReaderProtocol]:
    return lambda: asyncio.StreamReaderProtocol(reader)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("agent process task failed", exc_info=task.exception())
