"""The ``ralph.*`` commands (SPEC §5): check the argument, call the domain or the engine, answer.

Each takes the command's one JSON object (already checked to be an object by ``args``) and
returns a JSON object; refusals are :class:`~ralph_lsp.server.errors.CommandError` s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.workspace import (
    Change,
    UnknownChangeError,
    change_json,
    list_changes,
    resolve_change,
)
from ralph_lsp.runs.history import load_records, with_file_uris
from ralph_lsp.runs.record_schema import damaged_note
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.runs.status import EngineError
from ralph_lsp.server import archive, args, git_commands, merge_commands, planning
from ralph_lsp.server.errors import InvalidArguments, RequestFailed
from ralph_lsp.server.queues import Queues, changes_of
from ralph_lsp.server.session import Session
from ralph_lsp.settings import SCOPES

Obj = dict[str, Any]
Handler = Callable[[Session, Obj], Awaitable[Obj]]

UNTRUSTED = (
    "this workspace is not trusted, and running a change starts a coding agent that edits its"
    " files; trust the workspace (Manage Workspace Trust) and run again"
)


async def changes(session: Session, obj: Obj) -> Obj:
    root_arg = args.optional_string("ralph.changes", obj, "root")
    roots = [session.resolve_root("ralph.changes", root_arg)] if root_arg else session.roots.roots
    out = []
    for root in roots:
        for name in list_changes(root):
            change = Change(root, name)
            status = session.status_of(root, name)
            doc = session.docs.get(change.tasks_path).doc
            out.append(change_json(change, doc, status.to_json() if status else None))
    return {"changes": out}


async def run(session: Session, obj: Obj, queues: Queues) -> Obj:
    cmd = "ralph.run"
    names = changes_of(obj)
    if names is not None:  # a queue (SPEC §9)
        root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
        for each in names:
            resolve_change(root, each)
        settings = await session.pull_settings(root)
        if not session.config.trusted:
            raise RequestFailed(UNTRUSTED)
        return await queues.start(root, names, obj, settings)
    name = args.required_string(cmd, obj, "change")
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
    max_iterations = args.positive_int(cmd, obj, "maxIterations")
    scope = args.choice(cmd, obj, "iterationScope", SCOPES)
    guidance = obj.get("guidance")
    if guidance is not None and not isinstance(guidance, str):
        raise InvalidArguments(f'{cmd}: "guidance" must be text, got {args.kind(guidance)}')
    story = obj.get("story")
    if isinstance(story, int) and not isinstance(story, bool):
        story = str(story)  # `"story": 2` from a hand-written call means story "2"
    story = args.optional_string(cmd, {"story": story}, "story")
    follow_up = obj.get("followUp", False)
    if not isinstance(follow_up, bool):
        got = args.kind(follow_up)
        raise InvalidArguments(f'{cmd}: "followUp" must be true or false, got {got}')
    resolve_change(root, name)
    settings = await session.pull_settings(root)  # may carry a change of trust too
    if not session.config.trusted:
        raise RequestFailed(UNTRUSTED)
    status = await session.engine.start(
        root,
        name,
        settings,
        RunRequest(
            max_iterations=max_iterations,
            scope=scope,
            guidance=[guidance] if guidance and guidance.strip() else [],
            story=story,
            follow_up=follow_up,
        ),
    )
    return {"runId": status.run_id, "change": status.change, "state": status.state}


async def stop(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.stop"
    name = args.required_string(cmd, obj, "change")
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
    try:
        status = await session.engine.stop(root, name)
    except EngineError:
        resolve_change(root, name)  # an unknown name says so, with the known ones
        raise
    return status.to_json()


async def guide(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.guide"
    name = args.required_string(cmd, obj, "change")
    text = args.required_text(cmd, obj, "text", "send the guidance to give the agent")
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
    try:
        await session.engine.guide(root, name, text)
    except EngineError:
        resolve_change(root, name)
        raise
    return {"queued": True}


async def status(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.status"
    name = args.optional_string(cmd, obj, "change")
    root_arg = args.optional_string(cmd, obj, "root")
    root = session.resolve_root(cmd, root_arg) if root_arg else None
    runs = session.engine.statuses(root, name)
    if name is not None and not runs:
        roots = [root] if root is not None else session.roots.roots
        known = sorted({c for r in roots for c in list_changes(r)})
        if name not in known:
            raise UnknownChangeError(name, known)
    return {"runs": [s.to_json() for s in runs]}


_SAID_DAMAGED: set[tuple[Path, str]] = set()


async def history(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.history"
    name = args.required_string(cmd, obj, "change")
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))

    damaged: list[str] = []

    def read() -> list[dict[str, Any]]:
        return [with_file_uris(root, r) for r in load_records(root, name, damaged)]

    records = await asyncio.to_thread(read)
    fresh = [d for d in damaged if (root, d) not in _SAID_DAMAGED]
    _SAID_DAMAGED.update((root, d) for d in fresh)
    note = damaged_note(fresh)
    if note:  # once per damaged record and server, however often the page asks
        session.warn(f"ralph.history: {note}")
    if not records:
        resolve_change(root, name)  # nothing recorded: say so if the name is unknown
    return {"runs": records}


def commands(queues: Queues) -> dict[str, Handler]:
    """Every ``ralph.*`` command and its handler; the queue commands are the queues'."""
    return {
        "ralph.changes": changes,
        "ralph.run": lambda session, obj: run(session, obj, queues),
        "ralph.stop": stop,
        "ralph.guide": guide,
        "ralph.status": status,
        "ralph.history": history,
        "ralph.diff": git_commands.diff,
        "ralph.restore": git_commands.restore,
        "ralph.fileAt": git_commands.file_at,
        "ralph.stopQueue": lambda session, obj: queues.stop(obj),
        "ralph.queues": lambda session, obj: queues.listing(obj),
        "ralph.archivePreview": archive.preview,
        "ralph.archiveChange": archive.archive,
        "ralph.reviewRun": merge_commands.review_run,
        "ralph.mergeRun": merge_commands.merge_run,
        "ralph.mergeAll": merge_commands.merge_all,
        "ralph.planChange": planning.plan_change,
        "ralph.revisePlan": planning.revise_plan,
        "ralph.discardChange": planning.discard_change,
    }
