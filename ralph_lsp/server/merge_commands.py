"""``ralph.reviewRun``, ``ralph.mergeRun`` and ``ralph.mergeAll`` (SPEC §12): thin handlers over
:mod:`ralph_lsp.merging`, imported by the first call (the server starts without git).

- ``ralph.reviewRun`` ``{"change", "root"?, "runId"?, "into"?}`` → the review bundle;
- ``ralph.mergeRun`` ``{"change", "root"?, "runId"?, "into"?, "strategy"?}`` → the outcome
  (``state``: ``merged``, ``needs-review`` or ``refused``);
- ``ralph.mergeAll`` ``{"root"?, "into"?, "strategy"?}`` → the merge train's result.

A merge's progress goes to the log; each merge (or train) ends with one ``window/showMessage``.
All three are refused while the workspace is untrusted (a merge runs the project's checks).
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from ralph_lsp.openspec.workspace import resolve_change
from ralph_lsp.server import args
from ralph_lsp.server.errors import RequestFailed
from ralph_lsp.server.session import Session

Obj = dict[str, Any]
STRATEGIES = ("merge", "squash", "rebase")


async def _trusted(session: Session, cmd: str, obj: Obj) -> Any:
    root = session.resolve_root(cmd, args.optional_string(cmd, obj, "root"))
    settings = await session.pull_settings(root)
    if not session.config.trusted:
        raise RequestFailed(f"this workspace is not trusted; {cmd} runs git and its checks")
    return root, settings


def _notify(session: Session, text: str, ok: bool) -> None:
    level = types.MessageType.Info if ok else types.MessageType.Warning
    session.notify(types.WINDOW_SHOW_MESSAGE, types.ShowMessageParams(level, text))


async def review_run(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.reviewRun"
    name = args.required_string(cmd, obj, "change")
    root, _ = await _trusted(session, cmd, obj)
    from ralph_lsp.git.merge import MergeError
    from ralph_lsp.merging.review_bundle import review_bundle

    run_id, into = args.optional_string(cmd, obj, "runId"), args.optional_string(cmd, obj, "into")
    try:
        return await asyncio.to_thread(review_bundle, root, name, run_id, into)
    except MergeError as exc:
        resolve_change(root, name)
        raise RequestFailed(str(exc)) from None


async def merge_run(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.mergeRun"
    name = args.required_string(cmd, obj, "change")
    root, settings = await _trusted(session, cmd, obj)
    from ralph_lsp.git.merge import MergeError
    from ralph_lsp.merging.merge import MergeRequest
    from ralph_lsp.merging.merge import merge_run as run_merge

    strategy = args.choice(cmd, obj, "strategy", STRATEGIES) or "merge"
    req = MergeRequest(
        root,
        name,
        args.optional_string(cmd, obj, "runId"),
        args.optional_string(cmd, obj, "into"),
        strategy,  # type: ignore[arg-type]
    )
    try:
        outcome = await run_merge(req, settings, session.logs.add)
    except MergeError as exc:
        resolve_change(root, name)
        raise RequestFailed(str(exc)) from None
    _notify(
        session,
        f"Ralph: {outcome.change}: {outcome.state}: {outcome.reason}",
        outcome.state == "merged",
    )
    return outcome.to_json()


async def merge_all(session: Session, obj: Obj) -> Obj:
    cmd = "ralph.mergeAll"
    root, settings = await _trusted(session, cmd, obj)
    from ralph_lsp.git.merge import MergeError
    from ralph_lsp.merging.train import merge_train

    strategy = args.choice(cmd, obj, "strategy", STRATEGIES) or "merge"
    try:
        train = await merge_train(
            root,
            settings,
            session.logs.add,
            into=args.optional_string(cmd, obj, "into"),
            strategy=strategy,  # type: ignore[arg-type]
        )
    except MergeError as exc:
        raise RequestFailed(str(exc)) from None
    _notify(session, f"Ralph: {train.summary()}", train.count("merged") == len(train.outcomes))
    return train.to_json()
