"""A tree watched with watchfiles, where inotify cannot be had.

Another OS, the per-user limit on inotify *instances*, a sandbox that forbids inotify, the first
watches refused for another reason than the limit, or ``RALPH_WATCH=poll`` in the server's
environment. watchfiles polls its queue every ``step`` ms and hands over a single write after
about 10–20 ms. It gives no sign of when its watch is in place, so what an interest can list
(``Interest.everything``) is compared by stat once after :data:`SETTLE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from ralph_lsp.server.watching.interests import Interest
from ralph_lsp.server.watching.watched import Watched

SETTLE_SECONDS = 0.3
RETRY_SECONDS = 1.0

Stat = tuple[int, int, int] | None


def _stat(path: Path) -> Stat:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _snapshot(interest: Interest) -> dict[Path, Stat]:
    if interest.everything is None:
        return {}
    return {path: _stat(path) for path in interest.everything()}


async def watch(tree: Watched) -> None:
    """Watch ``tree.top`` with watchfiles until the tree is stopped."""
    before = [(interest, _snapshot(interest)) for interest in tree.interests]
    settle = asyncio.ensure_future(_settle(tree, before))
    try:
        await _watchfiles(tree)
    finally:
        settle.cancel()


async def _settle(tree: Watched, before: list[tuple[Interest, dict[Path, Stat]]]) -> None:
    await tree.sleep(SETTLE_SECONDS)
    if tree.stopped.is_set():
        return
    for interest, then in before:
        now = _snapshot(interest)
        changed = {p for p in then.keys() | now.keys() if then.get(p) != now.get(p)}
        if changed:
            interest.deliver(changed)


def _paths(interest: Interest, changes: set[tuple[object, str]], deleted: object) -> set[Path]:
    out: set[Path] = set()
    for change, path in changes:
        if interest.wants(path):
            out.add(Path(path))
        elif interest.on_fallback:
            out |= interest.folder(Path(path), change != deleted, True)
    return out


async def _watchfiles(tree: Watched) -> None:
    import watchfiles  # only where inotify is not available

    folder = tree.top
    deleted = watchfiles.Change.deleted

    def wanted(change: watchfiles.Change, path: str) -> bool:
        return any(_paths(interest, {(change, path)}, deleted) for interest in tree.interests)

    while not tree.stopped.is_set():
        if not folder.is_dir():
            await tree.sleep(RETRY_SECONDS)
            continue
        restart = asyncio.Event()
        guard = asyncio.ensure_future(_guard(tree, restart))
        try:
            async for changes in watchfiles.awatch(
                folder,
                watch_filter=wanted,
                debounce=50,
                step=10,
                debug=False,
                stop_event=restart,
                recursive=True,
                ignore_permission_denied=True,
            ):
                if tree.stopped.is_set():
                    break
                for interest in tree.interests:
                    paths = _paths(interest, set(changes), deleted)
                    if paths:
                        interest.deliver(paths)
        except Exception as exc:  # the folder vanished, too many watches, …
            tree.warn_once("watching %s failed (%s); retrying", folder, exc)
        finally:
            guard.cancel()
        if not tree.stopped.is_set():
            # The folder went away (or was replaced). A change may have happened meanwhile,
            # so report what each interest can list once it is back.
            await tree.sleep(RETRY_SECONDS)
            for interest in tree.interests:
                if interest.everything is not None and not tree.stopped.is_set():
                    interest.deliver(interest.everything())


async def _guard(tree: Watched, restart: asyncio.Event) -> None:
    """Ends the watchfiles watch on a stop, or when the top folder is gone or replaced.

    A watch on a removed folder goes silent rather than ending. A folder made again may get the
    same inode, so its ctime is compared too (which also changes when an entry is added to it
    or removed: a restart then costs a second, and reports what each interest can list).
    """

    def identity() -> tuple[int, int] | None:
        try:
            st = tree.top.stat()
        except OSError:
            return None
        return st.st_ino, st.st_ctime_ns

    before = identity()
    while not tree.stopped.is_set():
        await tree.sleep(RETRY_SECONDS)
        now = identity()
        if now is None or now != before:
            break
    restart.set()
