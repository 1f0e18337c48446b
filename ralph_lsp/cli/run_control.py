"""``ralph-lsp runs``, ``attach``, ``stop``, ``guide`` and ``run --detach`` / ``--events``
(SPEC §9): control of a live run from any terminal, whoever started it."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from ralph_lsp.cli.common import root_of
from ralph_lsp.cli.ending import is_end_line
from ralph_lsp.loop.engine import EngineEvent, LogEvent, StatusEvent
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.placement import runs_on_ray
from ralph_lsp.runner import events
from ralph_lsp.runner.client import Attachment, RunnerError, request, spawn
from ralph_lsp.runner.host import EngineFactory, RunHost
from ralph_lsp.runner.live import LiveRun, find_live
from ralph_lsp.runs.costs import record_summary
from ralph_lsp.runs.history import load_records
from ralph_lsp.runs.receipts import costs_json, costs_text
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings

RECENT = 10  # finished runs listed by `runs`


class NoLiveRun(Exception):
    """The change has no live run (exit 1)."""


def live_run(root: Path, change: str) -> LiveRun:
    for live in find_live(root):
        if live.change == change:
            return live
    raise NoLiveRun(f"change {change!r} has no live run under {root}")


def _no_live(exc: Exception) -> int:
    print(f"ralph-lsp: {exc}", file=sys.stderr)
    return 1


# -- run --detach, run --events --------------------------------------------------------------
def cmd_run_detached(
    root: Path,
    change: str,
    settings: Settings,
    request: RunRequest,
    out: TextIO,
) -> int:
    find_live(root)  # a runner found gone is marked interrupted before the new run starts

    async def go() -> str:
        spawned = await spawn(root, change, settings, request)
        return spawned.run_id

    try:
        run_id = asyncio.run(go())
    except RunnerError as exc:
        print(f"ralph-lsp: error: {exc}", file=sys.stderr)
        return 2
    out.write(run_id + "\n")
    out.flush()
    return 0


def events_sink(out: TextIO) -> Callable[[EngineEvent], None]:
    """Write every event as one line of the stream."""

    def write(event: EngineEvent) -> None:
        out.write(events.dumps(event).decode())
        out.flush()

    return write


def foreground_host(
    change: Change,
    settings: Settings,
    request: RunRequest,
    renderer: Any,
    sink: Callable[[EngineEvent], None] | None,
) -> RunHost:
    """``ralph-lsp run``'s run, hosted like a detached runner's (its live file and socket), its
    events to ``sink`` (``--events``) or else the terminal ``renderer``. A runner found gone is
    marked interrupted before the run starts. A run on Ray is hosted the same way, its
    engine the Ray job's follower."""

    ended: list[str] = []

    def on_event(event: EngineEvent) -> None:
        if sink is not None:
            sink(event)
        elif isinstance(event, LogEvent):
            if not is_end_line(event.text, ended):  # the terminal prints the final line, once
                renderer.line(event.text)
        elif isinstance(event, StatusEvent):
            if event.status.final:
                ended.append(str(event.status.state))
            renderer.status(event.status)

    find_live(change.root)
    engine: EngineFactory | None = None
    if runs_on_ray(settings):  # executed by a Ray job, followed here (ralph_lsp.remote)
        from ralph_lsp.remote.ray_runs import RayRuns

        engine = RayRuns
    return RunHost(
        change.root,
        change.name,
        settings,
        request,
        sink=on_event,
        engine=engine,
    )


# -- runs -----------------------------------------------------------------------------------
def cmd_runs(args: argparse.Namespace, out: TextIO) -> int:
    root = root_of(args.root)
    rows = asyncio.run(_rows(root))
    if args.json:
        out.write(json.dumps({"runs": rows}, indent=2) + "\n")
        return 0
    if not rows:
        out.write(f"no run recorded under {root}\n")
        return 0
    head = ("CHANGE", "RUN", "STATE", "TASKS", "ITER", "PID", "ELAPSED", "SPENT")
    table = [head] + [
        (
            r["change"],
            r["runId"],
            r["state"]
            + (f" ({r['branchState']})" if r["branchState"] else "")
            + (" (planning)" if r["kind"] == "plan" and r["state"] == "running" else ""),
            f"{r['completed']}/{r['total']}",
            str(r["iteration"]),
            str(r["pid"] or "-"),
            _duration(r["elapsedSeconds"]),
            costs_text(r["costs"]) or "-",  # SPEC §15: never $0.0000 for nothing reported
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        out.write(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )
    return 0


async def _rows(root: Path) -> list[dict[str, Any]]:
    live = {info.run_id: info for info in find_live(root)}
    rows: list[dict[str, Any]] = []
    for info in live.values():
        status = await _status_of(info)
        rows.append(_row(info.change, info.run_id, status, info.pid, True))
    for record in load_records(root)[: RECENT + len(live)]:
        if record["runId"] in live or len(rows) >= RECENT + len(live):
            continue
        saved = record.get("progress")
        progress: dict[str, Any] = saved if isinstance(saved, dict) else {}
        iterations = record.get("iterations") or []
        status = {
            "state": record.get("state"),
            "completed": progress.get("completed", 0),
            "total": progress.get("total", 0),
            "iteration": len(iterations),
            "startedAt": record.get("startedAt"),
            "updatedAt": record.get("endedAt"),
            "reason": record.get("reason"),
            "branchState": record.get("branchState"),  # SPEC §12: merged / needs-review
            "kind": record.get("kind"),  # SPEC §14: "plan" for a planning run
            # SPEC §15, as the record keeps it (an older record's from its iterations)
            "costs": record.get("costs")
            if isinstance(record.get("costs"), dict)
            else costs_json(record_summary(record)),
        }
        owner = record.get("owner") or {}
        rows.append(
            _row(str(record.get("change")), record["runId"], status, owner.get("pid"), False)
        )
    return rows


async def _status_of(info: LiveRun) -> dict[str, Any]:
    """The live run's status, asked of its runner (the live file's copy if it does not say)."""
    attached = Attachment(info, lambda _e: None)
    try:
        await attached.open()
        await asyncio.wait_for(attached.first_status.wait(), 5)
    except (RunnerError, asyncio.TimeoutError):
        return dict(info.status or {})
    finally:
        await attached.close()
    assert attached.status is not None
    return attached.status.to_json()


def _row(change: str, run_id: str, status: dict[str, Any], pid: Any, live: bool) -> dict[str, Any]:
    started = _epoch(status.get("startedAt"))
    ended = None if live else _epoch(status.get("updatedAt"))
    elapsed = None if started is None else (ended or time.time()) - started
    return {
        "change": change,
        "runId": run_id,
        "state": status.get("state") or "?",
        "completed": int(status.get("completed") or 0),
        "total": int(status.get("total") or 0),
        "iteration": int(status.get("iteration") or 0),
        "pid": pid if live else None,
        "live": live,
        "elapsedSeconds": None if elapsed is None else round(max(0.0, elapsed), 1),
        "startedAt": status.get("startedAt"),
        "reason": status.get("reason"),
        "branchState": status.get("branchState"),
        "kind": "plan" if status.get("kind") == "plan" else "run",
        "costs": status.get("costs") if isinstance(status.get("costs"), dict) else None,
    }


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


# -- stop, guide ---------------------------------------------------------------------------
def cmd_stop(args: argparse.Namespace, out: TextIO) -> int:
    root = root_of(args.root)
    try:
        live = live_run(root, args.change)
        reply = asyncio.run(request(live, {"type": "stop"}))
    except (NoLiveRun, RunnerError) as exc:
        return _no_live(exc)
    if not reply.get("ok"):
        return _no_live(RunnerError(reply.get("error") or "the runner refused"))
    status = reply.get("status") or {}
    out.write(f"{status.get('state')}: {status.get('reason')}\n")
    return 0


def cmd_guide(args: argparse.Namespace, out: TextIO) -> int:
    root = root_of(args.root)
    if not args.text.strip():
        print("ralph-lsp: error: the guidance text is blank", file=sys.stderr)
        return 2
    try:
        live = live_run(root, args.change)
        reply = asyncio.run(request(live, {"type": "guide", "text": args.text}))
    except (NoLiveRun, RunnerError) as exc:
        return _no_live(exc)
    if reply.get("ok") is not True:
        return _no_live(RunnerError(reply.get("error") or "the runner refused"))
    out.write(f"guidance queued for the next iteration of {args.change}\n")
    return 0


# -- attach ----------------------------------------------------------------------------------
def cmd_attach(
    args: argparse.Namespace, out: TextIO, renderer: Any, exit_codes: dict[str, int]
) -> int:
    """``renderer`` is the terminal rendering of ``run`` (line, status, done)."""
    root = root_of(args.root)
    try:
        live = live_run(root, args.change)
    except NoLiveRun as exc:
        return _no_live(exc)
    return asyncio.run(_attach(root, live, renderer, exit_codes))


async def _attach(root: Path, live: LiveRun, renderer: Any, exit_codes: dict[str, int]) -> int:
    import signal

    loop = asyncio.get_running_loop()
    detach = asyncio.Event()

    def on_event(event: EngineEvent) -> None:
        if isinstance(event, LogEvent):
            renderer.line(event.text)
        elif isinstance(event, StatusEvent):
            renderer.status(event.status)

    attached = Attachment(live, on_event)
    try:
        await attached.open()
    except RunnerError as exc:
        return _no_live(exc)
    loop.add_signal_handler(signal.SIGINT, detach.set)
    waiter: asyncio.Future[Any] = asyncio.ensure_future(detach.wait())
    closed: asyncio.Future[Any] = attached.closed
    try:
        await asyncio.wait({waiter, closed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        waiter.cancel()
        await attached.close()
    if detach.is_set() and attached.final is None:
        renderer.done(f"detached: the run of {live.change} goes on (pid {live.pid})")
        return 0
    final = attached.final
    if final is None:  # the runner hung up without an end: it died
        find_live(root)
        renderer.done(f"interrupted: the runner (pid {live.pid}) ended without finishing the run")
        return exit_codes.get("interrupted", 1)
    renderer.done(f"{final.state}: {final.reason}")
    return exit_codes.get(final.state, 1)


def cmd_attach_here(args: argparse.Namespace, out: TextIO) -> int:
    """``ralph-lsp attach``, rendered in this terminal as ``run`` renders a run."""
    from ralph_lsp.cli.common import EXIT_CODES
    from ralph_lsp.cli.terminal import Renderer

    return cmd_attach(args, out, Renderer(out, lambda: None), EXIT_CODES)
