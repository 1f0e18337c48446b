"""``ralph-lsp run A B C`` and ``ralph-lsp run --all``: a queue of changes (SPEC §9), rendered
to the terminal: the runs' output as ``run`` shows it (each line named by its change when
several run at once), one line per change as it ends, then a summary table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ralph_lsp.cli.common import EXIT_CODES, CliError
from ralph_lsp.cli.terminal import Renderer
from ralph_lsp.openspec.workspace import UnknownChangeError, list_changes
from ralph_lsp.placement import runs_on_ray
from ralph_lsp.settings import Settings

if TYPE_CHECKING:
    from ralph_lsp.loop.queue import Queue
    from ralph_lsp.remote.ray_runs import RayRuns

MARKS = {"succeeded": "✓", "skipped": "–", "dropped": "–"}


def names_of(root: Path, args: argparse.Namespace) -> list[str]:
    """The changes ``run`` names: its arguments, or with ``--all`` every active change with an
    unchecked task, by name."""
    from ralph_lsp.openspec.tasks import read_tasks_text
    from ralph_lsp.openspec.tasks_fast import parse_tasks
    from ralph_lsp.openspec.workspace import Change

    names: list[str] = list(args.change or [])
    known = list_changes(root)
    if getattr(args, "all", False):
        if names:
            raise CliError("run: name changes or pass --all, not both")
        for name in sorted(known):
            try:
                doc = parse_tasks(read_tasks_text(Change(root, name).tasks_path) or "")
            except OSError:
                continue
            if doc.total > doc.completed:
                names.append(name)
        if not names:
            raise CliError("run --all: no active change has an unchecked task")
    if not names:
        raise CliError("run: name a change (or several, or --all)")
    for name in names:
        if name not in known:
            raise CliError(str(UnknownChangeError(name, known)))
    if len(names) > 1 and (args.guidance or args.story):
        raise CliError("--guidance and --story apply to one change; run it on its own")
    return names


def run_queue(
    root: Path, names: list[str], settings: Settings, args: argparse.Namespace, out: TextIO
) -> int:
    import asyncio

    return asyncio.run(_queue(root, names, settings, args, out))


# Long: the queue's wiring to the terminal and the signals, in the order they happen.
async def _queue(
    root: Path, names: list[str], settings: Settings, args: argparse.Namespace, out: TextIO
) -> int:
    import asyncio

    from ralph_lsp.cli.ending import ends_to_stderr, is_end_line
    from ralph_lsp.cli.signals import stop_on_signals
    from ralph_lsp.loop.engine import Engine, EngineError, EngineEvent, LogEvent, StatusEvent
    from ralph_lsp.loop.queue import Queue, QueueEvent, QueueOptions

    stopping: list[asyncio.Task[Any]] = []
    queue: Queue | None = None

    def stop(reason: str | None = None) -> None:
        if not stopping and queue is not None:
            stopping.append(loop.create_task(queue.stop()))

    renderer = Renderer(out, stop)
    options = QueueOptions.of(
        settings, parallel=args.parallel, stop_on_failure=args.stop_on_failure or None
    )
    ended: dict[str, list[str]] = {}

    def on_event(event: EngineEvent) -> None:
        named = options.parallel > 1
        if isinstance(event, LogEvent):
            if not is_end_line(event.text, ended.get(event.change, [])):
                renderer.line(f"[{event.change}] {event.text}" if named else event.text)
        elif isinstance(event, StatusEvent):
            st = event.status
            if st.final:
                ended.setdefault(st.change, []).append(str(st.state))
            at = f"{st.change} {st.queue['position']}/{st.queue['total']} · " if st.queue else ""
            renderer.status(st, prefix=at)

    said: set[str] = set()

    def on_queue(event: QueueEvent) -> None:
        for item in event.status["items"]:
            if item["state"] not in ("pending", "running") and item["change"] not in said:
                said.add(item["change"])
                renderer.line(_item_line(item))

    engine: Engine | RayRuns
    if runs_on_ray(settings):  # the agent runs on a worker: no local preflight
        from ralph_lsp.remote.ray_runs import RayRuns

        engine = RayRuns(on_event)
    else:
        engine = Engine(on_event)
    queue = Queue(engine, root, names, settings, options, on_queue)
    ends_to_stderr(engine, queue)
    loop = asyncio.get_running_loop()
    with stop_on_signals("queue", renderer.line, stop, engine.shutdown_now):
        try:
            try:
                await queue.start()
            except EngineError as exc:  # nothing started
                raise CliError(str(exc)) from None
            status = await queue.wait()
        finally:
            engine.shutdown_now()
    renderer.done(summary(status))
    await queue.ends_told()  # each run's --on-end (started as it ended), then the queue's
    code = exit_code(status)
    if getattr(args, "merge", False):
        from ralph_lsp.cli.train import run_train_after

        return await run_train_after(root, status, settings, out, code)
    return code


def _item_line(item: dict[str, Any]) -> str:
    mark = MARKS.get(item["state"], "✗")
    return f"{mark} {item['change']}: {item['state']}: {item['reason']}"


def _money(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, (int, float)) else "-"


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "-"
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{seconds:.1f}s"


def summary(status: dict[str, Any]) -> str:
    """The summary table, then the queue's ``<state>: <reason>`` as the last line."""
    rows = [("change", "state", "iterations", "cost", "duration", "branch")]
    for item in status["items"]:
        rows.append(
            (
                item["change"],
                item["state"],
                str(item["iterations"]),
                _money(item["costUsd"]),
                _duration(item["durationS"]),
                item["branch"] or "",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    total = f"total cost {_money(status['costUsd'])}" if status.get("costUsd") else ""
    head = f"queue {status['queueId']}" + (f" · {total}" if total else "")
    return "\n".join(["", head, *lines, f"{status['state']}: {status['reason']}"])


def exit_code(status: dict[str, Any]) -> int:
    """0 only when every change succeeded; else the code of the first that did not."""
    for item in status["items"]:
        if item["state"] != "succeeded":
            return EXIT_CODES.get(item["state"], 1)
    return 0
