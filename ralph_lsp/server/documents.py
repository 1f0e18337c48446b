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
from pathlib import Path

from ralph_lsp.tasks import NotARegularFile, TasksDoc, parse_tasks, read_tasks_text


@dataclass(frozen=True)
class DocState:
    path: Path
    lines: list[str]  # split on "\n" as the counting does
    doc: TasksDoc
    version: int | None  # the buffer's version; None when read from disk
    from_buffer: bool

    def line(self, n: int) -> str:
        """Line ``n`` without a trailing ``\\r`` ("" past the end)."""
        if 0 <= n < len(self.lines):
            text = self.lines[n]
            return text[:-1] if text.endswith("\r") else text
        return ""


log = logging.getLogger(__name__)


def _state(path: Path, text: str, version: int | None, from_buffer: bool) -> DocState:
    return DocState(path, text.split("\n"), parse_tasks(text), version, from_buffer)


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
        self._buffer_cache: dict[Path, DocState] = {}
        self._disk_cache: dict[Path, tuple[tuple[int, int, int], DocState]] = {}

    # -- editor buffers --------------------------------------------------------------------

    def opened(self, path: Path, uri: str) -> None:
        self._open[path] = uri
        self._buffer_cache.pop(path, None)

    def closed(self, path: Path) -> None:
        self._open.pop(path, None)
        self._buffer_cache.pop(path, None)

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
        """The document now: the open buffer wins, the disk otherwise (missing: no tasks)."""
        uri = self._open.get(path)
        if uri is not None:
            buffer = self._read_buffer(uri)
            if buffer is not None:
                version, text = buffer
                cached = self._buffer_cache.get(path)
                if cached is not None and version is not None and cached.version == version:
                    return cached
                state = _state(path, text, version, True)
                self._buffer_cache[path] = state
                return state
        return self.get_disk(path)

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
