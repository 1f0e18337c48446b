"""What a tree watcher's events are for: each :class:`Interest` takes the paths it wants.

One watch of a root's ``openspec/`` serves two readers: the agent's tasks.md edits
(:func:`tasks_interest`, for ``server/editing.py``) and the files OpenSpec validation reads
(:func:`spec_interest`, for ``server/validation.py``). The tree offers every event to each
interest; an interest keeps the paths it wants and hands them over in batches: at once when a
save is complete (``prompt``), else once :data:`SETTLE_EVENTS` seconds passed without more.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from ralph_lsp.openspec.workspace import ARCHIVE, CHANGES, root_of_file
from ralph_lsp.server.watching import inotify

log = logging.getLogger(__name__)

# Events that may be followed by more of the same save wait this long before they are handed
# over (a truncation before the write, a deletion before the new file, a checkout's burst).
SETTLE_EVENTS = 0.02
TASKS_MD = "tasks.md"

# The events of a file that end a save: a prompt interest hands these over at once.
COMPLETE = inotify.IN_CLOSE_WRITE | inotify.IN_MOVED_TO
# A file's events that say a save happened (a write still going on is left to its close).
SAVED = COMPLETE | inotify.IN_CREATE | inotify.IN_DELETE | inotify.IN_MOVED_FROM
# Every file event the tree watches for.
ANY = SAVED | inotify.IN_MODIFY | inotify.IN_ATTRIB

Folder = Callable[[Path, bool, bool], set[Path]]  # (folder, made, moved in or out) → paths


class Interest:
    """Paths one reader wants, batched and handed to ``on_change``.

    ``wants(path)`` says whether a file is of interest; ``events`` the inotify events of it
    that count; ``folder(path, made, moved)`` the paths to report when a folder is made or
    removed whole (``on_fallback``: under watchfiles too); ``everything()``, if given, what to
    report when events may have been lost (else every file the tree finds that it wants).
    """

    def __init__(
        self,
        wants: Callable[[str], bool],
        on_change: Callable[[set[Path]], None],
        *,
        prompt: bool = False,
        events: int = SAVED,
        folder: Folder | None = None,
        on_fallback: bool = False,
        everything: Callable[[], set[Path]] | None = None,
    ) -> None:
        self.wants = wants
        self.events = events
        self.folder = folder if folder is not None else self._spec_md
        self.on_fallback = on_fallback
        self.everything = everything
        self._on_change = on_change
        self._prompt = prompt
        self._pending: set[Path] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False

    def _spec_md(self, path: Path, made: bool, moved: bool) -> set[Path]:
        spec = path / "spec.md"
        return {spec} if self.wants(str(spec)) else set()  # a capability made or removed whole

    def event(self, path: str, mask: int) -> None:
        """One file event the tree saw."""
        if mask & self.events and self.wants(path):
            self.queue({Path(path)}, now=bool(mask & COMPLETE))

    def queue(self, paths: set[Path], *, now: bool) -> None:
        if not paths or self._stopped:
            return
        self._pending |= paths
        if now and self._prompt:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(SETTLE_EVENTS, self._flush)

    def _flush(self) -> None:
        self._timer = None
        paths, self._pending = self._pending, set()
        if paths and not self._stopped:
            self.deliver(paths)

    def deliver(self, paths: set[Path]) -> None:
        """Hand ``paths`` over now (a failure of the reader is logged, not raised)."""
        try:
            self._on_change(paths)
        except Exception:
            log.exception("handling a change of %s failed", ", ".join(map(str, paths)))

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def tasks_interest(root: Path, on_change: Callable[[set[Path]], None]) -> Interest:
    """A change's tasks.md, or the file its schema tracks (SPEC §11), changed on disk; a change
    folder made, moved or removed whole reports its tasks.md."""
    changes = root / CHANGES
    top = str(changes)

    def wants(path: str) -> bool:
        if not path.endswith(".md") or os.path.dirname(os.path.dirname(path)) != top:
            return False
        return root_of_file(Path(path)) is not None

    def folder(path: Path, made: bool, moved: bool) -> set[Path]:
        if path.parent != changes:
            return set()
        tasks = path / TASKS_MD
        return {tasks} if not made or moved or tasks.exists() else set()

    def everything() -> set[Path]:
        return set(changes.glob(f"*/{TASKS_MD}"))

    return Interest(
        wants,
        on_change,
        prompt=True,
        events=ANY,
        folder=folder,
        on_fallback=True,
        everything=everything,
    )


def spec_interest(root: Path, on_change: Callable[[set[Path]], None]) -> Interest:
    """A file OpenSpec validation reads: Markdown and YAML under ``openspec/``, outside archived
    changes and hidden folders."""
    top = str(root / "openspec")

    def wants(path: str) -> bool:
        if not path.endswith((".md", ".yaml")) or f"/{CHANGES.name}/{ARCHIVE}/" in path:
            return False
        return "/." not in os.path.dirname(path)[len(top) :]

    return Interest(wants, on_change)


def openspec_skip(root: Path) -> Callable[[str, str], bool]:
    """The folders a root's watch passes over: ``changes/archive`` and hidden folders, but for
    a hidden change folder (which is a change, as ``openspec list`` counts it)."""
    changes = str(root / CHANGES)

    def skip(parent: str, name: str) -> bool:
        if parent == changes:
            return name == ARCHIVE
        return name.startswith(".")

    return skip
