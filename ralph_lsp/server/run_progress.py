"""One run's status, told to the client in order: work-done progress and ``ralph/runStatus``.

Each run gets a fresh progress token (pygls never forgets tokens). Status events go through one
queue per run, so the progress ``begin`` is sent after the client created the token, every
``report`` follows it, and the ``end`` is sent before the final ``ralph/runStatus``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Protocol

from lsprotocol import types

from ralph_lsp.runs.status import RunStatus

log = logging.getLogger(__name__)

RUN_STATUS = "ralph/runStatus"
CREATE_TIMEOUT = 5.0


ProgressValue = (
    types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd
)


class ProgressClient(Protocol):
    """What a reporter needs from the server (a seam for the tests and for clarity)."""

    def supports_progress(self) -> bool: ...
    async def create_progress(self, token: str) -> None: ...
    def send_progress(
        self,
        token: str,
        value: ProgressValue,
    ) -> None: ...
    def send_run_status(self, status: RunStatus) -> None: ...
    def on_progress_cancel(self, token: str, callback: Callable[[], None]) -> None: ...


def _counts(status: RunStatus) -> tuple[str, int]:
    percent = int(100 * status.completed / status.total) if status.total else 0
    return f"{status.completed}/{status.total}", max(0, min(100, percent))


def report_message(status: RunStatus) -> str:
    if status.iteration == 0:
        return "starting"
    done, _ = _counts(status)
    if status.phase == "verifying":
        return f"verifying · {done}"
    if status.phase == "waiting" and status.waiting:
        why = "rate limited" if status.waiting.get("kind") == "rateLimit" else "waiting for network"
        return f"iteration {status.iteration} · {why} · {done}"
    return f"iteration {status.iteration} · {done}"


def end_message(status: RunStatus) -> str:
    return f"{status.state}: {status.reason}" if status.reason else status.state


class RunReporter:
    def __init__(
        self,
        client: ProgressClient,
        run_id: str,
        change: str,
        stop: Callable[[], None],
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.change = change
        self._stop = stop
        self._queue: asyncio.Queue[RunStatus] = asyncio.Queue()
        self._token: str | None = None
        self._last_report: tuple[str, int] | None = None
        self.done = asyncio.Event()

    def push(self, status: RunStatus) -> None:
        self._queue.put_nowait(status)

    async def run(self) -> None:
        """Consume this run's statuses until its final one; never raises."""
        try:
            first = True
            while True:
                status = await self._queue.get()
                if first:
                    first = False
                    await self._begin(status)
                final = status.final
                self._progress(status, final)
                self.client.send_run_status(status)
                if final:
                    return
        finally:
            self.done.set()

    async def _begin(self, status: RunStatus) -> None:
        if not self.client.supports_progress():
            return
        token = f"ralph-{self.run_id}-{os.urandom(8).hex()}"
        try:
            await asyncio.wait_for(self.client.create_progress(token), CREATE_TIMEOUT)
        except Exception as exc:  # the client refused or did not answer: no progress bar
            log.warning("work-done progress for %s not created: %s", self.change, exc)
            return
        self._token = token
        message, percent = report_message(status), _counts(status)[1]
        self._last_report = (message, percent)
        self.client.send_progress(
            token,
            types.WorkDoneProgressBegin(
                title=f"Ralph: {self.change}",
                cancellable=True,
                message=message,
                percentage=percent,
            ),
        )
        self.client.on_progress_cancel(token, self._cancelled)

    def _cancelled(self) -> None:
        if not self.done.is_set():
            self._stop()

    def _progress(self, status: RunStatus, final: bool) -> None:
        if self._token is None:
            return
        if final:
            self.client.send_progress(
                self._token, types.WorkDoneProgressEnd(message=end_message(status))
            )
            return
        message, percent = report_message(status), _counts(status)[1]
        if (message, percent) == self._last_report:
            return
        self._last_report = (message, percent)
        self.client.send_progress(
            self._token, types.WorkDoneProgressReport(message=message, percentage=percent)
        )
