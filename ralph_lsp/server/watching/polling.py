"""The folders of a tree inotify refused a watch (the per-user limit), polled instead.

The limit on watches (``fs.inotify.max_user_watches``, 8,192 on many systems, shared with the
editor's own watches) cannot be met by watchfiles, which would need the same watches. So a
folder that gets no watch is listed every :data:`POLL_SECONDS`, and what differs from its last
listing (a file whose stat changed, came or went; a folder that came or went) is handed to the
tree as the events inotify would have given. Every :data:`REWATCH_SECONDS` each one is offered
to inotify again, and moves back once watches are free.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from ralph_lsp.server.watching import inotify
from ralph_lsp.server.watching.watched import Watched

# Folders inotify refused a watch for are listed this often.
POLL_SECONDS = 1.0
# ...and offered to inotify again this often (watches may have been freed meanwhile).
REWATCH_SECONDS = 10.0

Stat = tuple[int, int, int] | None  # (mtime_ns, size, inode) of a file; None for a folder
Listing = dict[str, Stat]

_CHANGED = inotify.IN_CLOSE_WRITE  # a complete save: a polled change is handed over at once
_MADE = inotify.IN_CLOSE_WRITE | inotify.IN_CREATE


def listing(folder: Path) -> Listing | None:
    """What ``folder`` holds now, or None when it is gone."""
    out: Listing = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        out[entry.name] = None
                        continue
                    st = entry.stat()
                except OSError:
                    continue
                out[entry.name] = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return None
    return out


class Poller:
    """The polled folders of one tree, with their last listing."""

    def __init__(self, tree: Watched) -> None:
        self.tree = tree
        self.folders: dict[Path, Listing] = {}
        self._task: asyncio.Task[None] | None = None

    def add(self, folder: Path) -> None:
        if folder not in self.folders:
            self.folders[folder] = listing(folder) or {}
        if self._task is None or self._task.done():
            self._task = self.tree.run_task(self._run(), f"poll {self.tree.top}")

    def drop(self, folder: Path) -> None:
        """Forget ``folder`` and the folders below it."""
        for path in [p for p in self.folders if p == folder or p.is_relative_to(folder)]:
            del self.folders[path]

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        tree = self.tree
        loop = asyncio.get_running_loop()
        rewatch_at = loop.time() + REWATCH_SECONDS
        while not tree.stopped.is_set() and self.folders:
            await tree.sleep(POLL_SECONDS)
            if tree.stopped.is_set() or not tree.armed:
                return
            rewatch = loop.time() >= rewatch_at
            if rewatch:
                rewatch_at = loop.time() + REWATCH_SECONDS
            self.sweep(rewatch)

    def sweep(self, rewatch: bool) -> None:
        """One poll of every polled folder; with ``rewatch``, inotify is asked again."""
        tree = self.tree
        limit_held = not rewatch
        for folder, before in list(self.folders.items()):
            if folder not in self.folders or not tree.armed:
                continue  # dropped meanwhile: removed (as a parent's listing said), or lost
            now = listing(folder)
            if now is None:
                if folder == tree.top:
                    tree.lost()  # the run loop waits for it to come back
                    return
                continue  # its parent says it is gone
            self.folders[folder] = now
            if not limit_held:
                got = tree.try_watch(folder)
                if got is None:
                    limit_held = True  # still no watch free: the others would be refused too
                elif got:  # watched again; this listing catches an edit made before that
                    del self.folders[folder]
            self._compare(folder, before, now)

    def _compare(self, folder: Path, before: Listing, now: Listing) -> None:
        tree = self.tree
        for name in before.keys() - now.keys():
            if before[name] is None:
                tree.folder_removed(folder / name)
            else:
                tree.file_event(str(folder / name), inotify.IN_DELETE)
        for name, stat in now.items():
            if name not in before or (before[name] is None) != (stat is None):
                if name in before and before[name] is None:
                    tree.folder_removed(folder / name)
                if stat is None:
                    tree.folder_made(folder / name, moved=True)
                else:
                    tree.file_event(str(folder / name), _MADE)
            elif stat is not None and stat != before[name]:
                tree.file_event(str(folder / name), _CHANGED)
