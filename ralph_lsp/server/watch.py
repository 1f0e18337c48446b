"""Watching each root's ``openspec/changes/`` for tasks.md edits made outside the editor.

The folder is watched, not the files: editors and agents save by writing a temporary file and
renaming it over tasks.md, and a watch on the file itself loses it after the first such save.
``debounce=50, step=10`` delivers a single write in about 10–20 ms.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import watchfiles

from ralph_lsp.workspace import CHANGES

log = logging.getLogger(__name__)

RETRY_SECONDS = 1.0
# awatch gives no sign of when the OS watch is in place; an edit made before that would be
# missed, so the stats of every tasks.md are compared once after this delay.
SETTLE_SECONDS = 0.3


def _is_tasks_md(_change: watchfiles.Change, path: str) -> bool:
    return os.path.basename(path) == "tasks.md"


class RootWatcher:
    """Calls ``on_change(paths)`` with the tasks.md paths that changed under one root."""

    def __init__(
        self,
        root: Path,
        on_change: Callable[[set[Path]], None],
        run_task: Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]],
    ) -> None:
        self.root = root
        self._on_change = on_change
        self._stop = asyncio.Event()
        self._reported = False
        self._before = self._snapshot()
        self.task = run_task(self._run(), f"watch {root}")

    def stop(self) -> None:
        self._stop.set()

    def _snapshot(self) -> dict[Path, tuple[int, int, int] | None]:
        out: dict[Path, tuple[int, int, int] | None] = {}
        for path in (self.root / CHANGES).glob("*/tasks.md"):
            try:
                st = path.stat()
            except OSError:
                out[path] = None
            else:
                out[path] = (st.st_mtime_ns, st.st_size, st.st_ino)
        return out

    async def _settle(self) -> None:
        before = self._before
        await self._sleep(SETTLE_SECONDS)
        if self._stop.is_set():
            return
        after = self._snapshot()
        changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
        if changed:
            self._on_change(changed)

    async def _run(self) -> None:
        settle = asyncio.ensure_future(self._settle())
        try:
            await self._watch(self.root / CHANGES)
        finally:
            settle.cancel()

    async def _watch(self, folder: Path) -> None:
        while not self._stop.is_set():
            if not folder.is_dir():
                await self._sleep(RETRY_SECONDS)
                continue
            try:
                async for changes in watchfiles.awatch(
                    folder,
                    watch_filter=_is_tasks_md,
                    debounce=50,
                    step=10,
                    debug=False,
                    stop_event=self._stop,
                    recursive=True,
                    ignore_permission_denied=True,
                ):
                    self._on_change({Path(p) for _, p in changes})
            except Exception as exc:  # the folder vanished, too many watches, …
                if not self._reported:
                    self._reported = True
                    log.warning("watching %s failed (%s); retrying", folder, exc)
            if not self._stop.is_set():
                # awatch returned without a stop: the folder went away. A change may have
                # happened meanwhile, so report every tasks.md once it is back.
                await self._sleep(RETRY_SECONDS)
                self._on_change(set(folder.glob("*/tasks.md")))

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass
