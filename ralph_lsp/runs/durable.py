"""A run's record made durable off the event loop: the atomic write's ``fsync`` and rename done
by a thread of their own.

A record is rewritten on every change of its run (each task checked, each iteration's start);
with several runs in one server, the ``fsync`` of each rewrite, on the loop, held every
request behind it for tens to hundreds of milliseconds on a busy disk. :func:`write_later`
writes the temporary file where it is called (into the page cache: the cost of the JSON
only), and leaves flushing it to the disk and renaming it over the record to one writer
thread, in the order of the calls. A newer version of a file still waiting replaces the older
one (only the newest is flushed: readers would never have seen the older one for longer than
a moment anyway).

What readers and crashes see is unchanged: a whole file, the previous version until the new
one is on disk. In this process :func:`settle` waits for a file's pending version (history's
readers call it), a synchronous write of the same file waits for it first
(:func:`write_now`), and every pending version is written before the process exits
(:func:`settle_all`: at the interpreter's exit, and before ``os._exit``). A background
failure (a full disk) is raised by the file's next write or settle, where ``RunHistory``
turns it into its usual handling.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ralph_lsp.runs import safe_dir


@dataclass
class _Job:
    """A written temporary file waiting for its ``fsync`` and rename (its descriptors owned)."""

    dfd: int  # the guarded folder, opened as safe_dir opens it
    fd: int  # the temporary file, written and flushed to the page cache
    tmp: str
    name: str

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.tmp, dir_fd=self.dfd)
        self.close()

    def complete(self) -> None:
        try:
            os.fsync(self.fd)
            os.replace(self.tmp, self.name, src_dir_fd=self.dfd, dst_dir_fd=self.dfd)
        except BaseException:
            self.discard()
            raise
        self.close()

    def close(self) -> None:
        for fd in (self.fd, self.dfd):
            with contextlib.suppress(OSError):
                os.close(fd)


_lock = threading.Condition()
_queued: dict[str, _Job] = {}  # in call order; a newer version of a file replaces its job
_running: str | None = None  # the file whose job the writer is completing
_failed: dict[str, OSError] = {}
_writer: threading.Thread | None = None
#: How long the writer thread waits for more work before it ends.
IDLE_SECONDS = 5.0


def write_later(path: Path, write: Callable[[IO[str]], object], mode: int = 0o600) -> None:
    """``safe_dir.write_stream`` of ``path`` whose ``fsync`` and rename happen on the writer
    thread. Raises OSError (this write's, or the previous background one's of ``path``)."""
    key = os.path.abspath(path)
    _raise_failure(key)
    job = _write_tmp(path, write, mode)
    with _lock:
        old = _queued.pop(key, None)
        _queued[key] = job
        _start_writer()
    if old is not None:
        old.discard()  # superseded before it reached the disk


def write_now(path: Path, write: Callable[[IO[str]], object], mode: int = 0o600) -> None:
    """``safe_dir.write_stream`` of ``path`` once its pending version is settled (so that an
    older version is never renamed over this one)."""
    settle(path)
    safe_dir.write_stream(path, write, mode)


def settle(path: Path) -> None:
    """Wait until ``path`` has no pending version; raise its background failure, if any."""
    key = os.path.abspath(path)
    with _lock:
        while key in _queued or _running == key:  # the writer takes them in order
            _lock.wait()
    _raise_failure(key)


def settle_all(timeout: float = 5.0) -> bool:
    """Wait (at most ``timeout`` seconds) until every pending version is on disk: before the
    process ends without the interpreter's exit. False when some are still pending."""
    deadline = time.monotonic() + timeout
    with _lock:
        while _queued or _running is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _lock.wait(left)
    return True


def _write_tmp(path: Path, write: Callable[[IO[str]], object], mode: int) -> _Job:
    dfd = safe_dir.open_folder(path.parent, create=True)
    tmp = f".tmp-{os.urandom(6).hex()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dfd)
    except BaseException:
        os.close(dfd)
        raise
    job = _Job(dfd, fd, tmp, path.name)
    try:
        with os.fdopen(os.dup(fd), "w", encoding="utf-8") as f:
            write(f)
    except BaseException:
        job.discard()
        raise
    return job


def _raise_failure(key: str) -> None:
    with _lock:
        exc = _failed.pop(key, None)
    if exc is not None:
        raise exc


def _start_writer() -> None:
    """Under the lock: wake the writer thread, or start one (starting a thread waits until it
    runs: on a loaded machine that wait was a pause of the loop's own, once per burst). It
    stays :data:`IDLE_SECONDS` for more work; a daemon, so the interpreter's exit waits only
    for the pending versions (:func:`settle_all`, registered with ``atexit``)."""
    global _writer
    if _writer is None:
        _writer = threading.Thread(target=_drain, name="ralph-record-writer", daemon=True)
        _writer.start()
    else:
        _lock.notify_all()


def _drain() -> None:
    global _running, _writer
    while True:
        with _lock:
            if not _queued:
                _lock.notify_all()
                _lock.wait(IDLE_SECONDS)
            if not _queued:
                _writer = None
                return
            key = next(iter(_queued))
            job = _queued.pop(key)
            _running = key
        try:
            job.complete()
        except OSError as exc:
            with _lock:
                _failed[key] = exc
        finally:
            with _lock:
                _running = None
                _lock.notify_all()


atexit.register(settle_all)
