"""One run per change on the machine (SPEC §3): a run claims its change with an advisory lock
on ``.ralph/locks/<change>.lock``, held while its process lives; the kernel drops it however the
process ends, so a claim never goes stale. Also: which changes run now in a work tree (restore
refuses while any does).
"""

from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.openspec.tasks import NotARegularFile, open_regular
from ralph_lsp.runs import safe_dir
from ralph_lsp.runs.history import MAX_RECORD_BYTES, history_root, make_history_root
from ralph_lsp.runs.ids import change_name, child

LOCKS_DIR = "locks"


class ChangeBusy(Exception):
    """Another live process runs this change; the message names it."""


class ClaimRefused(ChangeBusy):
    """The claim's folder (``.ralph``, ``.ralph/locks``) is a symbolic link or not this user's:
    nothing is written through it, and the run does not start; the message names it."""


@dataclass(frozen=True)
class Owner:
    """The process running a change: its pid and run, as the claim names them."""

    pid: int
    run_id: str


def _lock_path(root: Path, change: str) -> Path:
    return child(history_root(root) / LOCKS_DIR, f"{change_name(change)}.lock")


def _open_lock(path: Path, flags: int = os.O_RDONLY, create: bool = False) -> int:
    """The lock file, its folders opened without following a link (safe_dir)."""
    with safe_dir.folder(path.parent, create=create) as dfd:
        return open_regular(path, MAX_RECORD_BYTES, follow=False, flags=flags, dir_fd=dfd)


class ChangeClaim:
    """A change claimed by this process for one run: an advisory lock (``flock``) on
    ``.ralph/locks/<change>.lock``, held while the run lasts. The kernel drops it when the
    process ends however it ends, so no claim can go stale; the file only names the owner.
    """

    def __init__(self, fd: int | None, warning: str | None = None) -> None:
        self._fd = fd
        #: Why the claim is empty when the lock is there but is not a regular file (to log).
        self.warning = warning

    @classmethod
    def take(cls, root: Path, change: str, run_id: str) -> ChangeClaim:
        """Claim ``change``; raises :class:`ChangeBusy` naming the live owner. Where history
        cannot be written, runs cannot be coordinated: the claim is empty. A lock that is not
        a regular file (a named pipe, a symlink, a folder) is ignored: the claim is empty and
        carries a warning."""
        path = _lock_path(root, change)
        try:
            make_history_root(root)
            fd = _open_lock(path, os.O_RDWR | os.O_CREAT, create=True)
        except safe_dir.UnsafeFolder as exc:
            raise ClaimRefused(f"change {change!r} cannot be claimed: {exc.strerror}") from None
        except (NotARegularFile, IsADirectoryError) as exc:
            return cls(None, _lock_ignored(exc, path))
        except OSError:
            return cls(None)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_owner(fd)
            os.close(fd)
            named = f"pid {owner.pid}, run {owner.run_id}" if owner else "pid unknown"
            raise ChangeBusy(
                f"change {change!r} is already running in another ralph-lsp process ({named})"
            ) from None
        except OSError:
            os.close(fd)
            return cls(None)
        with_owner = f"{os.getpid()} {run_id}\n".encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, with_owner, 0)
        return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the lock
            self._fd = None


def _lock_ignored(exc: OSError, path: Path) -> str:
    why = str(exc) if isinstance(exc, NotARegularFile) else f"{path} is a folder: not read"
    return f"{why}; this run is not guarded against a run of the same change in another process"


def _read_owner(fd: int) -> Owner | None:
    try:
        words = os.pread(fd, 200, 0).decode("ascii", "replace").split()
        return Owner(int(words[0]), words[1])
    except (OSError, ValueError, IndexError):
        return None


def running_elsewhere(root: Path, change: str) -> Owner | None:
    """The other live process that runs ``change`` now, if any (a cheap check: one open and a
    non-blocking shared lock attempt)."""
    try:  # never blocks: a named pipe planted there is not opened for good
        fd = _open_lock(_lock_path(root, change))
    except (OSError, ValueError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _read_owner(fd)
        return owner if owner and owner.pid != os.getpid() else None
    except OSError:
        return None
    finally:
        os.close(fd)  # also drops the shared lock just taken
    return None


def active_runs(root: Path) -> list[tuple[str, Owner | None]]:
    """Every change of ``root`` whose run is live now, in any process, this one included:
    (change, its owner as the claim names it). Only regular files under ``.ralph/locks/`` are
    looked at, opened non-blocking (a planted pipe never blocks)."""
    try:
        dfd = safe_dir.open_folder(history_root(root) / LOCKS_DIR)
    except OSError:
        return []
    try:
        return _active_in(dfd)
    finally:
        os.close(dfd)


def _active_in(dfd: int) -> list[tuple[str, Owner | None]]:
    names = sorted(n for n in os.listdir(dfd) if n.endswith(".lock"))
    found: list[tuple[str, Owner | None]] = []
    for name in names:
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(name, flags, dir_fd=dfd)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            found.append((name[: -len(".lock")], _read_owner(fd)))
        except OSError:
            continue
        finally:
            os.close(fd)  # also drops the shared lock just taken
    return found
