"""``ralph-lsp verify``: the verification commands run as a run would run them."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, TextIO

from ralph_lsp.cli.common import CliError, change_of, root_of
from ralph_lsp.cli.flags import settings_from_args
from ralph_lsp.cli.terminal import Renderer
from ralph_lsp.openspec.workspace import (
    Change,
)
from ralph_lsp.settings import (
    Settings,
)

if TYPE_CHECKING:
    from ralph_lsp.loop.sandboxing import RunSandbox


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio

    root = root_of(args.root)
    change = change_of(root, args.change)
    settings = settings_from_args(args)
    return asyncio.run(_verify(change, settings, out))


async def _verify(change: Change, settings: Settings, out: TextIO) -> int:
    """Runs the verification commands as a run would; exit 0 when all pass, 1 when one fails,
    2 when there is nothing to run."""
    import asyncio
    import os
    import signal

    from ralph_lsp.loop import verify
    from ralph_lsp.loop.iteration import bounded

    try:
        commands = verify.commands(settings.verify_commands, change.root)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if not commands:
        raise CliError(
            f"no verification command: none is set (--verify) and {change.root} defines none"
            " (a Makefile test target, package.json scripts.test, Python tests, Cargo, Go)"
        )
    stop = asyncio.Event()
    # `ralph-lsp verify … | head`: once stdout is closed, the command's tree is stopped.
    renderer = Renderer(out, stop.set)
    box = await _sandbox(change, settings, renderer)  # said first, as a run says it
    for c in commands:
        renderer.line(f"verification: {c.line} ({c.source})")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    env = {**os.environ, **settings.env}
    runner = verify.Runner(
        change.root,
        env,
        bounded(settings.verify_timeout_seconds) or 0.0,
        stop,
        lambda lines, _err: renderer.line("\n".join(lines)),
        bounded(settings.stop_grace_seconds) or 0.0,
        wrap=box.check if box is not None else None,
    )
    watch = loop.create_task(_until_closed(out))  # a silent command is stopped too
    watch.add_done_callback(lambda t: None if t.cancelled() else renderer.close())
    try:
        results = await runner.run(commands)
    finally:
        watch.cancel()
        if box is not None:
            await box.close()
    failed = next((r for r in results if not r.passed), None)
    if renderer.closed:
        return 5  # stopped because nobody reads the output any more, as `run` does
    if failed is not None:
        renderer.line(f"failed: {failed.describe()}")
        return 1
    if len(results) < len(commands):
        renderer.line("stopped: verification was stopped")
        return 5
    renderer.line(f"passed: {verify.summary(commands)}")
    return 0


async def _sandbox(change: Change, settings: Settings, renderer: Renderer) -> RunSandbox | None:
    """The sandbox a run's checks get (SPEC §10), said first; a usage error when it cannot
    start (the reason names the fix)."""
    from ralph_lsp.loop.sandboxing import RunSandbox
    from ralph_lsp.runs.status import RunEnd

    try:
        return await RunSandbox.open(
            settings, change.root, change.root, lambda text, _level: renderer.line(text)
        )
    except RunEnd as end:
        raise CliError(end.reason) from None


async def _until_closed(out: TextIO) -> None:
    """Returns once ``out`` is a pipe whose reader has gone (``| head`` exited); never for a
    file or a terminal. Polled, since nothing is written while a command is silent."""
    import asyncio
    import select
    import stat

    try:
        fd = out.fileno()
        is_pipe = stat.S_ISFIFO(os.fstat(fd).st_mode)
    except (OSError, ValueError):
        is_pipe = False
    if not is_pipe:
        await asyncio.Event().wait()
    poller = select.poll()
    poller.register(fd, 0)  # only POLLERR / POLLHUP: the reader end was closed
    while not poller.poll(0):
        await asyncio.sleep(0.1)
