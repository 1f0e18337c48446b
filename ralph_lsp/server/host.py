"""The server as its parts see it: a small typed interface, so that no part imports the module
that builds them (``server.py`` imports every part; every part imports only this).

The parts (``roots``, ``editing``, ``publishing``, ``feed``, ``lifetime``) and the handlers
(``commands``, ``git_commands``) take a :class:`Host`. ``RalphLanguageServer`` is the one
implementation; mypy checks that it satisfies the protocol where it hands itself to its parts.
The parts' own classes appear here only as types (under ``TYPE_CHECKING``), so the import
linter sees no cycle (``exclude_type_checking_imports`` in ``pyproject.toml``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lsprotocol import types
    from pygls.progress import Progress
    from pygls.protocol import LanguageServerProtocol
    from pygls.workspace import Workspace

    from ralph_lsp.runner.runs import Runs
    from ralph_lsp.runs.status import RunStatus
    from ralph_lsp.server.config import Config
    from ralph_lsp.server.conformance_view import ConformanceView
    from ralph_lsp.server.documents import DocumentStore
    from ralph_lsp.server.editing import Editing
    from ralph_lsp.server.feed import RunFeed
    from ralph_lsp.server.logs import LogBatcher
    from ralph_lsp.server.publishing import Publisher
    from ralph_lsp.server.queues import Queues
    from ralph_lsp.server.roots import Roots
    from ralph_lsp.server.validation import Validation
    from ralph_lsp.settings import Settings


class Host(Protocol):
    """What the server's parts and handlers may use of the server."""

    engine: Runs  # the runs hosted here and the live runs followed (runner/runs.py)
    config: Config
    docs: DocumentStore
    logs: LogBatcher
    roots: Roots
    editing: Editing
    publisher: Publisher
    validation: Validation  # OpenSpec diagnostics (SPEC §11)
    conformance: ConformanceView  # the scenario lenses and diagnostics (SPEC §13)
    feed: RunFeed
    queues: Queues
    stopping: bool
    loop: asyncio.AbstractEventLoop | None

    # -- what pygls provides -------------------------------------------------------------------

    @property
    def workspace(self) -> Workspace: ...

    @property
    def protocol(self) -> LanguageServerProtocol: ...

    @property
    def work_done_progress(self) -> Progress: ...

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...

    def workspace_code_lens_refresh_async(self, params: None) -> Awaitable[None]: ...

    # -- what the server adds ------------------------------------------------------------------

    def run_task(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]: ...
    async def attach_all(self, roots: list[Path]) -> None: ...

    def warn(self, message: str) -> None: ...

    def capability(self, *names: str) -> bool: ...

    def status_of(self, root: Path, change: str) -> RunStatus | None: ...

    async def pull_settings(self, root: Path | None) -> Settings: ...

    def resolve_root(self, command: str, root: str | None) -> Path: ...
