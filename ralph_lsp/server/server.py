"""The server object: pygls's language server, the :class:`~ralph_lsp.server.session.Session`
that owns the state, and the capabilities built with what each uses, in this order (each gets
only those before it; they meet otherwise through the session's events):

- ``feed.RunFeed``: the engine's events as progress, ``ralph/runStatus`` and log lines;
- ``queues.Queues``: queues, and ``ralph.onRunEnd`` as a run or a queue ends;
- ``conformance_view.ConformanceView``: the scenario lenses and diagnostics of delta specs;
- ``publishing.Publisher``: tasks.md's diagnostics and every code lens;
- ``validation.Validation``: OpenSpec's diagnostics;
- ``roots.RootWatch``: the OpenSpec roots watched;
- ``editing.Editing``: the client's documents and the agent's edits on disk;
- ``lifetime.Lifetime``: shutdown, exit and a closed pipe, leaving no agent behind.

Handlers (``features.py``, ``commands.py``) stay thin and call into these; the decisions about
runs are the engine's, the meaning of tasks.md the domain's. This layer only translates.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer

from ralph_lsp import __version__
from ralph_lsp.bursts import collect_frozen
from ralph_lsp.runner.host import HostedEngine, Sink
from ralph_lsp.runner.runs import Runs
from ralph_lsp.runs.service import RunService
from ralph_lsp.runs.status import EngineEvent
from ralph_lsp.server import conformance_view, publishing, validation
from ralph_lsp.server.conformance_view import ConformanceView
from ralph_lsp.server.diagnostics import DiagnosticsStore, Sent
from ralph_lsp.server.editing import Editing
from ralph_lsp.server.errors import CommandError
from ralph_lsp.server.feed import RunFeed
from ralph_lsp.server.lifetime import Lifetime
from ralph_lsp.server.logs import LspLogHandler
from ralph_lsp.server.protocol import RalphProtocol
from ralph_lsp.server.publishing import Publisher
from ralph_lsp.server.queues import Queues
from ralph_lsp.server.roots import RootWatch
from ralph_lsp.server.session import Session
from ralph_lsp.server.validation import Validation

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
        # Runs hosted here or in runners of their own, and live runs attached to (SPEC §9).
        self.engine = Runs(on_event=self._engine_event, remote_engine=_ray_engine)
        self.session = session = Session(self, self.engine)
        # tasks.md's own diagnostics, then OpenSpec's findings, then a scenario's: one list
        store = DiagnosticsStore(
            Sent(self.text_document_publish_diagnostics),
            session.docs.uri_for,
            order=(publishing.SOURCE, validation.SOURCE, conformance_view.SOURCE_NAME),
        )
        self.feed = RunFeed(session)
        self.queues = Queues(session)
        self.conformance = ConformanceView(session, store)
        self.publisher = Publisher(session, store, self.conformance)
        self.validation = Validation(session, store, self.publisher, self.conformance)
        self.watch = RootWatch(session, self.publisher, self.validation)
        self.editing = Editing(
            session, self.watch, self.publisher, self.validation, self.conformance
        )
        self.lifetime = Lifetime(session, self.watch, self.feed)
        self._log_handler: LspLogHandler | None = None
        self._attaching = asyncio.Lock()
        self._attached_roots: list[Path] = []  # the roots searched for live runs at initialize

    def _engine_event(self, event: EngineEvent) -> None:
        self.feed.on_engine_event(event)

    def report_server_error(self, error: Exception, source: Any) -> None:
        # A request's error is already its answer. Any other stray error goes to the log,
        # not (as pygls would do) into a message box.
        if source is FeatureRequestError or isinstance(error, CommandError):
            return
        log.warning("%s", error)

    # -- lifetime ------------------------------------------------------------------------------

    def on_initialize(self, params: types.InitializeParams) -> None:
        session = self.session
        session.loop = loop = asyncio.get_running_loop()
        session.logs.bind(loop)
        if self._log_handler is None:
            self._log_handler = LspLogHandler(session.logs)
            root_logger = logging.getLogger()
            root_logger.addHandler(self._log_handler)
            root_logger.setLevel(logging.WARNING)
        session.config.from_initialization_options(params.initialization_options)
        session.config.settings()  # report wrong-typed settings now, once
        # Live runs are found and followed from here, not from `initialized`: their first
        # statuses go out as soon as LSP allows. Nothing is sent before the answer to
        # `initialize`: this handler is synchronous, and pygls writes the answer as soon as it
        # returns, before the loop runs the task (tests/runner/test_server_attach.py holds it).
        self._attached_roots = session.roots.find()
        session.run_task(self.attach_all(self._attached_roots), "attach to live runs and queues")
        # The garbage the imports made, kept out of the start (ralph_lsp/bursts.py), collected
        # once the start is over: one full collection, a few tens of ms.
        loop.call_later(STARTUP_GARBAGE_SECONDS, collect_frozen)

    async def attach_all(self, roots: list[Path]) -> None:
        """Follow the live runs, then the live queues, of ``roots`` (one search at a time, so
        that a run is never followed twice)."""
        async with self._attaching:
            await self.engine.attach_all(roots)
            await self.queues.attach_all(roots)

    async def on_initialized(self) -> None:
        session = self.session
        self.watch.update()
        if session.roots.roots != self._attached_roots:  # not found as `initialize` arrived
            roots = session.roots.roots
            session.run_task(self.attach_all(roots), "attach to live runs and queues")
        if session.capability("workspace", "configuration"):
            await session.pull_settings(None)
            self.validation.refresh_all()  # with ralph.validation.strict as the client has it
            self.conformance.settings_changed()  # ralph.conformance.testGlobs likewise

    def on_folders_changed(self) -> None:
        self.watch.update()
        roots = self.session.roots.roots
        self.session.run_task(self.attach_all(roots), "attach to live runs and queues")

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

    async def on_settings_pushed(self, settings: Any) -> None:
        config = self.session.config
        if config.from_did_change(settings):
            config.settings()
        else:
            await self.session.pull_settings(None)
        self.validation.refresh_all()  # ralph.validation.strict may have changed
        self.conformance.settings_changed()  # and ralph.conformance.testGlobs
