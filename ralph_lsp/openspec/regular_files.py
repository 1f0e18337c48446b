"""Reading only regular files (a FIFO, a device or a huge file under a stranger's project is
refused, never read), apart from :mod:`ralph_lsp.openspec.tasks` so that a reader of specs
imports no more than it."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotARegularFile(OSError):
    """A tasks.md (or record) that is not a regular file, or is over the size cap: never read,
    so that a FIFO cannot hang a reader and /dev/zero cannot fill its memory."""


def open_regular(
    path: Path,
    max_bytes: int,
    *,
    follow: bool = True,
    flags: int = os.O_RDONLY,
    mode: int = 0o644,
    dir_fd: int | None = None,
) -> int:
    """An fd for reading ``path``, only when it is a regular file of at most ``max_bytes``.

    The one way the product opens a file it did not just create (tasks.md, records, the lock
    of a change, the project's own files): opened non-blocking (opening a FIFO with no writer
    would wait forever) and checked with fstat on the open fd, so a swap between the check and
    the read cannot fool it. ``follow=False`` refuses a symlink too (files only the product
    writes, under ``.ralph/``); ``flags`` may add ``O_RDWR | O_CREAT``. Raises
    :class:`NotARegularFile` (an OSError) or the OSError of the open. With ``dir_fd``, the
    file ``path.name`` of that open folder is opened (``path`` names it in messages).
    """
    extra = 0 if follow else os.O_NOFOLLOW
    target = path if dir_fd is None else path.name
    try:
        fd = os.open(target, flags | extra | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:
            raise NotARegularFile(f"{path} is a symbolic link: not read") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(f"{path} is not a regular file ({_kind(st.st_mode)}): not read")
        if st.st_size > max_bytes:
            cap = f"{max_bytes >> 20} MiB"
            raise NotARegularFile(f"{path} is {st.st_size:,} bytes, over the {cap} read: not read")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


READ_CHUNK = 1 << 20
# what is read past a file's size, for the end (or a growth): under malloc's mmap threshold
GROWTH_CHUNK = 1 << 16


def read_regular(path: Path, max_bytes: int, *, follow: bool = True) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes`` (see
    :func:`open_regular`; a file that grows past the cap while read raises it too)."""
    fd = open_regular(path, max_bytes, follow=follow)
    try:
        return _read_fd(fd, path, max_bytes)
    finally:
        os.close(fd)


def _read_fd(fd: int, path: Path, max_bytes: int) -> bytes:
    """Up to the cap, by the file's size: a buffered ``read(max_bytes + 1)`` allocated the
    whole cap (64 MiB for a spec) for every read, an mmap, mremap and munmap of it per small
    file (about 25 µs of a validation's 43 reads each, four times the read itself)."""
    size = os.fstat(fd).st_size
    parts: list[bytes] = []
    got = 0
    while got <= max_bytes:  # past the size too: a file may grow while it is read
        chunk = os.read(fd, min(max_bytes + 1 - got, max(size + 1 - got, GROWTH_CHUNK)))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    if got > max_bytes:
        raise NotARegularFile(f"{path} grew past {max_bytes:,} bytes while read: not read")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_regular_text(path: Path, max_bytes: int, *, follow: bool = True) -> str:
    """:func:`read_regular` decoded as UTF-8 with replacement characters."""
    return read_regular(path, max_bytes, follow=follow).decode("utf-8", errors="replace")
