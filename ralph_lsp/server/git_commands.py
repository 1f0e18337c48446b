"""``ralph.diff``, ``ralph.restore`` and ``ralph.fileAt`` (SPEC §5, §8): checkpoints for a client.

Thin: check the argument, call :mod:`ralph_lsp.loop.review` in a worker thread (git may take a
moment on a big repository), answer. A refusal is a ``RequestFailed`` whose message says why.
The git layer is imported by the first of these calls, not by the server's start.

- ``ralph.diff`` ``{"change", "root"?, "runId"?, "iteration"?}`` (default: the newest run with
  checkpoints, its last iteration) → ``{"runId", "iteration", "before", "after", "files":
  [{"path", "status", "beforeUri", "afterUri"}], "patch", "patchTruncated"}``; a checkpoint is
  ``{"ref", "commit"}``; ``status`` is ``added``/``modified``/``deleted``/``typechange``; the URIs
  are ``ralph-checkpoint:/<path>?root=<root URI>&checkpoint=<commit>`` (null where the file does
  not exist on that side), opened read-only through ``ralph.fileAt``.
- ``ralph.restore`` ``{"change", "root"?, "runId"?, "iteration" | "checkpoint"}`` →
  ``{"runId", "restored", "undo", "written", "removed", "skipped": [{"path", "reason"}]}``;
  restoring ``undo`` (as ``checkpoint``) undoes it. Refused while any change runs in that work
  tree (the domain checks ``.ralph/locks/``, this server's own runs included).
- ``ralph.fileAt`` ``{"root", "checkpoint", "path"}`` → ``{"text"}``; ``checkpoint`` is a
  ``refs/ralph/…`` ref or a commit id.

All three are refused while the workspace is untrusted (git would run in a stranger's
repository; even then gitcli runs none of the programs its config names).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.workspace import resolve_change
from ralph_lsp.server import args
from ralph_lsp.server.errors import RequestFailed
from ralph_lsp.server.session import Session

Obj = dict[str, Any]


async def _refuse_untrusted(session: Session, root: Path, what: str) -> None:
    """git runs in the workspace's repository, whose config may name programs: gitcli turns
    them all off, and an untrusted workspace does not get git run at all (belt and braces)."""
    await session.pull_settings(root)  # may carry a change of trust
    if not session.config.trusted:
        raise RequestFailed(f"this workspace is not trusted; {what} runs git in its repository")


def _iteration_of(session: Session, cmd: str, obj: Obj) -> tuple[str, Path, str | None, int | None]:
    """The change, its root, the run and the iteration a diff or a restore names."""
    name = args.required_string(cmd, obj, "change")
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
    run_id = args.optional_string(cmd, obj, "runId")
    n = args.positive_int(cmd, obj, "iteration")
    return name, root, run_id, n


async def diff(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.diff"
    name, root, run_id, n = _iteration_of(session, cmd, obj)
    await _refuse_untrusted(session, root, "showing a diff")
    from ralph_lsp.git.refs import CheckpointError
    from ralph_lsp.loop.review import diff_json, iteration_diff

    try:
        d = await asyncio.to_thread(iteration_diff, root, name, run_id, n)
    except CheckpointError as exc:
        resolve_change(root, name)  # an unknown change says so, with the known ones
        raise RequestFailed(str(exc)) from None
    return diff_json(root, d)


async def restore(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.restore"
    name, root, run_id, n = _iteration_of(session, cmd, obj)
    checkpoint = args.optional_string(cmd, obj, "checkpoint")
    if n is None and checkpoint is None:
        raise RequestFailed(f'{cmd} needs "iteration" (or "checkpoint", e.g. an undo)')
    resolve_change(root, name)
    if any(not s.final for s in session.engine.statuses(root, name)):
        raise RequestFailed(f"change {name!r} is running; stop it before restoring its files")
    await session.pull_settings(root)
    if not session.config.trusted:
        raise RequestFailed("this workspace is not trusted; restoring rewrites its files")
    from ralph_lsp.git.refs import CheckpointError
    from ralph_lsp.loop.review import restore_iteration

    try:
        run, result = await asyncio.to_thread(restore_iteration, root, name, run_id, n, checkpoint)
    except (CheckpointError, OSError) as exc:
        raise RequestFailed(str(exc)) from None
    return {"runId": run, **result.to_json()}


async def file_at(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.fileAt"
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
    checkpoint = args.required_string(cmd, obj, "checkpoint")
    path = args.required_string(cmd, obj, "path")
    await _refuse_untrusted(session, root, "showing a file of a checkpoint")
    from ralph_lsp.git.refs import CheckpointError
    from ralph_lsp.loop.review import text_at

    try:
        text = await asyncio.to_thread(text_at, root, checkpoint, path)
    except CheckpointError as exc:
        raise RequestFailed(str(exc)) from None
    return {"text": text}
