"""Archive in the editor (SPEC §11): ``ralph.archivePreview`` (the rebuilt specs, nothing written),
``ralph.archiveChange`` (written, under workspace trust) and the lenses on ``proposal.md``.

The decisions are ``openspec/archive_plan.py``'s and the writing ``archiving/``'s; this module
checks the arguments, refuses while untrusted or while the change runs, and answers as
``openspec archive --json`` does (``{"archive": …}`` or ``{"archive": null, "status": [...]}``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types

from ralph_lsp.archiving.writer import ArchiveBlocked, archive_change, today
from ralph_lsp.openspec.archive_plan import ArchivePlan, plan_archive
from ralph_lsp.openspec.tasks import read_tasks_text
from ralph_lsp.openspec.tasks_fast import parse_tasks
from ralph_lsp.openspec.workspace import ARCHIVE, CHANGES, Change, resolve_change
from ralph_lsp.server import args, render
from ralph_lsp.server.errors import InvalidArguments, RequestFailed
from ralph_lsp.server.event_source import ChangesMoved
from ralph_lsp.server.session import Session

Obj = dict[str, Any]

#: The client's own command: it calls ralph.archivePreview and opens a diff per rebuilt spec.
SHOW_ARCHIVE_PREVIEW = "ralph.showArchivePreview"
#: The client's own command: it asks for confirmation, then calls ralph.archiveChange.
ARCHIVE_WITH_CONFIRM = "ralph.archive"

UNTRUSTED_ARCHIVE = (
    "this workspace is not trusted, and archiving writes its main specs and moves the change;"
    " trust the workspace (Manage Workspace Trust) and archive again"
)


def _target(session: Session, command: str, obj: Obj) -> Change:
    name = args.required_string(command, obj, "change")
    root = session.resolve_root(command, args.optional_string(command, obj, "root"))
    resolve_change(root, name)
    return Change(root, name)


def _spec_json(plan: ArchivePlan) -> list[Obj]:
    return [
        {
            "specId": w.spec_id,
            "uri": w.path.as_uri(),
            "oldText": None if w.old is None else w.old.decode("utf-8", errors="replace"),
            "newText": w.new.decode("utf-8"),
        }
        for w in plan.writes
    ]


async def preview(session: Session, obj: Obj) -> Obj:
    change = _target(session, "ralph.archivePreview", obj)
    missing = await asyncio.to_thread(change.incomplete_tasks)
    try:
        plan = await asyncio.to_thread(plan_archive, change.root, change.name, today(), yes=True)
    except ArchiveBlocked as blocked:
        return {"archive": None, "status": [blocked.diagnostic()], "incompleteTasks": missing}
    return {"archive": plan.result_json(), "specs": _spec_json(plan), "incompleteTasks": missing}


async def archive(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.archiveChange"
    change = _target(session, cmd, obj)
    yes = obj.get("yes", False)
    if not isinstance(yes, bool):
        raise InvalidArguments(f'{cmd}: "yes" must be true or false, got {args.kind(yes)}')
    await session.pull_settings(change.root)
    if not session.config.trusted:
        raise RequestFailed(UNTRUSTED_ARCHIVE)
    if render.is_running(session.status_of(change.root, change.name)):
        raise RequestFailed(f"{change.name} is running; stop it before archiving it")
    missing = await asyncio.to_thread(change.incomplete_tasks)
    try:
        plan = await asyncio.to_thread(
            archive_change, change.root, change.name, yes=yes, incomplete_tasks=missing
        )
    except ArchiveBlocked as blocked:
        return {"archive": None, "status": [blocked.diagnostic()]}
    except OSError as exc:
        raise RequestFailed(f"archiving {change.name} failed: {exc}; no file was changed") from None
    session.events.emit(ChangesMoved(change.root))  # its tasks.md went with it
    session.refresh_lenses()
    return {"archive": plan.result_json()}


def proposal_of(path: Path) -> Change | None:
    """The change whose ``proposal.md`` this is, if it is an active change's."""
    parts = path.parts
    if len(parts) < 5 or parts[-1] != "proposal.md" or parts[-2] == ARCHIVE:
        return None
    if parts[-4:-2] != CHANGES.parts:
        return None
    return Change(Path(*parts[:-4]), parts[-2])


def proposal_lenses(change: Change) -> list[types.CodeLens]:
    """ "Archive preview" and "Archive change" on line 0, once every task is checked."""
    docs = [parse_tasks(read_tasks_text(p) or "") for p in change.task_files if p.is_file()]
    total = sum(d.total for d in docs)
    if not total or any(d.completed < d.total for d in docs):
        return []
    ref = [{"change": change.name, "root": change.root.as_uri()}]
    pos = types.Position(line=0, character=0)
    return [
        types.CodeLens(
            range=types.Range(start=pos, end=pos),
            command=types.Command(title=title, command=command, arguments=list(ref)),
        )
        for title, command in (
            ("⧉ Archive preview", SHOW_ARCHIVE_PREVIEW),
            ("⇲ Archive change", ARCHIVE_WITH_CONFIRM),
        )
    ]
