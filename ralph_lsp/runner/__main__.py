"""The detached runner: ``python -m ralph_lsp.runner --root DIR --change NAME --settings JSON …``,
or a whole queue's with ``--changes JSON --options JSON`` instead of ``--change`` (QueueHost).

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
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from ralph_lsp.runner.site_path import missing_folders

sys.path.extend(missing_folders())  # before the product's imports, which need PyYAML, defusedxml

from ralph_lsp.loop.engine import EngineError
from ralph_lsp.loop.queue import QueueOptions
from ralph_lsp.openspec.workspace import UnknownChangeError
from ralph_lsp.placement import runs_on_ray
from ralph_lsp.runner.host import EngineFactory, RunHost
from ralph_lsp.runner.live import LiveRun
from ralph_lsp.runner.queue_host import QueueHost
from ralph_lsp.runs import safe_dir
from ralph_lsp.runs.history import history_root
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings, settings_from_dict


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ralph_lsp.runner")
    p.add_argument("--root", required=True)
    p.add_argument("--change")
    p.add_argument("--changes", help="a queue: the names of its changes, as a JSON list")
    p.add_argument("--options", default="{}", help="a queue's options, as JSON")
    p.add_argument("--settings", default="{}", help="the ralph settings object, as JSON")
    RunRequest.add_arguments(p)
    args = p.parse_args(argv)
    if (args.change is None) == (args.changes is None):
        p.error("name one --change, or a queue's --changes")
    return args


def _detach_output(root: Path, run_id: str, kind: str = "runs") -> None:
    """stdout and stderr to the run's runner.log (or /dev/null), stdin from /dev/null."""
    target = history_root(root) / kind / run_id / "runner.log"
    try:
        fd = safe_dir.open_file(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    for std in (1, 2):
        os.dup2(fd, std)
    os.close(fd)


def _on_sigterm(
    first: Callable[[], Coroutine[Any, Any, object]], again: Callable[[], None] | None = None
) -> None:
    """SIGTERM runs ``first()`` (as a task, once); another SIGTERM then calls ``again``."""
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Task[object]] = []

    def on_sigterm() -> None:
        if not stopping:
            stopping.append(loop.create_task(first()))
        elif again is not None:
            again()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)


def _say_ready(ready: dict[str, Any], live: LiveRun | None) -> None:
    """The ready line on stdout: ``ready`` with this pid and the control socket (or null)."""
    ready.update(pid=os.getpid(), socket=live.socket if live else None)
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()


async def queue_main(
    args: argparse.Namespace, settings: Settings, remote_engine: EngineFactory | None
) -> int:
    """A queue of its own (``--changes``): ``{"type": "ready", "queueId", "pid", "socket",
    "status"}`` once it started; exit 2 (why on stderr) when it is refused."""
    options = QueueOptions(**json.loads(args.options))
    host = QueueHost(Path(args.root), json.loads(args.changes), settings, options, remote_engine)
    try:
        status = await host.start()
    except (EngineError, UnknownChangeError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    _on_sigterm(host.stop)
    _say_ready({"type": "ready", "queueId": host.queue.id, "status": status}, host.live)
    _detach_output(host.root, host.queue.id, "queues")
    try:
        await host.wait()
    finally:
        host.runs.shutdown_now()
    return 0


async def main(args: argparse.Namespace, remote_engine: EngineFactory | None = None) -> int:
    settings, warnings = settings_from_dict(json.loads(args.settings))
    for warning in warnings:
        print(warning, file=sys.stderr)
    if runs_on_ray(settings) and remote_engine is None:
        print("a run on Ray is hosted by python -m ralph_lsp.remote", file=sys.stderr)
        return 2
    if args.changes is not None:
        return await queue_main(args, settings, remote_engine)
    host = RunHost(
        Path(args.root),
        args.change,
        settings,
        RunRequest.from_args(args),
        sink=None,
        engine=remote_engine if runs_on_ray(settings) else None,
    )
    try:
        status = await host.start()
    except (EngineError, UnknownChangeError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    _on_sigterm(lambda: host.engine.shutdown("the runner was terminated"), host.engine.shutdown_now)
    _say_ready({"type": "ready", "runId": status.run_id}, host.live)
    _detach_output(status.root, status.run_id)
    try:
        await host.wait()
        await host.engine.ends_told()  # its onRunEnd, whether an editor watched or not
    finally:
        host.engine.shutdown_now()
    return 0


def run(argv: list[str] | None = None, remote_engine: EngineFactory | None = None) -> int:
    """The runner's process; ``remote_engine`` executes the runs whose ``ralph.runner`` is
    ``ray`` (given by ``python -m ralph_lsp.remote``, which this layer does not import)."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # not the terminal's or the server's to end
    return asyncio.run(main(parse(argv), remote_engine))


if __name__ == "__main__":
    sys.exit(run())
