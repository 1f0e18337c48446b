"""A small inotify(7) binding over ctypes, for a file watch that never polls.

Linux only: :func:`open_inotify` returns ``None`` where inotify is missing (another OS, a libc
without it, a sandbox that forbids it), and callers fall back to another watch. The descriptor
is non-blocking and close-on-exec (agents must not inherit it); read it when the event loop
says it is readable. The other watch is watchfiles (``fallback.py``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from typing import NamedTuple

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000

IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)
_READ_SIZE = 64 * 1024


class Event(NamedTuple):
    wd: int
    mask: int
    name: str


class Inotify:
    """One inotify instance: add and remove watches, read what happened."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self._libc = libc
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self.fd: int = fd

    def add_watch(self, path: str, mask: int) -> int:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_add_watch: {os.strerror(err)}", path)
        return int(wd)

    def rm_watch(self, wd: int) -> None:
        # EINVAL: the kernel removed it already (the folder is gone); nothing to do.
        self._libc.inotify_rm_watch(self.fd, wd)

    def read(self) -> list[Event]:
        """Every event queued now (none when there is nothing to read)."""
        events: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                return events
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            if not data:
                return events
            offset, end = 0, len(data)
            while offset + _HEADER.size <= end:
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                raw = data[offset : offset + length].split(b"\0", 1)[0]
                offset += length
                events.append(Event(wd, mask, os.fsdecode(raw)))

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            finally:
                self.fd = -1


_libc: ctypes.CDLL | None = None


def _load_libc() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        libc = None
        # The interpreter's own symbols hold libc's; find_library would start ldconfig.
        for name in (None, "libc.so.6"):
            try:
                candidate = ctypes.CDLL(name, use_errno=True)
                for fn in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch"):
                    getattr(candidate, fn)
            except (OSError, AttributeError):
                continue
            libc = candidate
            break
        if libc is None:
            return None
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        _libc = libc
    return _libc


def open_inotify() -> Inotify | None:
    """A new instance, or ``None`` where inotify cannot be used (the caller falls back)."""
    if not sys.platform.startswith("linux") or os.environ.get("RALPH_WATCH") == "poll":
        return None
    libc = _load_libc()
    if libc is None:
        return None
    try:
        return Inotify(libc)
    except OSError:  # EMFILE: the per-user limit on instances; ENOSYS in some sandboxes
        return None
