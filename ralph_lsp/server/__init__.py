"""The pygls layer: commands, code lenses, diagnostics, file watching, progress and log (SPEC §5).

``serve()`` speaks LSP on stdio until the client says ``exit`` or closes the pipe; whichever way
it ends, no agent process of a run outlives it.

- ``server``        the server object (:class:`RalphLanguageServer`): pygls's server, which
  builds the session and each capability with the parts it uses (the order is its docstring's)
- ``session``       the one owner of the state (:class:`~ralph_lsp.server.session.Session`):
  roots, documents, configuration and trust, the latest statuses, the runs, the log, the
  background tasks; ``root_set`` which roots there are and the root a command names
- ``event_source``  the closed set of events the capabilities meet through (tasks changed, spec
  files changed, changes moved, run status), and their source
- ``features``      LSP methods and commands wired to it, once (each handler a line or two)
- ``commands``, ``git_commands``  the ``ralph.*`` commands; ``args`` checks their argument
- ``queues``        queues (SPEC §9): ``ralph.run`` with ``changes``, ``ralph.stopQueue``,
  ``ralph.queues``, ``ralph/queueStatus``, and a queue's ``ralph.onRunEnd`` when it ends
- ``merge_commands``  ``ralph.reviewRun``, ``ralph.mergeRun`` and ``ralph.mergeAll`` (SPEC §12)
  over ``merging``
- ``roots``         the OpenSpec roots watched, their changes on disk told as events
- ``editing``       the client's documents and the agent's edits on disk
- ``publishing``    diagnostics and code lenses, published; ``render`` computes them (pure);
  ``sweep`` its pass over every change, and validation's over every item, in slices of the loop
- ``diagnostics``   the one store of every file's diagnostics, by (source, file), with one
  cache of what each file was last sent
- ``documents``     tasks.md now: the open buffer, else the disk (cached by stat / version)
- ``feed``, ``run_progress``  the engine's events as progress, ``ralph/runStatus`` and log lines
- ``worktree_view`` lenses of a change whose run works in a worktree
- ``watching/``   each root's ``openspec/`` watched once, for tasks.md edits and for validation
  (inotify, polling past the watch limit, watchfiles where inotify cannot be had)
- ``validation``    OpenSpec diagnostics (SPEC §11), live on edits and on disk
- ``conformance_view``  a lens above every scenario of a delta spec, a diagnostic on each one no
  test names (SPEC §13), following the test files (a ``watching`` tree) and the runs' verifications
- ``authoring``     OpenSpec symbols, completion, definition, hover and quick fixes
- ``archive``, ``planning``  archive in the editor; planning (SPEC §14): ``ralph.planChange``
  and a planned change's Approve / Revise… / Discard lenses
- ``lifetime``      shutdown, exit and a closed pipe, leaving no agent behind
- ``logs``          batched ``window/logMessage``, and Python logging forwarded to it
- ``config``        settings and workspace trust from the client; ``errors`` the JSON-RPC errors
- ``protocol``      pygls's protocol with the server's own hygiene
- ``__main__``      ``python -m ralph_lsp.server``: an unsupported platform refused, then
  ``serve()``

Invariant: only this package imports pygls or lsprotocol, and it holds no decision about runs or
tasks.md that the CLI lacks: it translates between LSP and the domain (``make lint`` holds the
imports).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import BinaryIO, cast

from ralph_lsp.proc.inspection import unsupported_platform
from ralph_lsp.runs import durable
from ralph_lsp.server.features import register
from ralph_lsp.server.server import RalphLanguageServer

__all__ = ["RalphLanguageServer", "create_server", "serve"]


class EofGuard:
    """stdin for pygls that calls ``on_eof`` (from pygls's reader thread) before reporting EOF.

    When the editor closes the pipe without ``shutdown``, pygls returns from its loop and
    ``asyncio.run`` cancels every task; the agents must be killed before that, while the event
    loop still runs.
    """

    def __init__(self, stream: BinaryIO, on_eof: Callable[[], None]) -> None:
        self._stream = stream
        self._on_eof = on_eof

    def readline(self) -> bytes:
        return self._check(self._stream.readline())

    def read(self, n: int = -1) -> bytes:
        return self._check(self._stream.read(n))

    eof = False

    def _check(self, data: bytes) -> bytes:
        if not data and not self.eof:
            self.eof = True
            self._on_eof()
        return data


def create_server() -> RalphLanguageServer:
    server = RalphLanguageServer()
    register(server)
    return server


def serve() -> None:
    """Serve LSP on stdio (``ralph-lsp``, ``ralph-lsp serve``, ``python -m ralph_lsp``).

    Returns after ``shutdown`` and ``exit``; raises ``SystemExit(1)`` when the client left
    without ``shutdown`` (as LSP asks). Refuses Windows with ``SystemExit(2)``.
    """
    reason = unsupported_platform()
    if reason is not None:
        print(f"ralph-lsp: error: {reason}", file=sys.stderr)
        raise SystemExit(2)
    server = create_server()
    # OpenSpec validation runs in a worker thread (server/validation.py). While it computes,
    # the event loop waits for the GIL each time it wakes, up to the switch interval (5 ms by
    # default) and several times per request; 1 ms keeps a request's wait during a long
    # validation near the request's own cost.
    sys.setswitchinterval(0.001)

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        # The editor gave up waiting: kill every agent tree, then go.
        server.engine.shutdown_now()
        durable.settle_all(1.0)  # the records' last versions, written off the loop
        sys.stdout.flush()
        os._exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    stdin = EofGuard(sys.stdin.buffer, server.on_stdin_eof)
    try:
        server.start_io(stdin=cast(BinaryIO, stdin))
    finally:
        # `exit`, or stdin closed without `shutdown`: the last chance to leave no agent behind.
        server.engine.shutdown_now()
        signal.signal(signal.SIGTERM, previous)
    code = 0 if server.shutdown_requested else 1  # LSP: no `shutdown` first is an error
    if not stdin.eof:
        # `exit` while the client keeps the pipe open: pygls's reader thread is blocked in a
        # read that may never return, and the interpreter would wait for it at exit.
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        durable.settle_all()
        os._exit(code)
    if code:
        raise SystemExit(code)
