"""What every driver of runs offers, whatever executes them (:class:`RunService`).

Three classes implement it: the engine of this process (``loop/engine.py``: ``Engine``), the
server's runs, each in a runner of its own (``runner/runs.py``: ``Runs``), and runs executed on
Ray and followed from here (``remote/ray_runs.py``: ``RayRuns``); the server checks all three
against it (``server/server.py``). A queue drives any of them; a runner's host needs, beyond
it, the backpressure hook and a synchronous shutdown (``runner/host.py``: ``HostedEngine``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Protocol

from ralph_lsp.runs.request import RunRequest
from ralph_lsp.runs.status import RunStatus
from ralph_lsp.settings import Settings


class RunService(Protocol):
    """Start, wait for, stop and guide the run of a change, list the runs' statuses, and shut
    every run down. ``guide`` is synchronous in the engine and a request elsewhere, so its
    result is awaited only when there is one."""

    async def start(
        self, root: Path, change: str, settings: Settings, request: RunRequest = ...
    ) -> RunStatus: ...

    async def wait(self, root: Path, change: str) -> RunStatus: ...

    async def stop(self, root: Path, change: str) -> RunStatus: ...

    def guide(self, root: Path, change: str, text: str) -> Awaitable[None] | None: ...

    def statuses(self, root: Path | None = None, change: str | None = None) -> list[RunStatus]: ...

    async def shutdown(self, reason: str | None = None) -> None: ...

    async def ends_told(self) -> None:
        """Once the ``ralph.onRunEnd`` commands of the runs ended so far have ended (each is
        started by the engine that executed its run, ``loop/on_end.py``)."""
        ...
