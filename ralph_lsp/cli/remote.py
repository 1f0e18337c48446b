"""``ralph-lsp run CHANGE --runner ray``: one change as a Ray job (SPEC §9), followed until it
ends and rendered as a local run is: its log and status line, then the single-run ending
``<state>: <reason>`` once (no queue table). Ctrl-C asks the job to stop the run."""

from __future__ import annotations

import argparse
from typing import TextIO

from ralph_lsp.cli.common import EXIT_CODES, CliError
from ralph_lsp.cli.ending import is_end_line, on_end, spent
from ralph_lsp.cli.terminal import Renderer
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.settings import Settings


def run_remote(change: Change, settings: Settings, args: argparse.Namespace, out: TextIO) -> int:
    import asyncio

    return asyncio.run(_remote(change, settings, args, out))


async def _remote(change: Change, settings: Settings, args: argparse.Namespace, out: TextIO) -> int:
    import asyncio
    import signal

    from ralph_lsp.loop.engine import EngineError, EngineEvent, LogEvent, StatusEvent
    from ralph_lsp.loop.on_end import run_end_event
    from ralph_lsp.remote.runs import RayRuns

    ended: list[str] = []
    stopping: list[asyncio.Task[object]] = []

    def stop(reason: str | None = None) -> None:
        if not stopping:
            stopping.append(loop.create_task(runs.stop(change.root, change.name)))

    renderer = Renderer(out, stop)

    def on_event(event: EngineEvent) -> None:
        if isinstance(event, LogEvent):
            if not is_end_line(event.text, ended):  # the final line is printed once, below
                renderer.line(event.text)
        elif isinstance(event, StatusEvent):
            if event.status.final:
                ended.append(str(event.status.state))
            renderer.status(event.status)

    runs = RayRuns(on_event)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop, sig.name)
    try:
        try:
            await runs.start(
                change.root, change.name, settings, guidance=args.guidance or (), story=args.story
            )
        except EngineError as exc:  # nothing pushed or submitted, or Ray refused the job
            raise CliError(str(exc)) from None
        status = await runs.wait(change.root, change.name)
    finally:
        runs.shutdown_now()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    renderer.done(f"{status.state}: {status.reason}" + spent(change.root, status.run_id))
    await on_end(settings, run_end_event(status), change.root)
    return EXIT_CODES.get(status.state, 1)
