"""The project's test files scanned for scenario mentions, incrementally (SPEC §13 "Linked").

A :class:`Scanner` walks the root for the files ``ralph.conformance.testGlobs`` matches (never
into :data:`~ralph_lsp.conformance.globs.SKIP_DIRS`, never through a link, regular files only,
each at most :data:`MAX_TEST_FILE_BYTES`), and keeps each file's mentions keyed by its
(mtime_ns, size): a rescan stats every file and re-reads only those that changed, so the server
may call it on every file change and a run after every verification.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.conformance.globs import DEFAULT_TEST_GLOBS, SKIP_DIRS, compile_globs
from ralph_lsp.conformance.links import Mention, mentions

#: A test file larger than this is not read (and said once per scan).
MAX_TEST_FILE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class FileMentions:
    stamp: tuple[int, int]  # (mtime_ns, size) when read
    mentions: tuple[Mention, ...]


def walk_files(
    root: Path, skip: frozenset[str], *, others: bool = False
) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path with ``/``, lstat) of every regular file below ``root`` (with ``others``,
    of every link, FIFO or device too), not entering ``skip`` folders nor any link; unreadable
    folders are passed over."""
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel) if rel else root))
        except OSError:
            continue
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name not in skip:
                    stack.append(path)
            elif others or stat.S_ISREG(st.st_mode):
                yield path, st


def read_small(path: str, size_cap: int) -> str | None:
    """A regular file's text (never through a link, never blocking on a FIFO swapped in), or
    None when it cannot be read or is over ``size_cap``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > size_cap:
            return None
        data = os.read(fd, size_cap + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if len(data) > size_cap else data.decode("utf-8", errors="replace")


class Scanner:
    """The mentions of a root's test files, re-read only where a file changed."""

    def __init__(self, root: Path, globs: Sequence[str] = DEFAULT_TEST_GLOBS) -> None:
        self.root = root
        self.pattern = compile_globs(globs)  # ValueError for a bad glob
        self.files: dict[str, FileMentions] = {}
        self.warnings: list[str] = []  # of the last scan
        self.reads = 0  # files read by the last scan (what the incremental rescan saves)

    def scan(self) -> dict[str, tuple[Mention, ...]]:
        """Every test file's mentions now (files without any are left out)."""
        seen: dict[str, FileMentions] = {}
        self.warnings, self.reads = [], 0
        base = str(self.root)
        for rel, st in walk_files(self.root, SKIP_DIRS):
            if not self.pattern.fullmatch(rel):
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            known = self.files.get(rel)
            if known is not None and known.stamp == stamp:
                seen[rel] = known
                continue
            if st.st_size > MAX_TEST_FILE_BYTES:
                self.warnings.append(
                    f"{rel}: {st.st_size:,} bytes, over the {MAX_TEST_FILE_BYTES >> 20} MiB"
                    " read for a test file: not scanned"
                )
                continue
            text = read_small(os.path.join(base, rel), MAX_TEST_FILE_BYTES)
            self.reads += 1
            found = tuple(mentions(rel, text)) if text is not None else ()
            seen[rel] = FileMentions(stamp, found)
        self.files = seen
        return {rel: f.mentions for rel, f in seen.items() if f.mentions}
