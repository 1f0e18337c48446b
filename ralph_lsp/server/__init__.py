"""The pygls layer: commands, code lenses, diagnostics, file watching, progress and log (SPEC §5).

``serve()`` speaks LSP on stdio until the client says ``exit`` or closes the pipe; whichever way
it ends, no agent process of a run outlives it.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from ralph_lsp.server.features import register
from ralph_lsp.server.server import RalphLanguageServer

__all__ = ["RalphLanguageServer", "create_server", "serve"]


def create_server() -> RalphLanguageServer:
    server = RalphLanguageServer()
    register(server)
    return server


def serve() -> None:
    """Serve LSP on stdio (``ralph-lsp``, ``ralph-lsp serve``, ``python -m ralph_lsp``)."""
    server = create_server()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        # The editor gave up waiting: kill every agent tree, then go.
        server.engine.shutdown_now()
        sys.stdout.flush()
        os._exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        server.start_io()
    finally:
        # `exit`, or stdin closed without `shutdown`: the last chance to leave no agent behind.
        server.engine.shutdown_now()
        signal.signal(signal.SIGTERM, previous)
