"""Planning in the editor (SPEC §14): ``ralph.planChange`` starts a planning run, and a planned
change's ``proposal.md`` carries the person's approval: **Approve and run** (``ralph.run``),
**Revise…** (a comment that becomes the guidance of another planning run,
``ralph.revisePlan``) and **Discard** (``ralph.discardChange``: the folder moved to the trash,
after the client's confirmation).

A change is planned when its latest run is a planning run that ended ``planned`` (live in this
server, else its record under ``.ralph/``). Creating the folder is ``loop/plan_run.py``'s, the
gate the engine's: this module checks arguments, trust and running, and answers.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lsprotocol import types

from ralph_lsp.openspec.workspace import Change, resolve_change
from ralph_lsp.placement import runs_on_ray
from ralph_lsp.runs.history import load_records
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.runs.states import PLAN_KIND as KIND
from ralph_lsp.runs.states import RunState
from ralph_lsp.server import args, render
from ralph_lsp.server.errors import InvalidArguments, RequestFailed
from ralph_lsp.server.session import Session
from ralph_lsp.settings import Settings

Obj = dict[str, Any]

#: The client's own commands behind the lenses: each asks the person first.
REVISE_WITH_COMMENT = "ralph.revise"
DISCARD_WITH_CONFIRM = "ralph.discard"
RAY_PLAN = (
    'a planning run runs on this machine: ralph.runner is "ray", whose jobs implement changes;'
    ' set ralph.runner to "local" to plan'
)
UNTRUSTED_PLAN = (
    "this workspace is not trusted, and planning starts a coding agent that writes the change;"
    " trust the workspace (Manage Workspace Trust) and plan again"
)


async def _planning_settings(session: Session, root: Path) -> Settings:
    """The root's settings, refused while the workspace is untrusted or its runs go to Ray."""
    settings = await session.pull_settings(root)
    if not session.config.trusted:
        raise RequestFailed(UNTRUSTED_PLAN)
    if runs_on_ray(settings):  # a Ray job would implement, never plan
        raise RequestFailed(RAY_PLAN)
    return settings


async def plan_change(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.planChange"
    name = args.required_string(cmd, obj, "change")
    description = args.required_text(cmd, obj, "description", "say what the change is to do")
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
    settings = await _planning_settings(session, root)
    from ralph_lsp.loop.plan_run import create_change  # the engine's side: loaded when planning

    folder = await asyncio.to_thread(create_change, root, name)  # EngineError: refused
    try:
        status = await session.engine.start(root, name, settings, RunRequest(plan=description))
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)  # only what create_change wrote is there
        raise
    session.refresh_lenses()
    return {"runId": status.run_id, "change": status.change, "state": status.state}


async def revise_plan(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.revisePlan"
    change = _target(session, cmd, obj)
    text = args.required_text(cmd, obj, "text", "send the comment to plan with")
    settings = await _planning_settings(session, change.root)
    record = await asyncio.to_thread(latest_plan, change)
    described = (record or {}).get("description")
    request = RunRequest(
        plan=described if isinstance(described, str) and described.strip() else text,
        guidance=[text],
    )
    status = await session.engine.start(change.root, change.name, settings, request)
    return {"runId": status.run_id, "change": status.change, "state": status.state}


async def discard_change(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.discardChange"
    change = _target(session, cmd, obj)
    if obj.get("yes") is not True:
        raise InvalidArguments(f'{cmd}: discarding moves the change to the trash: pass "yes": true')
    await session.pull_settings(change.root)
    if not session.config.trusted:
        raise RequestFailed("this workspace is not trusted; trust it to discard a change")
    if render.is_running(session.status_of(change.root, change.name)):
        raise RequestFailed(f"{change.name} is running; stop it before discarding it")
    try:
        where = await asyncio.to_thread(to_trash, change.folder)
    except OSError as exc:
        raise RequestFailed(f"cannot discard {change.name}: {exc}; nothing was moved") from None
    session.refresh_lenses()
    return {"discarded": change.name, "trash": where.as_uri()}


def _target(session: Session, cmd: str, obj: Obj) -> Change:
    name = args.required_string(cmd, obj, "change")
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
    resolve_change(root, name)
    return Change(root, name)


def latest_plan(change: Change) -> dict[str, Any] | None:
    """The change's latest run record when it is a planning run's, else None."""
    records = load_records(change.root, change.name)
    return records[0] if records and records[0].get("kind") == KIND else None


def trash_dir() -> Path:
    """The user's trash (freedesktop.org: ``$XDG_DATA_HOME/Trash``, else ~/.local/share)."""
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
    return Path(data) / "Trash"


def to_trash(folder: Path) -> Path:
    """Move ``folder`` into the trash with its ``.trashinfo`` (restorable); where it went."""
    trash = trash_dir()
    (trash / "files").mkdir(parents=True, exist_ok=True)
    (trash / "info").mkdir(parents=True, exist_ok=True)
    name, n = folder.name, 1
    while (trash / "files" / name).exists() or (trash / "info" / f"{name}.trashinfo").exists():
        n += 1
        name = f"{folder.name}.{n}"
    when = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    info = f"[Trash Info]\nPath={quote(str(folder.resolve()))}\nDeletionDate={when}\n"
    (trash / "info" / f"{name}.trashinfo").write_text(info, "utf-8")
    target = trash / "files" / name
    shutil.move(str(folder), str(target))  # a rename, or a copy then removal across devices
    return target


def planned_lenses(session: Session, change: Change) -> list[types.CodeLens]:
    """Approve and run, Revise…, Discard on line 0 of a planned change's proposal.md."""
    status = session.status_of(change.root, change.name)
    if status is not None and status.kind == KIND:
        planned, questions = status.state is RunState.PLANNED, list(status.questions)
    elif status is not None and render.is_running(status):
        return []
    else:
        record = latest_plan(change)
        planned = record is not None and record.get("state") == RunState.PLANNED.value
        questions = list((record or {}).get("openQuestions") or [])
    if not planned:
        return []
    ref: Obj = {"change": change.name, "root": change.root.as_uri()}
    pos = types.Position(line=0, character=0)
    return [
        types.CodeLens(
            range=types.Range(start=pos, end=pos),
            command=types.Command(title=title, command=command, arguments=[arg]),
        )
        for title, command, arg in (
            ("▶ Approve and run", "ralph.run", ref),
            ("✎ Revise…", REVISE_WITH_COMMENT, {**ref, "questions": questions}),
            ("🗑 Discard", DISCARD_WITH_CONFIRM, ref),
        )
    ]
