"""Watching each root's ``openspec/changes/`` for tasks.md edits made outside the editor.

The folders are watched, not the files: editors and agents save by writing a temporary file and
renaming it over tasks.md, and a watch on the file itself loses it after the first such save.

On Linux the watch is inotify on the event loop (:mod:`ralph_lsp.server.inotify`): ``changes/``
and each change folder in it. Nothing polls, so an idle server costs no CPU, and a save is seen as
soon as it is complete: a ``close`` after writing, or the rename of an atomic save, is handed
over at once; other events (a file still being written, a deletion that may be followed by a
new file) wait :data:`SETTLE_EVENTS` seconds for the rest. Elsewhere, or where inotify cannot be
had (another OS, the per-user limit on inotify instances), watchfiles does the watching; it
polls its queue every ``step`` ms and hands over a single write after about 10–20 ms.
``RALPH_WATCH=poll`` in the server's environment forces that fallback.

The per-user limit on inotify *watches* (``fs.inotify.max_user_watches``, 8,192 on many systems,
shared with the editor's own watches) is met differently: watchfiles would need the same watches.
Change folders that get no watch have their tasks.md compared by ``stat`` every
:data:`POLL_SECONDS` (and ``changes/`` is listed too when even its own watch was refused); each
sweep tries to watch them again, so they move back to inotify once watches are free. The log
says so once per root, with how many folders each watcher has.

Long: one watcher of one root is one state machine over three sources (inotify, watchfiles and
the stat sweep) that hand each folder over to one another as watches come and go; split by
source, every hand-over would cross a file boundary.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.workspace import CHANGES, root_of_file
from ralph_lsp.server import inotify

log = logging.getLogger(__name__)

TASKS_MD = "tasks.md"


def _tracked(path: Path) -> bool:
    """A change's task file other than tasks.md: the file its schema tracks (SPEC §11)."""
    return path.suffix == ".md" and root_of_file(path) is not None


RETRY_SECONDS = 1.0
# awatch gives no sign of when the OS watch is in place; an edit made before that would be
# missed, so the stats of every tasks.md are compared once after this delay.
SETTLE_SECONDS = 0.3
# Events that may be followed by more of the same save wait this long before they are handed
# over (a truncation before the write, a deletion before the new file).
SETTLE_EVENTS = 0.02
# Folders inotify refused a watch for (the per-user limit) are compared this often.
POLL_SECONDS = 1.0
# ...and offered to inotify again this often (watches may have been freed meanwhile).
REWATCH_SECONDS = 10.0
# The errors of inotify_add_watch that mean "no more watches": then polling takes over.
_LIMIT_ERRNOS = (errno.ENOSPC, errno.ENOMEM)

Stat = tuple[int, int, int] | None  # (mtime_ns, size, inode) of a tasks.md; None when missing

_FOLDER_MASK = (
    inotify.IN_CREATE
    | inotify.IN_DELETE
    | inotify.IN_MOVED_FROM
    | inotify.IN_MOVED_TO
    | inotify.IN_DELETE_SELF
    | inotify.IN_MOVE_SELF
    | inotify.IN_ONLYDIR
)
_CHANGE_MASK = (
    inotify.IN_MODIFY
    | inotify.IN_ATTRIB
    | inotify.IN_CLOSE_WRITE
    | inotify.IN_CREATE
    | inotify.IN_DELETE
    | inotify.IN_MOVED_FROM
    | inotify.IN_MOVED_TO
    | inotify.IN_ONLYDIR
    | inotify.IN_DONT_FOLLOW
)
# A save is complete: hand it over now.
_COMPLETE = inotify.IN_CLOSE_WRITE | inotify.IN_MOVED_TO
_GONE = inotify.IN_DELETE_SELF | inotify.IN_MOVE_SELF | inotify.IN_UNMOUNT


class RootWatcher:
    """Calls ``on_change(paths)`` with the tasks.md paths that changed under one root."""

    def __init__(
        self,
        root: Path,
        on_change: Callable[[set[Path]], None],
        run_task: Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]],
    ) -> None:
        self.root = root
        self.folder = root / CHANGES
        self._on_change = on_change
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()  # stopped, or the watched folder went away
        self._reported = False
        self._ino = inotify.open_inotify()
        self._dirs: dict[int, Path] = {}  # watch descriptor → folder
        self._folder_wd: int | None = None
        self._pending: set[Path] = set()
        self._flush_handle: asyncio.TimerHandle | None = None
        self._reading = False
        # inotify refused these change folders a watch: tasks.md path → its last stat.
        self._polled: dict[Path, Stat] = {}
        self._poll_listing = False  # even changes/ has no watch: list it on every sweep
        self._listed: set[str] = set()  # the change folders the last listing saw
        self._poller: asyncio.Task[None] | None = None
        self._run_task = run_task
        self._limit_told = False
        self._before: dict[Path, Stat] = {}
        if self._ino is not None:
            try:
                # In place before the first edit can happen; events queue until the loop reads.
                self._arm()
            except OSError as exc:
                self._give_up_inotify(exc)
        if self._ino is not None:
            self.task = run_task(self._run_inotify(), f"watch {root}")
        else:
            self._before = self._snapshot()
            self.task = run_task(self._run_watchfiles(), f"watch {root}")

    @property
    def backend(self) -> str:
        if self._ino is None:
            return "watchfiles"
        return "inotify+polling" if self._polled or self._poll_listing else "inotify"

    @property
    def polled_count(self) -> int:
        """How many change folders are polled because inotify refused them a watch."""
        return len(self._polled)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._poller is not None:
            self._poller.cancel()
        self._close_inotify()

    # -- inotify -------------------------------------------------------------------------------

    def _warn_once(self, message: str, *args: object) -> None:
        if not self._reported:
            self._reported = True
            log.warning(message, *args)

    def _give_up_inotify(self, exc: OSError) -> None:
        """inotify refused (the per-user limit on watches, mostly): watchfiles takes over."""
        log.info("inotify on %s failed (%s); using watchfiles instead", self.folder, exc)
        self._disarm()
        self._close_inotify()
        self._ino = None

    def _arm(self) -> bool:
        """Watch ``changes/`` and each change folder in it; False if ``changes/`` is missing.

        Raises :class:`OSError` when inotify refuses for another reason.
        """
        ino = self._ino
        assert ino is not None
        try:
            wd = ino.add_watch(str(self.folder), _FOLDER_MASK)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return False
            if exc.errno not in _LIMIT_ERRNOS:
                raise
            # Not even changes/ gets a watch: list it on every sweep, and poll every change.
            wd = None
            self._poll_listing = True
            self._start_polling()
        self._folder_wd = wd
        if wd is not None:
            self._dirs[wd] = self.folder
        names = self._change_names()
        self._listed = set(names)
        for name in names:
            self._watch_change(name)
        self._tell_limit()
        return True

    def _change_names(self) -> list[str]:
        try:
            return [e.name for e in os.scandir(self.folder) if e.is_dir(follow_symlinks=False)]
        except OSError:
            return []

    def _watch_change(self, name: str) -> bool:
        """Watch one change folder; when inotify has no watch left, poll its tasks.md instead.

        False if the folder is gone (or is a symbolic link, which is no change)."""
        ino = self._ino
        assert ino is not None
        path = self.folder / name
        try:
            wd = ino.add_watch(str(path), _CHANGE_MASK)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return False
            if exc.errno in _LIMIT_ERRNOS:  # fs.inotify.max_user_watches is used up
                tasks = path / TASKS_MD
                if tasks not in self._polled:
                    self._polled[tasks] = _stat(tasks)
                    self._start_polling()
                return True
            self._warn_once("watching %s failed (%s); its edits on disk are not seen", path, exc)
            return True
        self._dirs[wd] = path
        return True

    def _unwatch_change(self, name: str) -> None:
        path = self.folder / name
        self._polled.pop(path / TASKS_MD, None)
        for wd, folder in list(self._dirs.items()):
            if folder == path:
                del self._dirs[wd]
                if self._ino is not None:
                    self._ino.rm_watch(wd)

    def _disarm(self) -> None:
        if self._ino is not None:
            for wd in self._dirs:
                self._ino.rm_watch(wd)
        self._dirs.clear()
        self._folder_wd = None
        self._polled.clear()
        self._poll_listing = False

    # -- polling what inotify has no watch for -------------------------------------------------

    def _tell_limit(self) -> None:
        """Say once which watcher has which folders, when the watch limit was met."""
        if self._limit_told or not (self._polled or self._poll_listing):
            return
        self._limit_told = True
        watched = sum(1 for folder in self._dirs.values() if folder != self.folder)
        log.warning(
            "watching %s: the inotify watch limit is reached (fs.inotify.max_user_watches);"
            " %d change folder(s) watched with inotify, %d polled every %g s%s."
            " Raise the limit (sysctl fs.inotify.max_user_watches) to watch them all.",
            self.folder,
            watched,
            len(self._polled),
            POLL_SECONDS,
            ", and changes/ itself listed at each poll" if self._poll_listing else "",
        )

    def _start_polling(self) -> None:
        if self._poller is None or self._poller.done():
            self._poller = self._run_task(self._poll(), f"poll {self.folder}")

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        rewatch_at = loop.time() + REWATCH_SECONDS
        while not self._stop.is_set() and (self._polled or self._poll_listing):
            await self._sleep(POLL_SECONDS)
            if self._stop.is_set() or self._ino is None:
                return
            rewatch = loop.time() >= rewatch_at
            if rewatch:
                rewatch_at = loop.time() + REWATCH_SECONDS
            changed = self._sweep(rewatch)
            if changed:
                self._queue(changed, now=True)

    def _sweep(self, rewatch: bool) -> set[Path]:
        """One poll: the polled tasks.md files that changed (and, when changes/ has no watch,
        the change folders that came or went); with ``rewatch``, inotify is asked again."""
        changed: set[Path] = set()
        if self._poll_listing:
            changed |= self._sweep_listing(rewatch)
        ino = self._ino if rewatch else None
        for tasks, before in list(self._polled.items()):
            if ino is not None:
                try:
                    wd = ino.add_watch(str(tasks.parent), _CHANGE_MASK)
                except OSError as exc:
                    if exc.errno in _LIMIT_ERRNOS:
                        ino = None  # still no watch free: the others would be refused too
                else:  # watched again; the stat below catches an edit made before that
                    self._dirs[wd] = tasks.parent
                    del self._polled[tasks]
            now = _stat(tasks)
            if now != before:
                changed.add(tasks)
                if tasks in self._polled:
                    self._polled[tasks] = now
        return changed

    def _sweep_listing(self, rewatch: bool) -> set[Path]:
        ino = self._ino
        assert ino is not None
        changed: set[Path] = set()
        if not self.folder.is_dir():
            self._wake.set()  # the folder is gone: _run_inotify waits for it to come back
            return changed
        names = set(self._change_names())
        for name in names - self._listed:
            if self._watch_change(name):
                changed.add(self.folder / name / TASKS_MD)
        for name in self._listed - names:
            self._unwatch_change(name)
            changed.add(self.folder / name / TASKS_MD)
        self._listed = names
        if rewatch:
            try:
                wd = ino.add_watch(str(self.folder), _FOLDER_MASK)
            except OSError:
                return changed
            self._folder_wd = wd
            self._dirs[wd] = self.folder
            self._poll_listing = False
        return changed

    def _close_inotify(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
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

    async def _run_inotify(self) -> None:
        ino = self._ino
        assert ino is not None
        if self._stop.is_set() or ino.fd < 0:
            return
        loop = asyncio.get_running_loop()
        loop.add_reader(ino.fd, self._on_readable)
        self._reading = True
        try:
            lost = False
            while not self._stop.is_set():
                if self._folder_wd is None and not self._poll_listing:  # not armed yet
                    try:
                        armed = self._arm()
                    except OSError as exc:
                        self._give_up_inotify(exc)
                        await self._run_watchfiles()
                        return
                    if not armed:
                        lost = True
                        await self._sleep(RETRY_SECONDS)
                        continue
                    if lost:
                        # A change may have happened while the folder was away.
                        self._queue(set(self.folder.glob(f"*/{TASKS_MD}")), now=True)
                    lost = False
                await self._wake.wait()
                self._wake.clear()
                if not self._stop.is_set():
                    self._disarm()
                lost = True
        finally:
            self._close_inotify()

    def _on_readable(self) -> None:
        ino = self._ino
        if ino is None or ino.fd < 0:
            return
        try:
            events = ino.read()
        except OSError as exc:
            self._warn_once("reading the watch on %s failed (%s)", self.folder, exc)
            return
        changed: set[Path] = set()
        complete = False
        for wd, mask, name in events:
            if mask & inotify.IN_Q_OVERFLOW:
                # Events were lost: look at everything again.
                changed.update(self.folder.glob(f"*/{TASKS_MD}"))
                if self._folder_wd is not None:
                    for child in self._change_names():
                        self._watch_change(child)
                    self._tell_limit()
                complete = True
                continue
            folder = self._dirs.get(wd)
            if folder is None:
                continue
            if wd == self._folder_wd:
                if mask & (_GONE | inotify.IN_IGNORED):
                    self._disarm()
                    self._wake.set()  # _run_inotify waits for the folder to come back
                    continue
                if not mask & inotify.IN_ISDIR:
                    continue
                if mask & (inotify.IN_CREATE | inotify.IN_MOVED_TO):
                    self._watch_change(name)
                    self._tell_limit()
                    tasks = self.folder / name / TASKS_MD
                    if mask & inotify.IN_MOVED_TO or tasks.exists():
                        changed.add(tasks)
                        complete = True
                elif mask & (inotify.IN_DELETE | inotify.IN_MOVED_FROM):
                    self._unwatch_change(name)
                    changed.add(self.folder / name / TASKS_MD)
                continue
            if mask & inotify.IN_IGNORED:
                self._dirs.pop(wd, None)  # the change folder is gone (reported by its parent)
                continue
            if name == TASKS_MD or _tracked(folder / name):
                changed.add(folder / name)
                if mask & _COMPLETE:
                    complete = True
        if changed:
            self._queue(changed, now=complete)

    def _queue(self, paths: set[Path], *, now: bool) -> None:
        self._pending |= paths
        if now:
            if self._flush_handle is not None:
                self._flush_handle.cancel()
                self._flush_handle = None
            self._flush()
        elif self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(SETTLE_EVENTS, self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        paths, self._pending = self._pending, set()
        if paths and not self._stop.is_set():
            try:
                self._on_change(paths)
            except Exception:
                log.exception("handling a change of %s failed", ", ".join(map(str, paths)))

    # -- watchfiles (elsewhere) ----------------------------------------------------------------

    def _snapshot(self) -> dict[Path, Stat]:
        return {path: _stat(path) for path in self.folder.glob(f"*/{TASKS_MD}")}

    async def _settle(self) -> None:
        before = self._before
        await self._sleep(SETTLE_SECONDS)
        if self._stop.is_set():
            return
        after = self._snapshot()
        changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
        if changed:
            self._on_change(changed)

    async def _run_watchfiles(self) -> None:
        settle = asyncio.ensure_future(self._settle())
        try:
            await self._watchfiles(self.folder)
        finally:
            settle.cancel()

    async def _watchfiles(self, folder: Path) -> None:
        top = str(folder)

        def wanted(path: str) -> bool:
            # a tasks.md, or a change folder made, moved or removed whole
            name = os.path.basename(path)
            return name == TASKS_MD or os.path.dirname(path) == top or _tracked(Path(path))

        def tasks_of(path: str) -> Path:
            p = Path(path)
            return p if p.name == TASKS_MD or _tracked(p) else p / TASKS_MD

        while not self._stop.is_set():
            if not folder.is_dir():
                await self._sleep(RETRY_SECONDS)
                continue
            restart = asyncio.Event()
            guard = asyncio.ensure_future(self._guard(folder, restart))
            try:
                async for changes in inotify.fallback_watch(folder, wanted, restart):
                    self._on_change({tasks_of(p) for p in changes})
            except Exception as exc:  # the folder vanished, too many watches, …
                self._warn_once("watching %s failed (%s); retrying", folder, exc)
            finally:
                guard.cancel()
            if not self._stop.is_set():
                # The folder went away (or was replaced). A change may have happened
                # meanwhile, so report every tasks.md once it is back.
                await self._sleep(RETRY_SECONDS)
                self._on_change(set(folder.glob(f"*/{TASKS_MD}")))

    async def _guard(self, folder: Path, restart: asyncio.Event) -> None:
        """Ends the watchfiles watch on a stop, or when ``folder`` is gone or replaced.

        A watch on a removed folder goes silent rather than ending. A folder made again may
        get the same inode, so its ctime is compared too (which also changes when a change
        folder is added or removed: a restart then costs a second, and reports every tasks.md).
        """

        def identity() -> tuple[int, int] | None:
            try:
                st = folder.stat()
            except OSError:
                return None
            return st.st_ino, st.st_ctime_ns

        before = identity()
        while not self._stop.is_set():
            await self._sleep(RETRY_SECONDS)
            now = identity()
            if now is None or now != before:
                break
        restart.set()

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass


def _stat(path: Path) -> Stat:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino
