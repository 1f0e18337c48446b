"""End-to-end helpers: a real pytest-lsp client talking to a real ``python -m ralph_lsp`` process.

Every session gets VS Code's client capabilities (code lens refresh, work-done progress), answers
``workspace/codeLens/refresh`` and records ``ralph/runStatus``. Tests poll what was recorded with
a deadline instead of waiting for one notification, and every server process is gone when the
test ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import copy_example

CHANGE = "add-greeting-cli"
SERVER = [sys.executable, "-m", "ralph_lsp"]

# The client profiles a session can take: VS Code's capabilities, or a minimal client with no
# workspace/configuration, no codeLens/refresh and no work-done progress (as some editors'
# clients are), which gets its settings from initializationOptions and didChangeConfiguration.
PROFILES = ("visual-studio-code", "minimal")


def profile_capabilities(profile: str) -> types.ClientCapabilities:
    if profile == "minimal":
        return types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
                code_lens=types.CodeLensClientCapabilities(),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(),
            ),
        )
    return client_capabilities(profile)


@pytest.fixture
def client_profile(request: pytest.FixtureRequest) -> str:
    """VS Code's profile, unless a test module parametrizes it (``indirect=True``)."""
    return str(getattr(request, "param", "visual-studio-code"))


def plain(value: Any) -> Any:
    """A custom notification's params (pygls makes namedtuples of them) as plain JSON values."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def wait_until(
    predicate: Callable[[], Any], *, timeout: float = 10.0, what: str = "condition"
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


class Session:
    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.refreshes: list[float] = []
        self.statuses: list[dict[str, Any]] = []
        # Every notification in arrival order, for ordering checks: (method, params).
        self.timeline: list[tuple[str, Any]] = []
        # Every message from the server in arrival order, from before `initialize` on: its
        # method, or "response" for an answer to one of the client's requests.
        self.arrivals: list[str] = []

    @property
    def tasks_md(self) -> Path:
        return self.root / "openspec" / "changes" / CHANGE / "tasks.md"

    @property
    def tasks_uri(self) -> str:
        return self.tasks_md.as_uri()

    async def command(self, name: str, *arguments: Any) -> Any:
        params = types.ExecuteCommandParams(
            command=name, arguments=list(arguments) if arguments else None
        )
        return await self.client.workspace_execute_command_async(params)

    async def command_raw(self, name: str, arguments: list[Any] | None) -> Any:
        params = types.ExecuteCommandParams(command=name, arguments=arguments)
        return await self.client.workspace_execute_command_async(params)

    async def lenses(self, uri: str | None = None) -> list[tuple[int, str, str, Any]]:
        result = await self.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri or self.tasks_uri))
        )
        out = []
        for lens in result or []:
            assert lens.command is not None
            args = plain(lens.command.arguments) if lens.command.arguments else None
            out.append((lens.range.start.line, lens.command.title, lens.command.command, args))
        return sorted(out, key=lambda t: t[0])

    def diagnostics(self, uri: str | None = None) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(uri or self.tasks_uri, []))

    def logs(self) -> str:
        return "\n".join(m.message for m in self.client.log_messages)

    def open(self, text: str, version: int = 1) -> None:
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(
                    uri=self.tasks_uri, language_id="markdown", version=version, text=text
                )
            )
        )

    def edit(self, text: str, version: int) -> None:
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=self.tasks_uri, version=version
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def close(self) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(self.tasks_uri))
        )

    @property
    def process(self) -> asyncio.subprocess.Process:
        server = self.client._server
        assert server is not None
        return server


StartSession = Callable[..., Awaitable[Session]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A scratch copy of examples/hello (never the example itself)."""
    root = tmp_path / "hello"
    copy_example(root)
    return root


@pytest.fixture
async def start_session(client_profile: str) -> AsyncIterator[StartSession]:
    """``await start_session(root, init=..., settings=..., env=...)`` → an initialized Session."""
    sessions: list[Session] = []

    async def start(
        root: Path,
        *,
        init: Any = None,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        folders: list[Path] | None = None,
        capabilities: types.ClientCapabilities | None = None,
    ) -> Session:
        config = ClientServerConfig(
            server_command=SERVER,
            server_env={
                **os.environ,
                "RALPH_DEMO_DELAY": "0.05",
                "PYTHONFAULTHANDLER": "1",  # SIGABRT dumps every thread's stack (see exited())
                **(env or {}),
            },
        )
        client = await config.start()
        session = Session(client, root)
        sessions.append(session)

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def refresh(params: None) -> None:
            session.refreshes.append(time.monotonic())
            session.timeline.append((types.WORKSPACE_CODE_LENS_REFRESH, None))

        @client.feature("ralph/runStatus")
        def run_status(params: Any) -> None:
            status = plain(params)
            session.statuses.append(status)
            session.timeline.append(("ralph/runStatus", status))

        original_progress = client.protocol.fm.features[types.PROGRESS]

        def progress(params: types.ProgressParams) -> None:
            original_progress(params)
            session.timeline.append((types.PROGRESS, params))

        client.protocol.fm.features[types.PROGRESS] = progress

        original_handle = client.protocol.handle_message

        def handle_message(message: Any) -> None:
            session.arrivals.append(getattr(message, "method", None) or "response")
            original_handle(message)

        client.protocol.handle_message = handle_message  # type: ignore[method-assign]

        # v2's runs, hosted by the server and ended with it, unless a test asks for runners
        # (SPEC §9; tests/runner covers ralph.runsOutliveEditor's default, true).
        settings = {"runsOutliveEditor": False, **(settings or {})}
        client.set_configuration(settings, section="ralph")
        folders = [root] if folders is None else folders
        if client_profile == "minimal" and init is None:
            init = settings  # a client that cannot be asked: its settings come with initialize
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities or profile_capabilities(client_profile),
                workspace_folders=[
                    types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders
                ],
                initialization_options=init,
            )
        )
        if session.tasks_md.parent.is_dir():
            # The server publishes every change's diagnostics once it knows its roots.
            await wait_until(
                lambda: session.tasks_uri in client.diagnostics, what="the first diagnostics"
            )
        return session

    yield start

    for session in sessions:
        await _end(session)


async def _end(session: Session) -> None:
    client = session.client
    server = client._server
    if server is not None and server.returncode is None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 15)
    if server is not None and server.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            server.kill()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.stop(), 10)


async def exited(session: Session, timeout: float = 10) -> int:
    """The server's exit code; on a hang, its threads' stacks go to stderr before failing."""
    try:
        return await asyncio.wait_for(session.process.wait(), timeout)
    except asyncio.TimeoutError:
        session.process.send_signal(signal.SIGABRT)
        await asyncio.sleep(1)
        raise AssertionError(f"the server did not exit within {timeout}s") from None


def pid_alive(pid: int) -> bool:
    """True while ``pid`` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")
