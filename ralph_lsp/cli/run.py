"""``ralph-lsp run``: one change's Ralph loop in this process, rendered to the terminal."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ralph_lsp.cli import git_commands, run_control
from ralph_lsp.cli.common import EXIT_CODES, CliError, change_of, root_of
from ralph_lsp.cli.ending import ends_to_stderr, spent
from ralph_lsp.cli.flags import settings_from_args
from ralph_lsp.cli.terminal import Renderer
from ralph_lsp.openspec.workspace import (
    Change,
)
from ralph_lsp.placement import runs_on_ray
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import (
    Settings,
)


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio  # only `run` needs it: `changes` and the others start faster without

    from ralph_lsp.cli import queue  # imported here: `run CHANGE` needs none of it

    root = root_of(args.root)
    names = queue.names_of(root, args)
    settings = settings_from_args(args)
    # A Ray run's agent runs on a worker (SPEC §9): nothing of it to check on this machine.
    local = not runs_on_ray(settings)
    on_branches = (args.parallel or 1) > 1 or settings.isolation == "worktree"
    if getattr(args, "merge", False) and (len(names) < 2 or not on_branches):
        raise CliError(
            "--merge merges a queue's branches: run several changes (or --all) with"
            " --parallel N (N ≥ 2) or isolation 'worktree'"
        )
    if len(names) > 1:  # a queue (SPEC §9): --max-cost is the whole queue's budget
        settings = settings.replace(queue_max_cost_usd=settings.max_cost_usd, max_cost_usd=None)
        if local:
            _preflight(settings, root)
        return queue.run_queue(root, names, settings, args, out)
    change = change_of(root, names[0])
    if local:
        _preflight(settings, root)
        git_commands.check_run(root, settings)
    request = RunRequest(guidance=args.guidance or (), story=args.story)
    if args.detach:
        return run_control.cmd_run_detached(root, change.name, settings, request, out)
    sink = run_control.events_sink(out) if args.events else None
    return asyncio.run(_run(change, settings, request, out, sink))


def _preflight(settings: Settings, root: Path) -> None:
    """Before any run starts: the agent program must exist and be executable (a usage error,
    with no run and no record, when it does not: ``loop/preconditions.py``)."""
    from ralph_lsp.loop.preconditions import program_refusal

    reason = program_refusal(settings, root)
    if reason is not None:
        raise CliError(reason)


async def _run(
    change: Change,
    settings: Settings,
    request: RunRequest,
    out: TextIO,
    sink: Callable[[Any], None] | None = None,
) -> int:
    import asyncio

    from ralph_lsp.cli.signals import stop_on_signals
    from ralph_lsp.loop.engine import EngineError

    stopping: list[asyncio.Task[None]] = []

    def stop_quietly() -> None:  # standard output was closed: stop as Ctrl-C does, silently
        if not stopping:
            stopping.append(loop.create_task(engine.shutdown("standard output was closed")))

    renderer = Renderer(out, stop_quietly)
    # Hosted like a detached runner's run, so `ralph-lsp stop/guide/attach` reach it too.
    host = run_control.foreground_host(change, settings, request, renderer, sink)
    engine = host.engine
    ends_to_stderr(engine)
    loop = asyncio.get_running_loop()

    def stop() -> None:
        stopping.append(loop.create_task(engine.shutdown()))

    ticker = loop.create_task(_tick(renderer)) if renderer.tty else None
    with stop_on_signals("run", renderer.line, stop, engine.shutdown_now):
        try:
            try:
                await host.start()
            except EngineError as exc:  # e.g. another process runs this change: no run started
                raise CliError(str(exc)) from None
            status = await host.wait()
        finally:
            if ticker is not None:
                ticker.cancel()
            engine.shutdown_now()
    if sink is None:
        renderer.done(f"{status.state}: {status.reason}" + spent(change.root, status.run_id))
    await engine.ends_told()  # its --on-end, started as it ended
    return EXIT_CODES.get(status.state, 1)


async def _tick(renderer: Renderer) -> None:
    import asyncio

    while True:
        await asyncio.sleep(1.0)
        renderer.tick()
