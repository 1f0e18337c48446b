"""Watching each root's ``openspec/`` tree for the files OpenSpec validation reads (SPEC §11).

inotify on the event loop, one watch per folder under ``openspec/`` (``changes/archive`` and
hidden folders left out), a folder made later watched as it appears: nothing polls, so an idle
server costs no CPU. Where inotify cannot be had, or a watch is refused (the per-user limit),
watchfiles watches the tree instead.

The same watcher, given another folder, filter and folders to pass over, watches a project's
test files for the conformance lenses (``server/conformance_view.py``): the same fallback to
watchfiles when the first watches are refused, the same warning for a folder made later whose
watch is refused.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from ralph_lsp.server import inotify

log = logging.getLogger(__name__)

SETTLE_EVENTS = 0.02  # a burst of events (a save, a checkout) is handed over as one
_MASK = (
    inotify.IN_CLOSE_WRITE
    | inotify.IN_CREATE
    | inotify.IN_DELETE
    | inotify.IN_MOVED_FROM
    | inotify.IN_MOVED_TO
    | inotify.IN_ONLYDIR
    | inotify.IN_DONT_FOLLOW
)


def wanted(path: str) -> bool:
    """A file validation reads: Markdown and YAML, outside archived changes."""
    return path.endswith((".md", ".yaml")) and "/changes/archive/" not in path


def _spec_skip(parent: str, name: str) -> bool:
    """Folders the spec watch passes over: hidden ones and ``changes/archive``."""
    return name.startswith(".") or (name == "archive" and parent.endswith("changes"))


class SpecTreeWatcher:
    """Calls ``on_change(paths)`` with the files under ``root/openspec`` that changed."""

    def __init__(
        self,
        root: Path,
        on_change: Callable[[set[Path]], None],
        run_task: Callable[[Coroutine[Any, Any, Any], str], asyncio.Task[Any]],
        *,
        folder: Path | None = None,
        wanted: Callable[[str], bool] = wanted,
        skip: Callable[[str, str], bool] | None = None,
    ) -> None:
        """``folder`` (default ``root/openspec``) watched for the files ``wanted`` accepts,
        never entering a folder ``skip(parent, name)`` refuses (default: hidden folders and
        ``changes/archive``)."""
        self.folder = root / "openspec" if folder is None else folder
        self._wanted = wanted
        self._skip = _spec_skip if skip is None else skip
        self._on_change = on_change
        self._dirs: dict[int, Path] = {}
        self._pending: set[Path] = set()
        self._flush: asyncio.TimerHandle | None = None
        self._ino = inotify.open_inotify()
        self._task = run_task(self._run(), f"watch {self.folder}")

    def stop(self) -> None:
        self._task.cancel()

    async def _run(self) -> None:
        ino = self._ino
        if ino is not None:
            try:
                self._watch_tree(self.folder)
            except OSError as exc:
                log.info("inotify on %s refused (%s); watchfiles watches it", self.folder, exc)
                ino.close()
                ino = None
        if ino is None:
            await self._watchfiles()
            return
        loop = asyncio.get_running_loop()
        loop.add_reader(ino.fd, self._readable)
        try:
            await asyncio.Event().wait()  # until stopped
        finally:
            loop.remove_reader(ino.fd)
            ino.close()

    def _watch_tree(self, top: Path) -> None:
        assert self._ino is not None
        for folder, dirs, _ in os.walk(top):
            dirs[:] = [d for d in dirs if not self._skip(folder, d)]
            try:
                self._dirs[self._ino.add_watch(folder, _MASK)] = Path(folder)
            except FileNotFoundError:
                continue

    def _readable(self) -> None:
        assert self._ino is not None
        for wd, mask, name in self._ino.read():
            folder = self._dirs.get(wd)
            if mask & inotify.IN_IGNORED:
                self._dirs.pop(wd, None)
            if folder is None or not name:
                continue
            path = folder / name
            if mask & inotify.IN_ISDIR:
                made = mask & (inotify.IN_CREATE | inotify.IN_MOVED_TO)
                if made and not self._skip(str(folder), name):
                    try:
                        self._watch_tree(path)
                    except OSError as exc:
                        log.warning(
                            "cannot watch %s (%s): its edits on disk are not seen", path, exc
                        )
                    self._pending |= {p for p in path.rglob("*") if self._wanted(str(p))}
                if self._wanted(str(path / "spec.md")):
                    self._pending.add(path / "spec.md")  # a capability made or removed whole
            elif self._wanted(str(path)):
                self._pending.add(path)
        if self._pending and self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(SETTLE_EVENTS, self._hand_over)

    def _hand_over(self) -> None:
        self._flush = None
        paths, self._pending = self._pending, set()
        try:
            self._on_change(paths)
        except Exception:
            log.exception("validating after a change of %s failed", ", ".join(map(str, paths)))

    async def _watchfiles(self) -> None:
        while True:
            if not self.folder.is_dir():
                await asyncio.sleep(1.0)
                continue
            try:
                async for changes in inotify.fallback_watch(self.folder, self._wanted):
                    self._on_change({Path(p) for p in changes})
            except Exception as exc:  # the folder vanished, too many watches, …
                log.warning("watching %s failed (%s); retrying", self.folder, exc)
            await asyncio.sleep(1.0)
