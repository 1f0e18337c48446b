"""The server object: it owns the engine, the documents and the settings, and wires the parts
that do the work, each in a module of its own (as esbonio gives each capability a feature):

- ``roots.Roots``: the OpenSpec roots, their watchers, the root a command names;
- ``editing.Editing``: the client's documents and the agent's edits on disk;
- ``publishing.Publisher``: diagnostics and code lenses;
- ``conformance_view.ConformanceView``: the scenario lenses and diagnostics of delta specs;
- ``feed.RunFeed``: the engine's events as progress, ``ralph/runStatus`` and log lines;
- ``lifetime.Lifetime``: shutdown, exit and a closed pipe, leaving no agent behind.

Handlers (``features.py``, ``commands.py``) stay thin and call into these; the decisions about
runs are the engine's, the meaning of tasks.md the domain's. This layer only translates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer

from ralph_lsp import __version__
from ralph_lsp.bursts import collect_frozen
from ralph_lsp.runner.host import HostedEngine, Sink
from ralph_lsp.runner.runs import Runs
from ralph_lsp.runs.service import RunService
from ralph_lsp.runs.status import RunStatus
from ralph_lsp.server.config import SECTION, Config
from ralph_lsp.server.conformance_view import ConformanceView
from ralph_lsp.server.diagnostics import Sent
from ralph_lsp.server.documents import DocumentStore
from ralph_lsp.server.editing import Editing
from ralph_lsp.server.errors import CommandError
from ralph_lsp.server.feed import RunFeed
from ralph_lsp.server.lifetime import CLIENT_TIMEOUT, Lifetime
from ralph_lsp.server.logs import LogBatcher, LspLogHandler
from ralph_lsp.server.protocol import RalphProtocol
from ralph_lsp.server.publishing import Publisher
from ralph_lsp.server.queues import Queues
from ralph_lsp.server.roots import Roots
from ralph_lsp.server.validation import Validation
from ralph_lsp.settings import Settings

if TYPE_CHECKING:
    from ralph_lsp.loop.engine import Engine
    from ralph_lsp.remote.ray_runs import RayRuns

log = logging.getLogger(__name__)


def _drivers(engine: Engine, runs: Runs, ray: RayRuns) -> tuple[RunService, ...]:
    """Never called: mypy checks here that each of the three drivers of runs is a
    :class:`RunService` (an engine in this process, runners of their own, Ray jobs)."""
    return engine, runs, ray


def _ray_engine(sink: Sink) -> HostedEngine:
    """A run on Ray hosted in this server (``runsOutliveEditor: false``); Ray and the remote
    package are imported only then."""
    from ralph_lsp.remote.ray_runs import RayRuns

    return RayRuns(sink)


#: After ``initialize``, when the imports' garbage is collected (the first statuses, lenses
#: and diagnostics of the start are out by then).
STARTUP_GARBAGE_SECONDS = 2.0


class RalphLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("ralph-lsp", __version__, protocol_cls=RalphProtocol)
        self.feed = RunFeed(self)
        # Runs hosted here or in runners of their own, and live runs attached to (SPEC §9).
        self.engine = Runs(on_event=self.feed.on_engine_event, remote_engine=_ray_engine)
        self.queues = Queues(self)
        self.config = Config(warn=self.warn)
        self.docs = DocumentStore(self._read_buffer)
        self.logs = LogBatcher(self._send_log)
        self.roots = Roots(self)
        self.editing = Editing(self)
        sent = Sent(self.text_document_publish_diagnostics)  # one cache for every file's
        self.publisher = Publisher(self, sent)
        self.validation = Validation(self, sent)
        self.conformance = ConformanceView(self)
        self.lifetime = Lifetime(self)
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._log_handler: LspLogHandler | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._attaching = asyncio.Lock()
        self._attached_roots: list[Path] = []  # the roots searched for live runs at initialize

    # -- plumbing ------------------------------------------------------------------------------

    def run_task(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background, keeping a reference and logging its failure."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("%s failed: %r", task.get_name(), exc, exc_info=exc)

    def warn(self, message: str) -> None:
        """A problem the user should see in the log (e.g. a wrong-typed setting)."""
        self.logs.add(message, types.MessageType.Warning)

    def _send_log(self, level: types.MessageType, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=level, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        # A request's error is already its answer. Any other stray error goes to the log,
        # not (as pygls would do) into a message box.
        if source is FeatureRequestError or isinstance(error, CommandError):
            return
        log.warning("%s", error)

    def _read_buffer(self, uri: str) -> tuple[int | None, str] | None:
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is None:
            return None
        return doc.version, doc.source

    def capability(self, *names: str) -> bool:
        """Whether the client declared the capability at this path (e.g. window, …)."""
        value: Any = self.client_capabilities
        for name in names:
            value = getattr(value, name, None)
            if value is None:
                return False
        return bool(value)

    def status_of(self, root: Path, change: str) -> RunStatus | None:
        return self.feed.status_of(root, change)

    # -- lifetime ------------------------------------------------------------------------------

    def on_initialize(self, params: types.InitializeParams) -> None:
        self.loop = asyncio.get_running_loop()
        self.logs.bind(self.loop)
        if self._log_handler is None:
            self._log_handler = LspLogHandler(self.logs)
            root_logger = logging.getLogger()
            root_logger.addHandler(self._log_handler)
            root_logger.setLevel(logging.WARNING)
        self.config.from_initialization_options(params.initialization_options)
        self.config.settings()  # report wrong-typed settings now, once
        # Live runs are found and followed from here, not from `initialized`: their first
        # statuses go out as soon as LSP allows. Nothing is sent before the answer to
        # `initialize`: this handler is synchronous, and pygls writes the answer as soon as it
        # returns, before the loop runs the task (tests/runner/test_server_attach.py holds it).
        self._attached_roots = self.roots.find()
        self.run_task(self.attach_all(self._attached_roots), "attach to live runs and queues")
        # The garbage the imports made, kept out of the start (ralph_lsp/bursts.py), collected
        # once the start is over: one full collection, a few tens of ms.
        self.loop.call_later(STARTUP_GARBAGE_SECONDS, collect_frozen)

    async def attach_all(self, roots: list[Path]) -> None:
        """Follow the live runs, then the live queues, of ``roots`` (one search at a time, so
        that a run is never followed twice)."""
        async with self._attaching:
            await self.engine.attach_all(roots)
            await self.queues.attach_all(roots)

    async def on_initialized(self) -> None:
        self.roots.update()
        if self.roots.roots != self._attached_roots:  # not found as `initialize` arrived
            self.run_task(self.attach_all(self.roots.roots), "attach to live runs and queues")
        if self.capability("workspace", "configuration"):
            await self.pull_settings(None)
            self.validation.refresh_all()  # with ralph.validation.strict as the client has it
            self.conformance.settings_changed()  # ralph.conformance.testGlobs likewise

    @property
    def shutdown_requested(self) -> bool:
        return self.lifetime.shutdown_requested

    def on_stdin_eof(self) -> None:
        self.lifetime.on_stdin_eof()

    def shutdown(self) -> None:
        """Called by pygls when its loop has ended. Unlike pygls's own, it does not wait for the
        thread that reads stdin: after ``exit`` that read may never return. (pygls has no public
        way to say so: its stop event and thread pool are reached directly.)"""
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)

    # -- settings ------------------------------------------------------------------------------

    async def pull_settings(self, root: Path | None) -> Settings:
        """The ``ralph`` settings for ``root`` as the client has them now."""
        raw = None
        if self.capability("workspace", "configuration"):
            item = types.ConfigurationItem(
                section=SECTION, scope_uri=root.as_uri() if root is not None else None
            )
            try:
                result = await asyncio.wait_for(
                    self.workspace_configuration_async(types.ConfigurationParams(items=[item])),
                    CLIENT_TIMEOUT,
                )
            except Exception as exc:
                log.warning("reading the ralph settings from the client failed: %s", exc)
            else:
                if result:
                    raw = self.config.from_pull(result[0])
                    if raw is not None and root is None:
                        self.config.raw = raw
        return self.config.settings(raw)

    async def on_settings_pushed(self, settings: Any) -> None:
        if self.config.from_did_change(settings):
            self.config.settings()
        else:
            await self.pull_settings(None)
        self.validation.refresh_all()  # ralph.validation.strict may have changed
        self.conformance.settings_changed()  # and ralph.conformance.testGlobs

    def resolve_root(self, command: str, root: str | None) -> Path:
        return self.roots.resolve(command, root)
