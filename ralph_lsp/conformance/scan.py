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
from collections.abc import Iterable, Iterator, Sequence
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


def walk_entries(
    root: Path, skip: frozenset[str], *, others: bool = False
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relative path with ``/``, entry) of every regular file below ``root`` (with ``others``,
    of every link, FIFO or device too), not entering ``skip`` folders nor any link; unreadable
    folders are passed over. The kinds come from the folder listing itself (no stat per file)."""
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in skip:
                        stack.append(path)
                elif others or entry.is_file(follow_symlinks=False):
                    yield path, entry
            except OSError:
                continue


def walk_files(
    root: Path, skip: frozenset[str], *, others: bool = False
) -> Iterator[tuple[str, os.stat_result]]:
    """:func:`walk_entries` with each file's lstat."""
    for rel, entry in walk_entries(root, skip, others=others):
        try:
            yield rel, entry.stat(follow_symlinks=False)
        except OSError:
            continue


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
        data = os.read(fd, st.st_size + 1)  # a buffer of the file's size, not of the cap
        while len(data) > st.st_size and len(data) <= size_cap:  # it grew since the stat
            more = os.read(fd, size_cap + 1 - len(data))
            if not more:
                break
            data += more
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if len(data) > size_cap else data.decode("utf-8", errors="replace")


def _through_link(root: Path, rel: str) -> bool:
    """Whether a folder on the way from ``root`` to ``rel`` is a link (never followed)."""
    folder = str(root)
    for part in rel.split("/")[:-1]:
        folder = os.path.join(folder, part)
        if os.path.islink(folder):
            return True
    return False


class Scanner:
    """The mentions of a root's test files, re-read only where a file changed."""

    def __init__(self, root: Path, globs: Sequence[str] = DEFAULT_TEST_GLOBS) -> None:
        self.root = root
        self.pattern = compile_globs(globs)  # ValueError for a bad glob
        self.files: dict[str, FileMentions] = {}
        self.warnings: list[str] = []  # of the last scan
        self.reads = 0  # files read by the last scan (what the incremental rescan saves)

    def _one(self, rel: str, st: os.stat_result) -> FileMentions | None:
        """A file's mentions, from the cache when its stamp is unchanged (None: too large)."""
        stamp = (st.st_mtime_ns, st.st_size)
        known = self.files.get(rel)
        if known is not None and known.stamp == stamp:
            return known
        if st.st_size > MAX_TEST_FILE_BYTES:
            self.warnings.append(
                f"{rel}: {st.st_size:,} bytes, over the {MAX_TEST_FILE_BYTES >> 20} MiB"
                " read for a test file: not scanned"
            )
            return None
        text = read_small(f"{self.root}/{rel}", MAX_TEST_FILE_BYTES)
        self.reads += 1
        return FileMentions(stamp, tuple(mentions(rel, text)) if text is not None else ())

    def scan(self) -> dict[str, tuple[Mention, ...]]:
        """Every test file's mentions now (files without any are left out): the whole root
        walked, only the changed files read."""
        seen: dict[str, FileMentions] = {}
        self.warnings, self.reads = [], 0
        for rel, entry in walk_entries(self.root, SKIP_DIRS):
            if not self.pattern.fullmatch(rel):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and (found := self._one(rel, st)) is not None:
                seen[rel] = found
        self.files = seen
        return self.linked()

    def update(self, changed: Iterable[str]) -> dict[str, tuple[Mention, ...]]:
        """The mentions after the files ``changed`` (relative paths) changed, were made or
        removed, without walking the root: what the server calls on a file-change event."""
        self.warnings, self.reads = [], 0
        for rel in changed:
            rel = rel.replace(os.sep, "/")
            found = None
            skipped = any(part in SKIP_DIRS for part in rel.split("/")[:-1])
            if self.pattern.fullmatch(rel) and not skipped and not _through_link(self.root, rel):
                try:
                    st = os.lstat(os.path.join(self.root, rel))
                except OSError:
                    st = None
                if st is not None and stat.S_ISREG(st.st_mode):
                    found = self._one(rel, st)
            if found is None:
                self.files.pop(rel, None)
            else:
                self.files[rel] = found
        return self.linked()

    def linked(self) -> dict[str, tuple[Mention, ...]]:
        """The files with mentions, as last scanned."""
        return {rel: f.mentions for rel, f in self.files.items() if f.mentions}
