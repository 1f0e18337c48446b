"""``ralph-lsp plan``: an agent drafts a change, the gate judges it, a person approves (SPEC §14).

``plan NAME --describe TEXT`` creates ``openspec/changes/NAME/`` and runs a planning run through
the engine in this process, hosted as ``run`` hosts one (history, events, ``runs``, ``stop``,
``guide``, ``attach``, ``--detach``); ``--revise TEXT`` plans an existing change again with the
text as guidance; ``--from FILE`` plans one change per ``## name`` section, up to
``--parallel N`` at once. Every name and file is checked before anything is written: a refusal
is a usage error (exit 2) that writes nothing. ``ralph-lsp run NAME`` is the approval.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
from pathlib import Path
from typing import Any, TextIO

from ralph_lsp.cli import run as run_cmd
from ralph_lsp.cli import run_control
from ralph_lsp.cli.common import EXIT_CODES, CliError, root_of
from ralph_lsp.cli.flags import settings_from_args
from ralph_lsp.openspec.planning import change_name_error
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.placement import runs_on_ray
from ralph_lsp.runs.history import load_records
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import EngineError, RunStatus
from ralph_lsp.settings import Settings

_SECTION = re.compile(r"^##[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
MAX_FROM_BYTES = 1 << 20


def cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    root = root_of(args.root)
    items = _items(root, args)
    settings = settings_from_args(args)
    if runs_on_ray(settings):
        raise CliError("a planning run runs here: --runner ray does not plan")
    run_cmd._preflight(settings, root)
    if len(items) > 1 or args.from_file:
        if args.detach or args.events:
            raise CliError("--from plans in this process: --detach and --events take one change")
        return asyncio.run(_plan_many(root, items, settings, args.parallel or 1, out))
    name, request, revise = items[0]
    change = _create(root, name, revise)
    if args.detach:
        return run_control.cmd_run_detached(root, name, settings, request, out)
    sink = run_control.events_sink(out) if args.events else None
    try:
        return asyncio.run(run_cmd._run(change, settings, request, out, sink))
    except CliError:
        if not revise:
            _undo_create(change)
        raise


def _items(root: Path, args: argparse.Namespace) -> list[tuple[str, RunRequest, bool]]:
    """(name, request, a revision) of each change to plan, all checked before any is written."""
    guidance = tuple(args.guidance or ())
    if args.from_file:
        if args.change or args.describe or args.revise:
            raise CliError("--from FILE names its changes: no CHANGE, --describe or --revise")
        sections = read_sections(Path(args.from_file))
        found = [(n, RunRequest(guidance=guidance, plan=d), False) for n, d in sections]
    else:
        if not args.change:
            raise CliError("name the change to plan: ralph-lsp plan NAME --describe TEXT")
        if not args.describe and not args.revise:
            raise CliError("give --describe TEXT (a new change) or --revise TEXT (another round)")
        if args.revise:
            described = args.describe or _last_description(root, args.change)
            request = RunRequest(guidance=(*guidance, args.revise), plan=described)
            found = [(args.change, request, True)]
        else:
            found = [(args.change, RunRequest(guidance=guidance, plan=args.describe), False)]
    for name, request, revise in found:
        _check(root, name, revise, request.plan or "")
    return found


def read_sections(path: Path) -> list[tuple[str, str]]:
    """``--from FILE``: (name, description) per ``## name`` section, in file order."""
    try:
        text = path.read_bytes()[:MAX_FROM_BYTES].decode("utf-8", "replace")
    except OSError as exc:
        raise CliError(f"--from: cannot read {path}: {exc.strerror or exc}") from None
    heads = list(_SECTION.finditer(text))
    if not heads:
        raise CliError(f"--from: {path} has no '## name' section (one per change)")
    out: list[tuple[str, str]] = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((head.group(1), text[head.end() : end].strip()))
    names = [n for n, _ in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CliError(f"--from: {path} names {', '.join(twice)} more than once")
    return out


def _check(root: Path, name: str, revise: bool, description: str) -> None:
    why = change_name_error(name)
    if why is not None:
        raise CliError(f"{why}: {name!r} is not a change name")
    folder = root / "openspec" / "changes" / name
    if revise and not folder.is_dir():
        raise CliError(f"no change {name!r} to revise: plan it with --describe TEXT first")
    if not revise and (folder.exists() or folder.is_symlink()):
        raise CliError(
            f"change {name!r} exists already ({folder}); revise it with"
            f" `ralph-lsp plan {name} --revise TEXT`, or choose another name"
        )
    if not description.strip():
        raise CliError(f"change {name!r}: the description is empty")


def _last_description(root: Path, name: str) -> str:
    """What the latest planning run of the change was asked for (a revision plans the same)."""
    for record in load_records(root, name):
        if record.get("kind") == "plan" and isinstance(record.get("description"), str):
            return str(record["description"])
    return f"Revise the change {name} as its proposal.md states it and the guidance directs."


def _create(root: Path, name: str, revise: bool) -> Change:
    from ralph_lsp.loop.plan_run import create_change

    if not revise:
        try:
            create_change(root, name)
        except (EngineError, OSError) as exc:
            raise CliError(str(exc)) from None
    return Change(root, name)


def _undo_create(change: Change) -> None:
    """A planning run that did not start leaves no folder behind (only what we wrote in it)."""
    try:
        entries = sorted(p.name for p in change.folder.iterdir())
    except OSError:
        return
    if entries == [".openspec.yaml"]:
        shutil.rmtree(change.folder, ignore_errors=True)


class _Prefixed:
    """A queue's lines, each named by its change."""

    def __init__(self, out: TextIO, name: str) -> None:
        self.out, self.name = out, name

    def line(self, text: str) -> None:
        self.out.write(f"[{self.name}] {text}\n")
        self.out.flush()

    def status(self, status: RunStatus) -> None:
        del status  # the final line is printed once the run ends


async def _plan_many(
    root: Path,
    items: list[tuple[str, RunRequest, bool]],
    settings: Settings,
    parallel: int,
    out: TextIO,
) -> int:
    from ralph_lsp.cli.ending import ends_to_stderr
    from ralph_lsp.cli.signals import stop_on_signals

    gate = asyncio.Semaphore(max(1, parallel))
    hosts: list[Any] = []

    async def one(name: str, request: RunRequest, revise: bool) -> RunStatus | None:
        async with gate:
            change = _create(root, name, revise)
            host = run_control.foreground_host(
                change, settings, request, _Prefixed(out, name), None
            )
            ends_to_stderr(host.engine)
            hosts.append(host)
            try:
                await host.start()
            except EngineError as exc:
                _undo_create(change)
                out.write(f"[{name}] not started: {exc}\n")
                return None
            return await host.wait()

    def stop() -> None:
        for host in hosts:
            asyncio.get_running_loop().create_task(host.engine.shutdown())

    def kill() -> None:
        for host in hosts:
            host.engine.shutdown_now()

    def say(text: str) -> None:
        out.write(text + "\n")

    with stop_on_signals("planning", say, stop, kill):
        ended = await asyncio.gather(*(one(*item) for item in items))
    code = _summary(out, [n for n, _, _ in items], ended)
    await asyncio.gather(*(host.engine.ends_told() for host in hosts))  # each one's --on-end
    return code


def _summary(out: TextIO, names: list[str], ended: list[RunStatus | None]) -> int:
    code = EXIT_CODES[RunState.PLANNED]
    for name, status in zip(names, ended, strict=True):
        state = "not started" if status is None else str(status.state)
        out.write(f"{name}: {state}" + (f": {status.reason}" if status else "") + "\n")
        if status is None or status.state is not RunState.PLANNED:
            code = code if code != EXIT_CODES[RunState.PLANNED] else _code(status)
    return code


def _code(status: RunStatus | None) -> int:
    return 1 if status is None else EXIT_CODES.get(status.state, 1)
