"""Wiring LSP methods and commands to the server, once. Each handler is a line or two."""

# No `from __future__ import annotations` here: pygls reads the handlers' annotations at run
# time to decide whether to pass the server in, and must find real objects.

import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types

from ralph_lsp.openspec.workspace import UnknownChangeError
from ralph_lsp.runs.status import EngineError
from ralph_lsp.server import authoring
from ralph_lsp.server.args import one_object
from ralph_lsp.server.commands import Handler, commands
from ralph_lsp.server.errors import CommandError, RequestFailed
from ralph_lsp.server.render import NOOP
from ralph_lsp.server.server import RalphLanguageServer

log = logging.getLogger(__name__)


def _register_command(server: RalphLanguageServer, name: str, handler: Handler) -> None:
    # pygls unpacks the arguments into positional parameters and ignores defaults; taking
    # them as *args lets a palette call with none, or a malformed call, get a clear answer.
    async def command(ls: RalphLanguageServer, *arguments: Any) -> dict[str, Any]:
        obj = one_object(name, arguments)
        try:
            return await handler(server.session, obj)
        except CommandError:
            raise
        except (UnknownChangeError, EngineError) as exc:
            raise RequestFailed(str(exc)) from None
        except Exception as exc:
            log.exception("%s failed", name)
            raise RequestFailed(
                f"{name} failed: {exc!r}; this is a bug in ralph-lsp (details in its log)"
            ) from None

    command.__name__ = name.replace(".", "_")
    server.command(name)(command)


DocumentParams = (
    types.DidOpenTextDocumentParams
    | types.DidChangeTextDocumentParams
    | types.DidSaveTextDocumentParams
    | types.DidCloseTextDocumentParams
)


def _register_document_event(
    server: RalphLanguageServer, method: str, handle: Callable[[str], None]
) -> None:
    def notified(params: DocumentParams) -> None:
        handle(params.text_document.uri)

    notified.__name__ = method.replace("/", "_")
    server.feature(method)(notified)


def register(server: RalphLanguageServer) -> None:
    for name, handler in commands(server.queues).items():
        _register_command(server, name, handler)

    # The command of display-only lenses (story and task status): running it, in any client,
    # does nothing and reports no error.
    @server.command(NOOP)
    async def noop(ls: RalphLanguageServer, *arguments: Any) -> dict[str, Any]:
        return {}

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.on_initialize(params)

    @server.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        await server.on_initialized()

    @server.feature(types.SHUTDOWN)
    async def shutdown(params: None) -> None:
        await server.lifetime.on_shutdown()

    @server.feature(types.EXIT)
    async def exit_(params: None) -> None:
        await server.lifetime.on_exit()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        await server.on_settings_pushed(params.settings)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        server.on_folders_changed()

    # The text-document notifications: each hands the document's URI to the editing tracker.
    for method, on_document in (
        (types.TEXT_DOCUMENT_DID_OPEN, server.editing.on_open),
        (types.TEXT_DOCUMENT_DID_CHANGE, server.editing.on_edit),
        (types.TEXT_DOCUMENT_DID_SAVE, server.editing.on_save),
        (types.TEXT_DOCUMENT_DID_CLOSE, server.editing.on_close),
    ):
        _register_document_event(server, method, on_document)

    authoring.register(server)  # symbols, completion, definition, hover, code actions

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(params: types.CodeLensParams) -> list[types.CodeLens]:
        return server.publisher.code_lenses(params.text_document.uri)
