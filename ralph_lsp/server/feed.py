"""The engine's events, told to the client: each run's statuses (work-done progress and
``ralph/runStatus``, through one RunReporter per run) and its log lines; and to the server: the
session's latest statuses, and :class:`~ralph_lsp.server.event_source.RunStatusChanged` for the
capabilities that follow runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types

from ralph_lsp.runs.status import EngineEvent, LogEvent, RunStatus, StatusEvent
from ralph_lsp.server.event_source import RunStatusChanged
from ralph_lsp.server.logs import LEVELS
from ralph_lsp.server.run_progress import RUN_STATUS, ProgressValue, RunReporter
from ralph_lsp.server.session import Session


class RunFeed:
    """Engine events in, notifications out; also the ProgressClient RunReporter speaks to."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._reporters: dict[str, RunReporter] = {}

    def active_runs(self) -> int:
        return sum(1 for s in self.session.statuses.values() if not s.final)

    async def all_reported(self) -> None:
        """Until every run's reporter has sent its final status."""
        await asyncio.gather(*(r.done.wait() for r in self._reporters.values()))

    def forget(self, statuses: list[RunStatus]) -> None:
        """Runs that go on without this server: their reporters send no final status."""
        for status in statuses:
            reporter = self._reporters.pop(status.run_id, None)
            if reporter is not None:
                reporter.done.set()

    def on_engine_event(self, event: EngineEvent) -> None:
        if isinstance(event, StatusEvent):
            self._on_status(event.status)
        elif isinstance(event, LogEvent):
            self._on_log(event)

    def _on_log(self, event: LogEvent) -> None:
        text = event.text
        if self.active_runs() > 1:
            prefix = f"[{event.change}] "
            text = prefix + text.replace("\n", "\n" + prefix)  # on every line of a batch
        self.session.logs.add(text, LEVELS.get(event.level, types.MessageType.Info))

    def _on_status(self, status: RunStatus) -> None:
        session = self.session
        session.statuses[(status.root, status.change)] = status
        reporter = self._reporters.get(status.run_id)
        if reporter is None:
            root, change = status.root, status.change
            reporter = RunReporter(
                self, status.run_id, change, stop=lambda: self._stop_from_progress(root, change)
            )
            self._reporters[status.run_id] = reporter
            session.run_task(self._report(reporter), f"report {status.run_id}")
        reporter.push(status)
        session.events.emit(RunStatusChanged(status))  # its lenses, diagnostics and scenarios

    async def _report(self, reporter: RunReporter) -> None:
        try:
            await reporter.run()
        finally:
            self._reporters.pop(reporter.run_id, None)

    def _stop_from_progress(self, root: Path, change: str) -> None:
        """The user cancelled the run's progress in the editor: stop the run."""
        engine = self.session.engine

        async def stop() -> None:
            if any(not s.final for s in engine.statuses(root, change)):
                await engine.stop(root, change)

        self.session.run_task(stop(), f"stop {change} (progress cancelled)")

    # -- ProgressClient, for RunReporter -------------------------------------------------------
    def supports_progress(self) -> bool:
        return self.session.capability("window", "work_done_progress")

    async def create_progress(self, token: str) -> None:
        await self.session.client.work_done_progress.create_async(token)

    def send_progress(self, token: str, value: ProgressValue) -> None:
        progress = self.session.client.work_done_progress
        if isinstance(value, types.WorkDoneProgressBegin):
            progress.begin(token, value)
        elif isinstance(value, types.WorkDoneProgressReport):
            progress.report(token, value)
        else:
            progress.end(token, value)
            progress.tokens.pop(token, None)  # pygls never forgets a token by itself

    def send_run_status(self, status: RunStatus) -> None:
        self.session.notify(RUN_STATUS, status.to_json())

    def on_progress_cancel(self, token: str, callback: Any) -> None:
        future = self.session.client.work_done_progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda f: callback() if f.cancelled() else None)
