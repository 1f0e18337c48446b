"""The detached runner: ``python -m ralph_lsp.runner --root DIR --change NAME --settings JSON …``.

Started by :class:`~ralph_lsp.runner.client.RunnerClient` in a session of its own (so it is not
ended with the server's process group), it hosts one run (:class:`RunHost`) and exits when the
run ends. Once the run has started it prints one line, ``{"type": "ready", "runId", "pid",
"socket"}``, on stdout; if the run cannot start it prints why on stderr and exits 2. After the
ready line its stdout and stderr go to ``.ralph/runs/<runId>/runner.log``, so that nothing it
writes later can fail on a pipe whose reader is gone. SIGTERM stops the run as ``stop`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from ralph_lsp.loop.engine import EngineError
from ralph_lsp.loop.history import history_root
from ralph_lsp.openspec.workspace import UnknownChangeError
from ralph_lsp.runner.host import RunHost
from ralph_lsp.settings import settings_from_dict


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ralph_lsp.runner")
    p.add_argument("--root", required=True)
    p.add_argument("--change", required=True)
    p.add_argument("--settings", default="{}", help="the ralph settings object, as JSON")
    p.add_argument("--max-iterations", type=int)
    p.add_argument("--scope")
    p.add_argument("--guidance", action="append", default=[])
    p.add_argument("--story")
    p.add_argument("--queue", help="the queue the run belongs to: {id, position, total} as JSON")
    return p.parse_args(argv)


def _detach_output(root: Path, run_id: str) -> None:
    """stdout and stderr to the run's runner.log (or /dev/null), stdin from /dev/null."""
    target = history_root(root) / "runs" / run_id / "runner.log"
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    for std in (1, 2):
        os.dup2(fd, std)
    os.close(fd)


async def main(args: argparse.Namespace) -> int:
    settings, warnings = settings_from_dict(json.loads(args.settings))
    for warning in warnings:
        print(warning, file=sys.stderr)
    host = RunHost(
        Path(args.root),
        args.change,
        settings,
        max_iterations=args.max_iterations,
        scope=args.scope,
        guidance=args.guidance,
        story=args.story,
        queue=json.loads(args.queue) if args.queue else None,
        sink=None,
    )
    try:
        status = await host.start()
    except (EngineError, UnknownChangeError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Task[object]] = []

    def on_sigterm() -> None:
        if not stopping:
            stopping.append(loop.create_task(host.engine.shutdown("the runner was terminated")))
        else:
            host.engine.shutdown_now()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    ready = {"type": "ready", "runId": status.run_id, "pid": os.getpid()}
    ready["socket"] = host.live.socket if host.live else None
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    _detach_output(status.root, status.run_id)
    try:
        await host.wait()
    finally:
        host.engine.shutdown_now()
    return 0


def run(argv: list[str] | None = None) -> int:
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # not the terminal's or the server's to end
    return asyncio.run(main(parse(argv)))


if __name__ == "__main__":
    sys.exit(run())
