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
import atexit
import codecs
import contextlib
import errno
import json
import logging
import os
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from ralph_lsp.proc import watchdog

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

Stream = Literal["stdout", "stderr"]
RawSink = Callable[[str, bytes], None]
StartErrorKind = Literal["not_found", "not_executable", "os_error"]

LINE_CAP = 256 * 1024
"""Bytes of one output line handed out; the rest is counted in a note, never kept."""
CHUNK = 64 * 1024
"""Bytes read from a pipe at a time."""
START_TIMEOUT = 30.0
"""Seconds the watchdog may take to report that the agent runs (a loaded machine is slow)."""
STOP_MARGIN = watchdog.KILL_CAP + 5.0
"""Seconds past the grace after which a stop stops trusting the watchdog and kills directly."""

_INSTALL_HINTS = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "gemini": "npm install -g @google/gemini-cli",
}


@dataclass(frozen=True)
class SpawnSpec:
    """How to start one agent. Never run through a shell."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdin_data: bytes | None  # None → stdin is /dev/null


class AgentStartError(Exception):
    """The agent could not be started; ``str(err)`` tells the user what to do."""

    def __init__(self, kind: StartErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: StartErrorKind = kind
        self.message = message


def _hint(name: str) -> str:
    base = os.path.basename(name)
    install = f"install it ({_INSTALL_HINTS[base]})" if base in _INSTALL_HINTS else "install it"
    return f"{install}, or set the agent's full command (ralph.agentCommand, or --agent-command)"


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def resolve_program(name: str, path: str | None, cwd: Path) -> str:
    """The absolute path of the program ``name``, as ``execvp`` in ``cwd`` would find it.

    A name holding ``/`` is a path (relative to ``cwd``); otherwise each ``path`` entry is tried
    (an empty or relative entry is relative to ``cwd``). Raises ``AgentStartError``.
    """
    if not name:
        raise AgentStartError(
            "not_found", "the agent command is empty; set ralph.agentCommand or ralph.agent"
        )
    if "/" in name:
        candidate = cwd / name
        if not candidate.exists():
            raise AgentStartError(
                "not_found", f"agent program {name!r} was not found ({candidate}); {_hint(name)}"
            )
        if candidate.is_dir() or not os.access(candidate, os.X_OK):
            what = "a directory" if candidate.is_dir() else "not executable"
            raise AgentStartError(
                "not_executable",
                f"agent program {name!r} ({candidate}) is {what}; make it an executable file "
                f"(chmod +x), or {_hint(name)}",
            )
        return os.path.abspath(candidate)
    search = os.defpath if path is None else path
    unusable: Path | None = None
    for entry in search.split(os.pathsep):
        candidate = cwd / (entry or ".") / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
        if unusable is None and candidate.exists():
            unusable = candidate
    if unusable is not None:
        what = "a directory" if unusable.is_dir() else "not executable"
        raise AgentStartError(
            "not_executable",
            f"agent program {name!r} was found on PATH at {unusable}, but it is {what}; "
            f"make it executable (chmod +x), or {_hint(name)}",
        )
    shown = "PATH is not set" if path is None else f"PATH={_shorten(search)}"
    raise AgentStartError(
        "not_found", f"agent program {name!r} was not found on PATH ({shown}); {_hint(name)}"
    )


class LineSplitter:
    """Bytes in, decoded lines out: UTF-8 with replacement, no line ending, at most ``cap`` bytes.

    Splits on ``\\n`` and drops one ``\\r`` before it. A longer line keeps its first ``cap`` bytes
    (cut at a character boundary) followed by ``… [N more bytes]``; the rest is counted, not kept.
    """

    def __init__(self, cap: int = LINE_CAP) -> None:
        self.cap = cap
        self._buf = bytearray()
        self._dropped = 0

    def feed(self, data: bytes) -> list[str]:
        first = data.find(b"\n")
        if first < 0:
            self._append(data)
            return []
        self._append(data[:first])
        out = [self._emit()]
        last = data.rfind(b"\n")
        if last > first:
            middle = data[first + 1 : last]
            if len(middle) <= self.cap:  # every middle line fits: decode them in one go
                text = middle.decode("utf-8", "replace")
                lines = text.split("\n")
                if "\r" in text:
                    out.extend(line[:-1] if line.endswith("\r") else line for line in lines)
                else:
                    out.extend(lines)
            else:
                for piece in middle.split(b"\n"):
                    self._append(piece)
                    out.append(self._emit())
        self._append(data[last + 1 :])
        return out

    def finish(self) -> list[str]:
        """The last line, if the stream did not end with a newline."""
        return [self._emit()] if self._buf or self._dropped else []

    def _append(self, piece: bytes) -> None:
        room = self.cap - len(self._buf)
        if len(piece) <= room:
            self._buf += piece
        else:
            self._buf += piece[: max(room, 0)]
            self._dropped += len(piece) - max(room, 0)

    def _emit(self) -> str:
        raw = bytes(self._buf)
        dropped = self._dropped
        self._buf.clear()
        self._dropped = 0
        if not dropped:
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            return raw.decode("utf-8", "replace")
        # Decode as if more were coming, so a character cut in half at the cap is left out
        # (and counted) rather than shown as a replacement character.
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(raw, final=False)
        dropped += len(decoder.getstate()[0])
        return f"{text} … [{dropped} more bytes]"


_live: weakref.WeakSet[AgentProcess] = weakref.WeakSet()


def kill_all_now() -> None:
    """SIGKILL every agent tree this process still has running (for atexit and signal handlers)."""
    for proc in list(_live):
        proc.kill_now()


atexit.register(kill_all_now)


def _package_parent() -> str:
    """The folder ``python -m ralph_lsp.proc.watchdog`` must run in to import this very package."""
    return str(Path(watchdog.__file__).resolve().parents[2])  # ralph_lsp/proc/watchdog.py


class AgentProcess:
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
        self._watchdog_started: int | None = None  # its start time, in clock ticks since boot

    # -- starting ----------------------------------------------------------------------------
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
        exe = resolve_program(spec.argv[0], spec.env.get("PATH"), spec.cwd)
        _become_subreaper()
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
            "--",
            *spec.argv,
        ]
        try:
            popen = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL if stdin_r is None else stdin_r,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(control_r, status_w),
                # Not the agent's folder: `-m` puts the working folder first on sys.path, and a
                # project's own json.py must not shadow the watchdog's.
                cwd=_package_parent(),
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
            _kill_watchdog(popen, control_w, status_transport, stdin_w)
            raise
        message = _decode(first)
        agent_pid = message.get("pid")
        if not isinstance(agent_pid, int):
            _kill_watchdog(popen, control_w, status_transport, stdin_w)
            if "error" in message:
                kind: StartErrorKind = "os_error"
                if message["error"] == "not_found":
                    kind = "not_found"
                elif message["error"] == "not_executable":
                    kind = "not_executable"
                raise AgentStartError(kind, str(message.get("message", "")))
            detail = _read_available(popen.stderr.fileno()).strip() or "no message"
            raise AgentStartError(
                "os_error", f"the process watchdog failed before starting the agent: {detail}"
            )

        self = cls(popen, agent_pid, control_w, status, status_transport, raw_sink, line_cap)
        self._watchdog_started = _start_ticks(popen.pid)
        _live.add(self)
        pipes: list[tuple[Stream, IO[bytes]]] = [("stdout", popen.stdout), ("stderr", popen.stderr)]
        for name, pipe in pipes:
            reader = asyncio.StreamReader(limit=CHUNK)
            transport, _ = await loop.connect_read_pipe(_protocol_factory(reader), pipe)
            self._transports.append(transport)
            self._tasks.append(asyncio.create_task(self._pump(name, reader)))
        if stdin_w is not None:
            assert spec.stdin_data is not None
            self._tasks.append(asyncio.create_task(_feed(stdin_w, spec.stdin_data)))
        self._tasks.append(asyncio.create_task(self._follow_status()))
        for task in self._tasks:
            task.add_done_callback(_log_failure)
        return self

    # -- output ------------------------------------------------------------------------------
    async def batches(self) -> AsyncGenerator[tuple[Stream, list[str]], None]:
        """``(stream, lines)`` as the agent writes them, until both stdout and stderr are closed:
        the lines one read of that stream completed (never empty), in order within each stream.

        Lines are decoded as UTF-8 with replacement, without their line ending, capped at
        ``line_cap`` bytes. One consumer only (of ``batches`` or ``lines``). Leaving the loop
        early discards the rest.

        Read it to the end (or call ``aclose``): unread output is held back, so an agent that
        writes much more than is read blocks on its full pipe, as it would under any reader.
        """
        if self._lines_taken:
            raise RuntimeError("AgentProcess.lines() may be iterated only once")
        self._lines_taken = True
        open_streams = 2
        try:
            while open_streams:
                batch = await self._queue.get()
                if batch is None:
                    open_streams -= 1
                    continue
                yield batch
                await asyncio.sleep(0)  # a flood must not starve the rest of the event loop
        finally:
            if open_streams:
                self._discard = True
                while not self._queue.empty():
                    self._queue.get_nowait()

    async def lines(self) -> AsyncIterator[tuple[Stream, str]]:
        """``(stream, line)`` one at a time: ``batches()`` flattened (same rules)."""
        batches = self.batches()
        try:
            async for name, lines in batches:
                for line in lines:
                    yield name, line
        finally:
            await batches.aclose()

    async def _pump(self, name: Stream, reader: asyncio.StreamReader) -> None:
        splitter = LineSplitter(self._line_cap)
        try:
            while True:
                chunk = await reader.read(CHUNK)
                if not chunk:
                    break
                self._sink(name, chunk)
                lines = splitter.feed(chunk)
                if lines:
                    await self._put((name, lines))
                await asyncio.sleep(0)
            tail = splitter.finish()
            if tail:
                await self._put((name, tail))
        finally:
            await self._put(None)

    async def _put(self, batch: tuple[Stream, list[str]] | None) -> None:
        if not self._discard:
            await self._queue.put(batch)

    def _sink(self, name: Stream, chunk: bytes) -> None:
        if self._raw_sink is None:
            return
        try:
            self._raw_sink(name, chunk)
        except Exception:
            if not self._sink_failed:
                self._sink_failed = True
                log.exception("the raw output sink failed; output is still read")

    # -- exit --------------------------------------------------------------------------------
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

    async def terminate(self, grace: float) -> int:
        """SIGTERM the tree, SIGKILL whatever is left after ``grace`` seconds; returns the exit
        code once every process of the tree is gone. Idempotent; safe concurrently and after exit.
        """
        if not self._done.done():
            self._send(f"stop {max(0.0, grace):.3f}")
            try:
                await asyncio.wait_for(asyncio.shield(self._done), max(0.0, grace) + STOP_MARGIN)
            except asyncio.TimeoutError:
                log.error("watchdog %d did not end agent %d in time; killing", *self._pids())
                self.kill_now()
                with contextlib.suppress(ProcessLookupError):
                    self._popen.kill()
                await asyncio.shield(self._done)
        return self._done.result()

    def kill_now(self) -> None:
        """Synchronous, best effort: SIGKILL the agent and every descendant of the watchdog.

        For atexit and signal handlers. The watchdog is left alive to reap the tree: closing the
        control pipe tells it to finish and exit.
        """
        if self._done.done():
            return
        for _ in range(20):
            found = watchdog.signal_tree(self.watchdog_pid, signal.SIGKILL, self._agent_group())
            if not found:
                break
        self._close_control()

    async def aclose(self, grace: float = 0.0) -> None:
        """Stop the tree if it still runs, then stop reading and release every pipe."""
        await self.terminate(grace)
        self._discard = True
        for task in self._tasks:
            task.cancel()
        for transport in self._transports:
            transport.close()

    def _agent_group(self) -> tuple[int, ...]:
        # Only used without /proc. The agent may already be reaped (its exit not yet read
        # here), so its pid could in theory be reused; without /proc there is no better guess.
        return (self.pid,) if self._exit_code is None else ()

    def _pids(self) -> tuple[int, int]:
        return self.watchdog_pid, self.pid

    def _send(self, command: str) -> None:
        if self._control is None:
            return
        try:
            os.write(self._control, command.encode() + b"\n")
        except OSError:  # the watchdog is gone; _follow_status finishes up
            pass

    def _close_control(self) -> None:
        if self._control is not None:
            fd, self._control = self._control, None
            with contextlib.suppress(OSError):
                os.close(fd)

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
        await _reap(self._popen)
        if not done:
            # The watchdog died before it could finish (someone killed it): end what is left
            # of the agent's session ourselves.
            log.error("watchdog %d of agent %d died unexpectedly", *self._pids())
            _kill_session(self.pid)
            await _end_orphans(self._watchdog_started)
        if self.leftover:
            log.error("agent %d left processes it could not kill: %s", self.pid, self.leftover)
        self._close_control()
        _live.discard(self)
        if not self._done.done():
            code = self._exit_code if self._exit_code is not None else -signal.SIGKILL
            self._done.set_result(code)

    def __del__(self) -> None:
        # A dropped handle must not leave its agent running: EOF on the control pipe tells the
        # watchdog to end the tree.
        if getattr(self, "_control", None) is not None:
            self._close_control()


# -- helpers ---------------------------------------------------------------------------------
def _decode(line: bytes) -> dict[str, object]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _read_available(fd: int) -> str:
    try:
        os.set_blocking(fd, False)
        return os.read(fd, 8192).decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_watchdog(
    popen: subprocess.Popen[bytes],
    control: int,
    status: asyncio.BaseTransport,
    stdin_w: int | None,
) -> None:
    """Clean up after a start that failed: the watchdog may have started nothing, or hung."""
    watchdog.signal_tree(popen.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        popen.kill()
    popen.wait()
    for fd in (control, stdin_w):
        if fd is not None:
            os.close(fd)
    status.close()
    for pipe in (popen.stdout, popen.stderr):
        if pipe is not None:
            pipe.close()


async def _reap(popen: subprocess.Popen[bytes]) -> None:
    delay = 0.001
    for _ in range(200):
        if popen.poll() is not None:
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
    popen.kill()
    await asyncio.to_thread(popen.wait)


_subreaper = False


def _become_subreaper() -> None:
    """Make this process a child subreaper (once): should a watchdog be killed, its agent's
    offspring re-parent here instead of to init, where :func:`_end_orphans` finds them."""
    global _subreaper
    if not _subreaper:
        _subreaper = watchdog.become_subreaper()


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (from /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


async def _end_orphans(since: int | None) -> None:
    """SIGKILL (and reap) what a dead watchdog's tree left: processes that re-parented to this
    process (a subreaper) and started after that watchdog, with their descendants. Live
    watchdogs are kept. Looked for until none has turned up for 0.3 s (at most 2 s), since
    each killed parent hands its children over in turn."""
    if not _subreaper:
        return
    me = os.getpid()
    quiet = time.monotonic()
    deadline = quiet + 2.0
    while time.monotonic() < deadline and time.monotonic() - quiet < 0.3:
        keep = {p.watchdog_pid for p in _live}
        table = watchdog.process_table()
        mine = [pid for pid, st in table.items() if st[1] == me and pid not in keep]
        mine = [pid for pid in mine if since is None or (_start_ticks(pid) or since) >= since]
        for pid in mine:
            if table[pid][0] != "Z":
                quiet = time.monotonic()
                watchdog.signal_tree(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        await asyncio.sleep(0.02)


def _kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (the agent's, since it was started with setsid)."""
    for _ in range(20):
        table = watchdog.process_table()
        members = [pid for pid, stat in table.items() if stat[3] == sid and stat[0] != "Z"]
        if not members:
            return
        for pid in members:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


async def _feed(fd: int, data: bytes) -> None:
    """Write ``data`` to the pipe ``fd`` without blocking the loop, then close it."""
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    try:
        os.set_blocking(fd, False)
        while view:
            try:
                written = os.write(fd, view[:CHUNK])
            except BlockingIOError:
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_writer(fd, _resolve, ready)
                try:
                    await ready
                finally:
                    loop.remove_writer(fd)
                continue
            except BrokenPipeError:  # the agent does not read stdin; that is its business
                return
            view = view[written:]
    finally:
        os.close(fd)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _protocol_factory(reader: asyncio.StreamReader) -> Callable[[], asyncio.StreamReaderProtocol]:
    return lambda: asyncio.StreamReaderProtocol(reader)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("agent process task failed", exc_info=task.exception())
