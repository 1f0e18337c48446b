"""The one owner of the server's mutable state (:class:`Session`), as ruff's server has one: the
roots, the documents, the configuration and trust, the latest run statuses, the runs, the log,
the background tasks, and the event source the capabilities meet through.

Every capability module is built with the session and the other capabilities it uses (never
the server object, never a capability above it); the session itself knows no capability. What
it uses of pygls is the small :class:`Client` protocol, which ``server.RalphLanguageServer``
satisfies.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote

from lsprotocol import types
from pygls.progress import Progress
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import Workspace

from ralph_lsp.runner.runs import Runs
from ralph_lsp.runs.status import RunStatus
from ralph_lsp.server.config import SECTION, Config
from ralph_lsp.server.documents import DocumentStore
from ralph_lsp.server.event_source import EventSource
from ralph_lsp.server.logs import LogBatcher
from ralph_lsp.server.root_set import Key, RootSet
from ralph_lsp.settings import Settings

log = logging.getLogger(__name__)

CLIENT_TIMEOUT = 5.0  # seconds to wait for the client's answer to a request of ours


class Client(Protocol):
    """What the session uses of pygls's language server."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def protocol(self) -> LanguageServerProtocol: ...

    @property
    def work_done_progress(self) -> Progress: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...

    def window_log_message(self, params: types.LogMessageParams) -> None: ...

    def workspace_code_lens_refresh_async(self, params: None) -> Awaitable[None]: ...

    def workspace_configuration_async(
        self, params: types.ConfigurationParams
    ) -> Awaitable[Sequence[Any | None]]: ...


class Session:
    def __init__(self, client: Client, engine: Runs) -> None:
        self.client = client
        self.engine = engine  # the runs hosted here and the live runs followed (runner/runs.py)
        self.events = EventSource()
        self.config = Config(warn=self.warn)
        self.docs = DocumentStore(self._read_buffer)
        self.logs = LogBatcher(self._send_log)
        self.roots = RootSet(lambda: client.workspace, self.docs)
        self.statuses: dict[Key, RunStatus] = {}  # each change's latest run status
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._refreshing = False
        self._refresh_again = False

    # -- background tasks ----------------------------------------------------------------------

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

    # -- the client ----------------------------------------------------------------------------

    @property
    def workspace(self) -> Workspace:
        return self.client.workspace

    @property
    def position_encoding(self) -> str | None:
        return self.client.workspace.position_encoding

    def capability(self, *names: str) -> bool:
        """Whether the client declared the capability at this path (e.g. window, …)."""
        value: Any = self.client.client_capabilities
        for name in names:
            value = getattr(value, name, None)
            if value is None:
                return False
        return bool(value)

    def notify(self, method: str, params: Any) -> None:
        self.client.protocol.notify(method, params)

    def warn(self, message: str) -> None:
        """A problem the user should see in the log (e.g. a wrong-typed setting)."""
        self.logs.add(message, types.MessageType.Warning)

    def _send_log(self, level: types.MessageType, message: str) -> None:
        self.client.window_log_message(types.LogMessageParams(type=level, message=message))

    def _read_buffer(self, uri: str) -> tuple[int | None, str] | None:
        doc = self.client.workspace.text_documents.get(unquote(uri))
        if doc is None:
            return None
        return doc.version, doc.source

    def refresh_lenses(self) -> None:
        """Ask the client to re-request code lenses; at most one request in flight."""
        if self.stopping or not self.capability("workspace", "code_lens", "refresh_support"):
            return
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        self.run_task(self._refresh(), "codeLens refresh")

    async def _refresh(self) -> None:
        try:
            while True:
                self._refresh_again = False
                try:
                    await asyncio.wait_for(
                        self.client.workspace_code_lens_refresh_async(None), CLIENT_TIMEOUT
                    )
                except Exception as exc:
                    log.debug("codeLens refresh failed: %s", exc)
                if not self._refresh_again or self.stopping:
                    return
        finally:
            self._refreshing = False

    # -- state ---------------------------------------------------------------------------------

    def status_of(self, root: Path, change: str) -> RunStatus | None:
        return self.statuses.get((root, change))

    def resolve_root(self, command: str, root: str | None) -> Path:
        return self.roots.resolve(command, root)

    async def pull_settings(self, root: Path | None) -> Settings:
        """The ``ralph`` settings for ``root`` as the client has them now."""
        raw = None
        if self.capability("workspace", "configuration"):
            item = types.ConfigurationItem(
                section=SECTION, scope_uri=root.as_uri() if root is not None else None
            )
            try:
                result = await asyncio.wait_for(
                    self.client.workspace_configuration_async(
                        types.ConfigurationParams(items=[item])
                    ),
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
