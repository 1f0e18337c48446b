"""Writing under ``.ralph/`` without following a stranger's symbolic link (SPEC §9).

A cloned repository can ship ``.ralph/live`` (or ``.ralph/locks``, ``.ralph/runs``, ``.ralph``
itself) as a symbolic link to a folder outside; ``O_NOFOLLOW`` on the last component would not
see it. So every folder below the workspace root is opened one component at a time with
``O_DIRECTORY | O_NOFOLLOW`` from the folder above's descriptor, and the file operation itself
(create, replace, unlink, rename, lock) is done relative to the last folder's descriptor
(``dir_fd=``): no path is resolved again after the check, so a link swapped in meanwhile is not
followed either. ``.ralph`` must be a real folder owned by this user. A refusal is
:class:`UnsafeFolder` (an ``OSError``) naming the link.

Which part is guarded is read from the path: everything below its last ``.ralph`` component
(the workspace root above it is the user's own choice and may be a link).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

HISTORY_DIR = ".ralph"
# What opening a link with O_NOFOLLOW gives: ELOOP, ENOTDIR (with O_DIRECTORY, Linux), EMLINK (BSD).
_LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFolder(OSError):
    """A folder under ``.ralph/`` is a symbolic link, or ``.ralph`` is not this user's."""


def is_guarded(path: Path) -> bool:
    """Whether ``path`` lies at or under a ``.ralph`` folder."""
    return HISTORY_DIR in path.parts


def _split(folder: Path) -> tuple[Path, tuple[str, ...]]:
    parts = folder.parts
    at = len(parts) - 1 - parts[::-1].index(HISTORY_DIR)
    return Path(*parts[:at]) if at else Path("."), parts[at:]


def _open_child(parent: int, name: str, shown: Path, create: bool) -> int:
    if name in ("", ".", "..") or "/" in name:
        raise UnsafeFolder(errno.EINVAL, f"{shown} is not a plain folder name; refused")
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _refusal(parent: int, name: str, shown: Path) -> OSError:
    """UnsafeFolder for a link; a plain ``ENOTDIR`` for a file in the way (history is then
    kept in memory, as when ``.ralph`` cannot be written)."""
    try:
        is_link = stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode)
    except OSError:
        is_link = False
    if not is_link:
        return NotADirectoryError(errno.ENOTDIR, f"{shown} is not a folder")
    return UnsafeFolder(
        errno.ELOOP,
        f"{shown} is a symbolic link; ralph-lsp writes nothing through it (remove it, or the"
        f" whole {HISTORY_DIR} folder, to go on)",
    )


def _open_guarded(part: str, parent: int, shown: Path, create: bool) -> int:
    try:
        return _open_child(parent, part, shown, create)
    except OSError as exc:
        if isinstance(exc, UnsafeFolder) or exc.errno not in _LINK_ERRORS:
            raise
        raise _refusal(parent, part, shown) from None


def open_folder(folder: Path, *, create: bool = False) -> int:
    """A descriptor of ``folder`` (at or under a ``.ralph``), every component below the root
    opened with ``O_NOFOLLOW``; made on the way when ``create``. Raises UnsafeFolder (a link,
    ``.ralph`` not ours) or another OSError (missing, a file in the way, no permission)."""
    if not is_guarded(folder):
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    root, parts = _split(folder)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = root
    try:
        for i, part in enumerate(parts):
            shown = shown / part
            child = _open_guarded(part, fd, shown, create)
            os.close(fd)
            fd = child
            if i == 0 and os.fstat(fd).st_uid != os.getuid():
                raise UnsafeFolder(errno.EPERM, f"{shown} is not owned by you; refused")
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def folder(path: Path, *, create: bool = False) -> Iterator[int]:
    """:func:`open_folder` as a context (the descriptor closed at its end)."""
    fd = open_folder(path, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def list_names(path: Path) -> list[str]:
    """The names in a folder under ``.ralph``, sorted; [] when it is missing or is a link."""
    try:
        with folder(path) as fd:
            return sorted(os.listdir(fd))
    except OSError:
        return []


def check_children(fd: int, shown: Path, names: tuple[str, ...]) -> None:
    """None of ``names`` in the open folder ``fd`` is a symbolic link: a link there is refused
    up front, naming it, before anything is written. Raises UnsafeFolder."""
    for name in names:
        try:
            mode = os.lstat(name, dir_fd=fd).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise _refusal(fd, name, shown / name)


def make_folder(path: Path) -> None:
    """``mkdir -p`` of a folder under ``.ralph``, never through a link."""
    with folder(path, create=True):
        pass


def write_text(path: Path, text: str, mode: int = 0o600) -> None:
    """Write ``path`` atomically (a temporary file flushed, then renamed over it), its folder
    opened as :func:`open_folder` does; readers and crashes see a whole file only."""
    write_stream(path, lambda f: f.write(text), mode)


def write_stream(path: Path, write: Callable[[IO[str]], object], mode: int = 0o600) -> None:
    """:func:`write_text` of what ``write`` writes to the file (UTF-8 text), streamed: a large
    file (a long run's record) is never held as one string."""
    with folder(path.parent, create=True) as dfd:
        tmp = f".tmp-{os.urandom(6).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dfd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise


def unlink(path: Path) -> None:
    """Remove the file ``path`` (never a file reached through a link). Raises OSError."""
    with folder(path.parent) as dfd:
        os.unlink(path.name, dir_fd=dfd)


def rename(src: Path, dst: Path) -> None:
    """Rename within one folder (``src`` and ``dst`` siblings). Raises OSError."""
    with folder(src.parent) as dfd:
        os.rename(src.name, dst.name, src_dir_fd=dfd, dst_dir_fd=dfd)


def open_file(path: Path, flags: int, mode: int = 0o644, *, create_folder: bool = False) -> int:
    """``os.open`` of ``path`` (``O_NOFOLLOW`` added) relative to its guarded folder."""
    with folder(path.parent, create=create_folder) as dfd:
        return os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)


def opener(create_folder: bool = False) -> Callable[[str, int], int]:
    """An ``open(..., opener=)`` that opens each file through :func:`open_file`."""

    def _open(name: str, flags: int) -> int:
        return open_file(Path(name), flags, create_folder=create_folder)

    return _open


def remove_tree(path: Path) -> None:
    """``rm -r`` of a folder under ``.ralph``, never through a link (errors ignored)."""
    with contextlib.suppress(OSError), folder(path.parent) as dfd:
        _remove_in(dfd, path.name)


def _remove_in(dfd: int, name: str) -> None:
    """Remove ``name`` of the open folder ``dfd``: a file or link itself, a folder's content
    first (each sub-folder opened with ``O_NOFOLLOW``)."""
    try:
        os.unlink(name, dir_fd=dfd)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass  # a folder (EISDIR on Linux, EPERM on macOS)
    fd = os.open(name, _DIR_FLAGS, dir_fd=dfd)
    try:
        for entry in os.listdir(fd):
            _remove_in(fd, entry)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dfd)
