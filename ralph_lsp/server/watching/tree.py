"""One inotify watch of a folder tree, its events offered to each of its interests.

Every folder of the tree gets a watch (but those ``skip(parent, name)`` refuses), a folder made
later gets one as it appears, and a folder removed loses its own: nothing polls, so an idle
server costs no CPU, and a save is seen as soon as it is complete. What the watch gives up on:

- the kernel's queue overflowed (events were lost): the tree is walked again, its new folders
  watched, and every interest told everything it wants;
- the top folder is gone (removed, moved, unmounted), or missing from the start: it is looked
  for every :data:`RETRY_SECONDS` and, once back, watched again and reported whole;
- the per-user limit on watches (``fs.inotify.max_user_watches``): the folders refused a watch
  are polled (``polling.py``) and offered to inotify again, the log saying so once;
- inotify cannot be had at all (another OS, the limit on instances, ``RALPH_WATCH=poll``), or
  refuses the first watches for another reason: watchfiles watches the tree (``fallback.py``).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from ralph_lsp.server.watching import fallback, inotify, polling
from ralph_lsp.server.watching.interests import ANY, Interest
from ralph_lsp.server.watching.watched import RunTask

log = logging.getLogger(__name__)

RETRY_SECONDS = 1.0
# The errors of inotify_add_watch that mean "no more watches": then polling takes over.
LIMIT_ERRNOS = (errno.ENOSPC, errno.ENOMEM)
_MISSING = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
MASK = (
    ANY
    | inotify.IN_DELETE_SELF
    | inotify.IN_MOVE_SELF
    | inotify.IN_ONLYDIR
    | inotify.IN_DONT_FOLLOW
)
_GONE = inotify.IN_DELETE_SELF | inotify.IN_MOVE_SELF | inotify.IN_UNMOUNT
_MADE = inotify.IN_CREATE | inotify.IN_MOVED_TO
_REMOVED = inotify.IN_DELETE | inotify.IN_MOVED_FROM


def _no_skip(parent: str, name: str) -> bool:
    return False


class TreeWatcher:
    """Offers each change under ``top`` to ``interests``; ``stop()`` ends it."""

    def __init__(
        self,
        top: Path,
        interests: Sequence[Interest],
        run_task: RunTask,
        *,
        skip: Callable[[str, str], bool] | None = None,
        arm_now: bool = True,
    ) -> None:
        """``arm_now``: the watches are in place when this returns (else the task adds them)."""
        self.top = top
        self.interests = list(interests)
        self.skip = _no_skip if skip is None else skip
        self.run_task = run_task
        self.stopped = asyncio.Event()
        self._wake = asyncio.Event()  # stopped, or the top folder went away
        self._warned = False
        self._ino = inotify.open_inotify()
        self._dirs: dict[int, Path] = {}  # watch descriptor → folder
        self._wds: dict[Path, int] = {}  # and back
        self._top_wd: int | None = None
        self._reading = False
        self._limit_told = False
        self.poller = polling.Poller(self)
        self.armed = False
        if self._ino is not None and arm_now:
            try:
                self.arm()  # in place before the first edit; events queue until the loop reads
            except OSError as exc:
                self._give_up_inotify(exc)
        if self._ino is not None:
            self.task = run_task(self._run_inotify(), f"watch {top}")
        else:
            self.task = run_task(fallback.watch(self), f"watch {top}")

    @property
    def backend(self) -> str:
        if self._ino is None:
            return "watchfiles"
        return "inotify+polling" if self.poller.folders else "inotify"

    @property
    def polled_count(self) -> int:
        """How many folders are polled because inotify refused them a watch."""
        return len(self.poller.folders)

    def stop(self) -> None:
        self.stopped.set()
        self._wake.set()
        for interest in self.interests:
            interest.stop()
        self.poller.stop()
        self._close_inotify()

    def warn_once(self, message: str, *args: object) -> None:
        if not self._warned:
            self._warned = True
            log.warning(message, *args)

    async def sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self.stopped.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    # -- the watches ---------------------------------------------------------------------------

    def arm(self, found: set[str] | None = None) -> bool:
        """Watch the tree (the files met added to ``found``); False if the top folder is missing.

        Raises :class:`OSError` when inotify refuses for another reason than the limit."""
        if not self.top.is_dir():
            return False
        self.add_tree(self.top, found, strict=True)
        self.armed = True
        self.tell_limit()
        return True

    def add_tree(self, folder: Path, found: set[str] | None, *, strict: bool = False) -> None:
        """Watch ``folder`` and every folder below it; the files met are added to ``found``.

        Top down (a folder is watched before it is listed, so that nothing made meanwhile is
        missed) and breadth first: past the watch limit, the folders polled are the deepest
        (a change's ``specs/`` before the change folder that holds its tasks.md)."""
        todo = deque([folder])
        while todo:
            here = todo.popleft()
            if not self.add_watch(here, strict=strict):
                continue
            try:
                entries = list(os.scandir(here))
            except OSError:
                continue
            parent = str(here)
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if not self.skip(parent, entry.name):
                        todo.append(Path(entry.path))
                elif found is not None:
                    found.add(entry.path)

    def add_watch(self, folder: Path, *, strict: bool = False) -> bool:
        """Watch one folder; when inotify has no watch left, poll it instead. False if it is
        gone (or is a symbolic link). ``strict``: other refusals are raised, not logged."""
        ino = self._ino
        assert ino is not None
        if folder in self._wds:
            return True
        try:
            wd = ino.add_watch(str(folder), MASK)
        except OSError as exc:
            if exc.errno in _MISSING:
                return False
            if exc.errno in LIMIT_ERRNOS:  # fs.inotify.max_user_watches is used up
                self.poller.add(folder)
                return True
            if strict:
                raise
            self.warn_once("watching %s failed (%s); its edits on disk are not seen", folder, exc)
            return True
        self.watched(wd, folder)
        return True

    def watched(self, wd: int, folder: Path) -> None:
        self._dirs[wd] = folder
        self._wds[folder] = wd
        if folder == self.top:
            self._top_wd = wd

    def try_watch(self, folder: Path) -> bool | None:
        """(Polling) one more try: True if watched now, None if the limit still holds."""
        assert self._ino is not None
        try:
            wd = self._ino.add_watch(str(folder), MASK)
        except OSError as exc:
            return None if exc.errno in LIMIT_ERRNOS else False
        self.watched(wd, folder)
        return True

    def remove_tree(self, folder: Path) -> None:
        """Forget the watches of ``folder`` and the folders below it (gone, or moved away)."""
        for wd, path in list(self._dirs.items()):
            if path == folder or path.is_relative_to(folder):
                del self._dirs[wd]
                self._wds.pop(path, None)
                if self._ino is not None:
                    self._ino.rm_watch(wd)
        self.poller.drop(folder)

    def disarm(self) -> None:
        if self._ino is not None:
            for wd in self._dirs:
                self._ino.rm_watch(wd)
        self._dirs.clear()
        self._wds.clear()
        self._top_wd = None
        self.poller.drop(self.top)
        self.armed = False

    def tell_limit(self) -> None:
        """Say once how many folders are watched and how many polled, when the limit was met."""
        if self._limit_told or not self.poller.folders:
            return
        self._limit_told = True
        log.warning(
            "watching %s: the inotify watch limit is reached (fs.inotify.max_user_watches);"
            " %d folder(s) watched with inotify, %d polled every %g s%s."
            " Raise the limit (sysctl fs.inotify.max_user_watches) to watch them all.",
            self.top,
            len(self._dirs),
            len(self.poller.folders),
            polling.POLL_SECONDS,
            f", {self.top.name}/ itself among them" if self.top in self.poller.folders else "",
        )

    def _give_up_inotify(self, exc: OSError) -> None:
        log.info("inotify on %s failed (%s); using watchfiles instead", self.top, exc)
        self.disarm()
        self._close_inotify()
        self._ino = None

    def _close_inotify(self) -> None:
        ino = self._ino
        if ino is None or ino.fd < 0:
            return
        if self._reading:
            self._reading = False
            try:
                asyncio.get_running_loop().remove_reader(ino.fd)
            except RuntimeError:  # no loop running any more: closing the descriptor suffices
                pass
        ino.close()

    # -- what happened -------------------------------------------------------------------------

    def file_event(self, path: str, mask: int) -> None:
        for interest in self.interests:
            interest.event(path, mask)

    def folder_made(self, path: Path, *, moved: bool) -> None:
        """A folder appeared (made, or moved in whole): watch it, report what it holds."""
        found: set[str] = set()
        if self.armed and not self.skip(str(path.parent), path.name):
            self.add_tree(path, found)
            self.tell_limit()
        for interest in self.interests:
            paths = {Path(p) for p in found if interest.wants(p)}
            interest.queue(paths | interest.folder(path, True, moved), now=True)

    def folder_removed(self, path: Path) -> None:
        self.remove_tree(path)
        for interest in self.interests:
            interest.queue(interest.folder(path, False, True), now=False)

    def lost(self) -> None:
        """The top folder is gone: the run loop waits for it to come back."""
        self.disarm()
        self._wake.set()

    def report_everything(self, found: set[str]) -> None:
        """Events may have been lost: each interest is told everything it wants."""
        for interest in self.interests:
            if interest.everything is not None:
                paths = interest.everything()
            else:
                paths = {Path(p) for p in found if interest.wants(p)}
            interest.queue(paths, now=True)

    def _rescan(self) -> None:
        found: set[str] = set()
        self.add_tree(self.top, found)  # a folder watched already keeps its descriptor
        self.tell_limit()
        self.report_everything(found)

    def _on_readable(self) -> None:
        ino = self._ino
        if ino is None or ino.fd < 0:
            return
        try:
            events = ino.read()
        except OSError as exc:
            self.warn_once("reading the watch on %s failed (%s)", self.top, exc)
            return
        overflow = gone = False
        for wd, mask, name in events:
            if mask & inotify.IN_Q_OVERFLOW:
                overflow = True  # events were lost: look at everything again
                continue
            folder = self._dirs.get(wd)
            if folder is None:
                continue
            if mask & inotify.IN_IGNORED:
                del self._dirs[wd]  # its folder is gone (its parent reports that)
                if self._wds.get(folder) == wd:
                    del self._wds[folder]
                gone = gone or wd == self._top_wd
                continue
            if mask & _GONE:
                gone = gone or wd == self._top_wd
                continue
            if not name:
                continue
            path = folder / name
            if not mask & inotify.IN_ISDIR:
                self.file_event(str(path), mask)
            elif mask & _MADE:
                self.folder_made(path, moved=bool(mask & inotify.IN_MOVED_TO))
            elif mask & _REMOVED:
                self.folder_removed(path)
        if gone:
            self.lost()
        elif overflow:
            self._rescan()

    async def _run_inotify(self) -> None:
        ino = self._ino
        assert ino is not None
        if self.stopped.is_set() or ino.fd < 0:
            return
        loop = asyncio.get_running_loop()
        loop.add_reader(ino.fd, self._on_readable)
        self._reading = True
        try:
            lost = False
            while not self.stopped.is_set():
                if not self.armed:
                    found: set[str] = set()
                    try:
                        armed = self.arm(found if lost else None)
                    except OSError as exc:
                        self._give_up_inotify(exc)
                        await fallback.watch(self)
                        return
                    if not armed:
                        lost = True
                        await self.sleep(RETRY_SECONDS)
                        continue
                    if lost:  # a change may have happened while the folder was away
                        self.report_everything(found)
                    lost = False
                await self._wake.wait()
                self._wake.clear()
                if not self.stopped.is_set():
                    self.disarm()
                lost = True
        finally:
            self._close_inotify()
