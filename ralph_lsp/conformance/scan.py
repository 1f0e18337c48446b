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
from pathlib import Path
from typing import NamedTuple

from ralph_lsp.bursts import collector_paused
from ralph_lsp.conformance.globs import DEFAULT_TEST_GLOBS, SKIP_DIRS, TestGlobs
from ralph_lsp.conformance.links import Mention, mentions
from ralph_lsp.openspec.regular_files import read_regular_text

#: A test file larger than this is not read (and said once per scan).
MAX_TEST_FILE_BYTES = 2 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class FileMentions(NamedTuple):
    stamp: tuple[int, int]  # (mtime_ns, size) when read
    mentions: tuple[Mention, ...]


# A cold scan makes one for each of thousands of files: tuple's own constructor, without the
# Python-level __new__ a NamedTuple has.
_file_mentions = tuple.__new__


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
    None when it cannot be read or is over ``size_cap``: the product's one reader of files it
    did not write (:func:`~ralph_lsp.openspec.regular_files.read_regular_text`)."""
    try:
        return read_regular_text(Path(path), size_cap, follow=False)
    except OSError:
        return None


#: Folders nested deeper than this below the root are not walked (and said once).
MAX_DEPTH = 64


def _read_rest(fd: int, data: bytes, size_cap: int) -> bytes | None:
    """A file that grew since its stat (``data`` its first read): read on to ``size_cap``,
    None when over it."""
    while len(data) <= size_cap:
        more = os.read(fd, size_cap + 1 - len(data))
        if not more:
            break
        data += more
    return None if len(data) > size_cap else data


def walk_folders(
    root: Path, skip: frozenset[str], warnings: list[str]
) -> Iterator[tuple[str, int, list[os.DirEntry[str]]]]:
    """(relative folder with ``/``, its open descriptor, its regular files) of every folder
    below ``root``, as :func:`walk_entries` walks them but each folder opened from its parent's
    descriptor (``O_NOFOLLOW``: a folder swapped for a link mid-walk is not entered), so what is
    done with a file is relative to its folder: one path lookup each. The descriptor is valid
    until the next item; at most :data:`MAX_DEPTH` folders are open (deeper ones are said in
    ``warnings``)."""
    try:  # the root itself may be reached through a link (a workspace opened by one)
        top = os.open(root, _FOLDER_FLAGS & ~os.O_NOFOLLOW)
    except OSError:
        return
    frames: list[tuple[str, int, list[str]]] = []  # (relative folder, descriptor, subfolders)
    pending: tuple[str, int] | None = ("", top)
    try:
        while pending is not None or frames:
            if pending is not None:
                rel, fd = pending
                pending = None
                subfolders: list[str] = []
                frames.append((rel, fd, subfolders))
                yield rel, fd, _listing(fd, skip, subfolders)
                continue
            rel, fd, subfolders = frames[-1]
            if not subfolders:
                os.close(frames.pop()[1])
                continue
            name = subfolders.pop()
            path = f"{rel}/{name}" if rel else name
            if len(frames) >= MAX_DEPTH:
                warnings.append(f"{path}: deeper than {MAX_DEPTH} folders: not scanned")
                continue
            try:
                pending = (path, os.open(name, _FOLDER_FLAGS, dir_fd=fd))
            except OSError:
                continue
    finally:
        for _rel, fd, _subs in frames:
            os.close(fd)


def _listing(fd: int, skip: frozenset[str], subfolders: list[str]) -> list[os.DirEntry[str]]:
    """The regular files of the open folder ``fd`` (the kinds from the listing itself: no stat
    per file); its subfolders not in ``skip`` are added to ``subfolders``."""
    try:
        with os.scandir(fd) as listing:
            entries = list(listing)
    except OSError:
        return []
    files = []
    for entry in entries:
        try:
            if entry.is_file(follow_symlinks=False):  # the most of them: one call each
                files.append(entry)
            elif entry.is_dir(follow_symlinks=False) and entry.name not in skip:
                subfolders.append(entry.name)
        except OSError:
            continue
    return files


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
        self.pattern = TestGlobs(globs)  # ValueError for a bad glob
        self.files: dict[str, FileMentions] = {}
        self.warnings: list[str] = []  # of the last scan
        self.reads = 0  # files read by the last scan (what the incremental rescan saves)

    def _too_large(self, rel: str, size: int) -> None:
        self.warnings.append(
            f"{rel}: {size:,} bytes, over the {MAX_TEST_FILE_BYTES >> 20} MiB"
            " read for a test file: not scanned"
        )

    def _one(self, rel: str, st: os.stat_result) -> FileMentions | None:
        """A file's mentions, from the cache when its stamp is unchanged (None: too large)."""
        stamp = (st.st_mtime_ns, st.st_size)
        known = self.files.get(rel)
        if known is not None and known.stamp == stamp:
            return known
        if st.st_size > MAX_TEST_FILE_BYTES:
            self._too_large(rel, st.st_size)
            return None
        text = read_small(f"{self.root}/{rel}", MAX_TEST_FILE_BYTES)
        self.reads += 1
        return FileMentions(stamp, tuple(mentions(rel, text)) if text is not None else ())

    def _fresh(self, rel: str, name: str, folder: int) -> FileMentions | None:
        """A file not in the cache: opened in its folder (``folder``, a descriptor), its stamp
        from the open file itself, so one path lookup and no separate stat. None: not a regular
        file, unreadable or too large. (:func:`read_small`'s steps, written out: a cold scan's
        cost is its system calls and the few steps around each, for thousands of files.)"""
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=folder)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            size = st.st_size
            if st.st_mode & 0o170000 != stat.S_IFREG:  # stat.S_ISREG, without its call
                return None
            if size > MAX_TEST_FILE_BYTES:
                self._too_large(rel, size)
                return None
            first = os.read(fd, size + 1)  # a buffer of the file's size
            # (longer: it grew since the stat)
            data = first if len(first) <= size else _read_rest(fd, first, MAX_TEST_FILE_BYTES)
        except OSError:
            return None
        finally:
            os.close(fd)
        self.reads += 1
        # Most test files name no scenario, and are not decoded: the two searches mentions()
        # begins with, of the bytes. (Counted in instructions: a search of a lowered copy costs
        # four times these, the copy a pass with a table lookup per byte; and `b"…" in data`
        # more than `find`, as bytes' `in` first tries its operand as an integer, formatting
        # the TypeError it then drops.)
        if data is None or (data.find(b"cenario:") < 0 and data.find(b"CENARIO:") < 0):
            return _file_mentions(FileMentions, ((st.st_mtime_ns, size), ()))
        found = tuple(mentions(rel, data.decode("utf-8", errors="replace")))
        return _file_mentions(FileMentions, ((st.st_mtime_ns, size), found))

    def _known(
        self, rel: str, entry: os.DirEntry[str], folder: int, known: FileMentions
    ) -> FileMentions | None:
        """A file in the cache: kept when its stamp is unchanged, else read again."""
        try:
            st = entry.stat(follow_symlinks=False)  # fstatat in the open folder
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        if known.stamp == (st.st_mtime_ns, st.st_size):
            return known
        return self._fresh(rel, entry.name, folder)

    @collector_paused  # a cold scan: a few tuples for each of thousands of files
    def scan(self) -> dict[str, tuple[Mention, ...]]:
        """Every test file's mentions now (files without any are left out): the whole root
        walked, only the changed files read."""
        seen: dict[str, FileMentions] = {}
        self.warnings, self.reads = [], 0
        cached, fresh = self.files, self._fresh
        name_match, path_match = self.pattern.name_match, self.pattern.path_match
        for folder_rel, folder, entries in walk_folders(self.root, SKIP_DIRS, self.warnings):
            prefix = f"{folder_rel}/" if folder_rel else ""
            for entry in entries:
                name = entry.name
                rel = prefix + name
                if name_match(name) is None and path_match(rel) is None:
                    continue
                known = cached.get(rel)
                if known is None:
                    found = fresh(rel, name, folder)
                else:
                    found = self._known(rel, entry, folder, known)
                if found is not None:
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
