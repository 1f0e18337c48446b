"""tasks.md as it is now: the editor's unsaved buffer when open, the disk otherwise.

Disk bytes are read here (replacement decoding, CRLF kept) rather than through pygls's
disk-backed documents, which decode strictly and normalise newlines. Parsed documents are cached
by the buffer's version, or by the file's (mtime_ns, size, inode); the file watcher also drops
a path's cache entry, so an edit inside one timestamp tick that keeps the size (`[ ]` → `[x]`)
is never missed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ralph_lsp.openspec.tasks import MAX_TASKS_BYTES, NotARegularFile, TasksDoc, read_tasks_text
from ralph_lsp.openspec.tasks_fast import parse_tasks


@dataclass(frozen=True)
class DocState:
    path: Path
    text: str
    doc: TasksDoc
    version: int | None  # the buffer's version; None when read from disk
    from_buffer: bool
    too_large: int = 0  # the size of a buffer too large to analyse (then it counts as empty)

    @cached_property
    def lines(self) -> list[str]:
        """The text split on "\\n" as the counting does; split when first needed (most files
        of a sweep over every change have no finding to place: 10,000 splits took 0.2 s)."""
        return self.text.split("\n") if not self.too_large else []

    def line(self, n: int) -> str:
        """Line ``n`` without a trailing ``\\r`` ("" past the end)."""
        if 0 <= n < len(self.lines):
            text = self.lines[n]
            return text[:-1] if text.endswith("\r") else text
        return ""


log = logging.getLogger(__name__)


def _state(path: Path, text: str, version: int | None, from_buffer: bool) -> DocState:
    return DocState(path, text, parse_tasks(text), version, from_buffer)


def _buffer_state(path: Path, text: str, version: int | None) -> DocState:
    if len(text) > MAX_TASKS_BYTES:  # a pasted 50 MB: not analysed (it would cost ~30× in memory)
        return DocState(path, "", parse_tasks(""), version, True, too_large=len(text))
    return _state(path, text, version, True)


def read_disk_text(path: Path) -> str | None:
    """The file's text, or None when it is missing or not a readable file."""
    try:
        return read_tasks_text(path)
    except NotARegularFile as exc:  # a FIFO, a device, over 16 MiB: 0/0 and a warning
        log.warning("%s; counted as 0/0 tasks", exc)
        return None
    except OSError:  # unreadable (permissions, I/O error): shown as no tasks, never a crash
        return None


BufferReader = Callable[[str], tuple[int | None, str] | None]


class DocumentStore:
    """Open buffers and cached disk reads of tasks.md files, keyed by resolved path."""

    def __init__(self, read_buffer: BufferReader) -> None:
        self._read_buffer = read_buffer
        self._open: dict[Path, str] = {}  # path → the URI the client opened it under
        # What was on disk when a buffer was opened or last saved: while the buffer equals it,
        # it holds no edits of its own and the disk wins (so editors that do not reload files
        # by themselves show the agent's progress too).
        self._baseline: dict[Path, str | None] = {}
        self._buffer_cache: dict[Path, DocState] = {}
        self._unmodified: dict[Path, int | None] = {}  # path → buffer version equal to baseline
        self._disk_cache: dict[Path, tuple[tuple[int, int, int], DocState]] = {}

    # -- editor buffers --------------------------------------------------------------------

    def opened(self, path: Path, uri: str) -> None:
        self._open[path] = uri
        self._forget_buffer(path)
        self._baseline[path] = read_disk_text(path)

    def saved(self, path: Path) -> None:
        if path in self._open:
            self._forget_buffer(path)
            self._baseline[path] = read_disk_text(path)

    def closed(self, path: Path) -> None:
        self._open.pop(path, None)
        self._baseline.pop(path, None)
        self._forget_buffer(path)

    def _forget_buffer(self, path: Path) -> None:
        self._buffer_cache.pop(path, None)
        self._unmodified.pop(path, None)

    def is_open(self, path: Path) -> bool:
        return path in self._open

    def open_paths(self) -> list[Path]:
        return list(self._open)

    def uri_for(self, path: Path) -> str:
        """The URI to publish under: the client's own when open, the file URI otherwise."""
        return self._open.get(path) or path.as_uri()

    # -- disk ------------------------------------------------------------------------------

    def invalidate(self, path: Path) -> None:
        self._disk_cache.pop(path, None)

    def get(self, path: Path) -> DocState:
        """The document now: an open buffer with edits of its own wins, the disk otherwise
        (missing: no tasks)."""
        uri = self._open.get(path)
        buffer = self._read_buffer(uri) if uri is not None else None
        if buffer is None:
            return self.get_disk(path)
        version, text = buffer
        if version is not None and self._unmodified.get(path, -1) == version:
            return self.get_disk(path)
        cached = self._buffer_cache.get(path)
        if cached is not None and version is not None and cached.version == version:
            return cached
        if text == self._baseline.get(path):
            self._unmodified[path] = version
            return self.get_disk(path)
        state = _buffer_state(path, text, version)
        self._buffer_cache[path] = state
        return state

    def get_disk(self, path: Path) -> DocState:
        try:
            st = os.stat(path)
        except OSError:
            self._disk_cache.pop(path, None)
            return _state(path, "", None, False)
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        hit = self._disk_cache.get(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        text = read_disk_text(path)
        state = _state(path, text or "", None, False)
        self._disk_cache[path] = (key, state)
        return state
