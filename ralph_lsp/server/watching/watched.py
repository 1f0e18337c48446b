"""What the two helpers of a tree watch (``polling.py``, ``fallback.py``) may use of it: the
:class:`Watched` protocol, which :class:`~ralph_lsp.server.watching.tree.TreeWatcher` satisfies.

The helpers are below the watcher, not beside it: the watcher imports them, they import this.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from ralph_lsp.server.watching.interests import Interest

#: Starts and keeps a background task (the server's ``run_task``).
RunTask = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"]


class Watched(Protocol):
    """A tree watch as its poller and its watchfiles fallback see it."""

    top: Path
    interests: list[Interest]
    run_task: RunTask
    stopped: asyncio.Event
    armed: bool

    async def sleep(self, seconds: float) -> None: ...

    def warn_once(self, message: str, *args: object) -> None: ...

    def try_watch(self, folder: Path) -> bool | None: ...

    def file_event(self, path: str, mask: int) -> None: ...

    def folder_made(self, path: Path, *, moved: bool) -> None: ...

    def folder_removed(self, path: Path) -> None: ...

    def lost(self) -> None: ...
