"""A real LSP client for the benchmarks: pygls's LanguageClient with VS Code's capabilities.

It starts ``python -m ralph_lsp`` as a process, answers the requests VS Code answers
(``workspace/codeLens/refresh``, ``window/workDoneProgress/create``, ``workspace/configuration``,
``client/registerCapability``), and records every notification it receives with the
``time.perf_counter()`` of its arrival, so a benchmark can wait for "the first X after t".
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pytest_lsp import client_capabilities

from bench.common import PY, REPO, bench_env

FINAL_STATES = ("succeeded", "stuck", "exhausted", "failed", "stopped")


@dataclass
class Event:
    t: float  # time.perf_counter() on arrival
    method: str
    params: Any


def _time_of(event: Event) -> float:
    return event.t


class BenchClient(LanguageClient):
    """Records what the server sends; counts marked lines inside ``window/logMessage``."""

    def __init__(self, settings: dict[str, Any], line_marker: str = "\x00") -> None:
        super().__init__("ralph-lsp-bench", "1")
        # The v2 cases measure runs hosted by the server; bench/runner_cases.py asks for runners.
        self.settings = {"runsOutliveEditor": False, **settings}
        self.line_marker = line_marker
        self.events: list[Event] = []
        self.marked_lines = 0  # occurrences of line_marker in logMessage texts
        self.marked_arrivals: list[tuple[float, int]] = []  # (t, marked lines in that message)
        self.log_texts: collections.deque[str] = collections.deque(maxlen=200)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=400)
        self.stderr_lines: list[str] = []  # kept only when keep_stderr is set
        self.keep_stderr = False
        self._changed = asyncio.Event()
        self._stderr_task: asyncio.Task[None] | None = None
        self.pid: int | None = None
        self._register()

    # -- recording ---------------------------------------------------------------------------
    def _record(self, method: str, params: Any) -> None:
        self.events.append(Event(time.perf_counter(), method, params))
        self._changed.set()

    def _register(self) -> None:
        @self.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def code_lens_refresh(params: None) -> None:
            self._record(types.WORKSPACE_CODE_LENS_REFRESH, None)

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def progress_create(params: types.WorkDoneProgressCreateParams) -> None:
            self._record(types.WINDOW_WORK_DONE_PROGRESS_CREATE, params)

        @self.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register_capability(params: types.RegistrationParams) -> None:
            self._record(types.CLIENT_REGISTER_CAPABILITY, params)

        @self.feature(types.CLIENT_UNREGISTER_CAPABILITY)
        def unregister_capability(params: types.UnregistrationParams) -> None:
            self._record(types.CLIENT_UNREGISTER_CAPABILITY, params)

        @self.feature(types.WORKSPACE_CONFIGURATION)
        def configuration(params: types.ConfigurationParams) -> list[Any]:
            self._record(types.WORKSPACE_CONFIGURATION, params)
            out: list[Any] = []
            for item in params.items:
                if item.section == "ralph":
                    out.append(self.settings)
                elif item.section in (None, ""):
                    out.append({"ralph": self.settings})
                elif item.section.startswith("ralph."):
                    out.append(self.settings.get(item.section[len("ralph.") :]))
                else:
                    out.append(None)
            return out

        @self.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def show_message_request(params: types.ShowMessageRequestParams) -> None:
            self._record(types.WINDOW_SHOW_MESSAGE_REQUEST, params)

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(params: types.LogMessageParams) -> None:
            text = params.message
            marked = text.count(self.line_marker)
            if marked:
                self.marked_lines += marked
                self.marked_arrivals.append((time.perf_counter(), marked))
                self._changed.set()
            else:
                self.log_texts.append(text)
                self._record(types.WINDOW_LOG_MESSAGE, text)

        for method in (
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
            types.WINDOW_SHOW_MESSAGE,
            types.PROGRESS,
            "ralph/runStatus",
        ):
            self.feature(method)(self._recorder(method))

    def _recorder(self, method: str) -> Callable[[Any], None]:
        def handler(params: Any) -> None:
            self._record(method, params)

        return handler

    # -- waiting -----------------------------------------------------------------------------
    async def wait_for(
        self, predicate: Callable[[Event], bool], *, since: float = 0.0, timeout: float = 10.0
    ) -> Event | None:
        """The first recorded event at or after ``since`` that satisfies ``predicate``.

        The events are recorded in the order of their times, so the search starts at the
        first one at or after ``since``: scanning from the first event of the session took the
        client 4 ms per call with the 30,000 events of 10,000 changes, and an edit's two calls
        delayed the reading of the answer they waited for by that much."""
        deadline = time.perf_counter() + timeout
        checked = bisect.bisect_left(self.events, since, key=_time_of)
        while True:
            events = self.events
            for i in range(checked, len(events)):
                ev = events[i]
                if ev.t >= since and predicate(ev):
                    return ev
            checked = len(events)
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return None
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``condition()`` holds, re-checking whenever something arrives."""
        deadline = time.perf_counter() + timeout
        while not condition():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return False
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.25))
        return True

    async def quiet(self, gap: float, timeout: float) -> bool:
        """Wait until nothing has arrived for ``gap`` seconds (at most ``timeout``)."""
        start = time.perf_counter()
        deadline = start + timeout
        while time.perf_counter() < deadline:
            last = max(
                start,
                self.events[-1].t if self.events else 0.0,
                self.marked_arrivals[-1][0] if self.marked_arrivals else 0.0,
            )
            idle = time.perf_counter() - last
            if idle >= gap:
                return True
            await asyncio.sleep(gap - idle)
        return False

    async def wait_final_status(
        self, change: str, *, since: float, timeout: float
    ) -> dict[str, Any] | None:
        ev = await self.wait_for(
            lambda e: (
                e.method == "ralph/runStatus"
                and _get(e.params, "change") == change
                and _get(e.params, "state") in FINAL_STATES
            ),
            since=since,
            timeout=timeout,
        )
        return None if ev is None else _as_dict(ev.params)

    # -- requests ----------------------------------------------------------------------------
    async def command(self, name: str, argument: dict[str, Any], timeout: float = 60.0) -> Any:
        params = types.ExecuteCommandParams(command=name, arguments=[argument])
        return await asyncio.wait_for(self.workspace_execute_command_async(params), timeout)

    async def code_lens(self, uri: str, timeout: float = 30.0) -> Any:
        params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        return await asyncio.wait_for(self.text_document_code_lens_async(params), timeout)

    async def probe(
        self,
        request: Callable[[], Awaitable[Any]],
        stop: asyncio.Event,
        out: list[tuple[float, float]],
        gap: float,
    ) -> None:
        """Send ``request()`` one at a time, ``gap`` seconds apart, until ``stop`` is set;
        append (sent at, milliseconds to the answer) to ``out``."""
        while not stop.is_set():
            t0 = time.perf_counter()
            await request()
            out.append((t0, (time.perf_counter() - t0) * 1000))
            await asyncio.sleep(gap)

    def open_document(self, path: Path) -> str:
        uri = path.as_uri()
        self.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri,
                    language_id="markdown",
                    version=1,
                    text=path.read_bytes().decode("utf-8", "replace"),
                )
            )
        )
        return uri

    # -- process -----------------------------------------------------------------------------
    async def start_server(
        self,
        env: dict[str, str],
        extra_args: tuple[str, ...] = (),
        prefix: tuple[str, ...] = (),
    ) -> None:
        """Start ``python -m ralph_lsp``; ``prefix`` is a command that ends by exec'ing it
        (``self.pid`` is then the server's pid)."""
        argv = (*prefix, PY, *extra_args, "-m", "ralph_lsp")
        await self.start_io(argv[0], *argv[1:], env=env, cwd=str(REPO))
        assert self._server is not None
        self.pid = self._server.pid
        self._stderr_task = asyncio.create_task(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        assert self._server is not None and self._server.stderr is not None
        while True:
            line = await self._server.stderr.readline()
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\n")
            self.stderr_tail.append(text)
            if self.keep_stderr:
                self.stderr_lines.append(text)

    async def initialize(
        self, root: Path, init_options: dict[str, Any] | None = None
    ) -> types.InitializeResult:
        uri = root.as_uri()
        options = {"trusted": True, "ralph": self.settings}
        options.update(init_options or {})
        result = await asyncio.wait_for(
            self.initialize_async(
                types.InitializeParams(
                    process_id=os.getpid(),
                    root_uri=uri,
                    root_path=str(root),
                    workspace_folders=[types.WorkspaceFolder(uri=uri, name=root.name)],
                    capabilities=client_capabilities("visual-studio-code"),
                    client_info=types.ClientInfo(name="Visual Studio Code", version="1.95.0"),
                    initialization_options=options,
                )
            ),
            60,
        )
        self.initialized(types.InitializedParams())
        return result

    async def close(self) -> None:
        """shutdown + exit, then make sure the server process is gone."""
        server = self._server
        if server is not None and server.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.shutdown_async(None), 10)
            with contextlib.suppress(Exception):
                self.exit(None)
            try:
                await asyncio.wait_for(server.wait(), 10)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(server.pid, signal.SIGKILL)
                await server.wait()
        self._stop_event.set()
        for task in self._async_tasks:
            task.cancel()
        if self._stderr_task is not None:
            self._stderr_task.cancel()
        await asyncio.gather(*self._async_tasks, return_exceptions=True)

    def describe_failure(self) -> str:
        tail = "\n".join(list(self.stderr_tail)[-25:])
        logs = "\n".join(list(self.log_texts)[-10:])
        return f"server stderr (last lines):\n{tail}\nlast log messages:\n{logs}"


@contextlib.asynccontextmanager
async def session(
    root: Path,
    settings: dict[str, Any] | None = None,
    *,
    env: dict[str, str] | None = None,
    line_marker: str = "\x00",
    prefix: tuple[str, ...] = (),
) -> AsyncIterator[BenchClient]:
    """A started and initialized server over the OpenSpec project ``root``."""
    client = BenchClient(settings or {}, line_marker)
    await client.start_server(env or bench_env(), prefix=prefix)
    try:
        await client.initialize(root)
        yield client
    finally:
        await client.close()


def _get(params: Any, key: str) -> Any:
    if isinstance(params, dict):
        return params.get(key)
    return getattr(params, key, None)


def _as_dict(params: Any) -> dict[str, Any]:
    if isinstance(params, dict):
        return params
    if hasattr(params, "_asdict"):  # pygls gives custom notifications' params as namedtuples
        return dict(params._asdict())
    return {k: v for k, v in vars(params).items() if not k.startswith("_")}
