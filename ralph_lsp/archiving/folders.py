"""Folders of the project opened without following a link, for the archive's writes.

``openspec/archive_paths.py`` refuses a linked component before the first write; this is what
makes a link swapped in after that check lose as well. Every folder below the root is opened
one component at a time with ``O_DIRECTORY | O_NOFOLLOW`` from the folder above's descriptor,
and each file operation (create, replace, unlink, rename) is done relative to the last folder's
descriptor (``dir_fd=``): no path below the root is resolved again, so nothing is reached
through a link and everything stays inside the root. The root itself is the user's choice and
may be a link. A refusal is :class:`~ralph_lsp.openspec.archive_plan.ArchiveBlocked` with the
code ``archive_path_symlink`` (``archive_path_not_a_folder`` for a file in a folder's way),
naming the component.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ralph_lsp.openspec.archive_paths import link_message, not_a_folder_message, refusal_code
from ralph_lsp.openspec.archive_plan import ArchiveBlocked

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# What opening a link with O_DIRECTORY | O_NOFOLLOW gives: ELOOP or ENOTDIR (Linux), EMLINK (BSD).
_LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


def refusal(dfd: int, name: str, shown: str) -> ArchiveBlocked:
    """The refusal for ``name`` of the open folder ``dfd`` (``shown`` relative to the root)."""
    try:
        is_link = stat.S_ISLNK(os.lstat(name, dir_fd=dfd).st_mode)
    except OSError:
        is_link = False
    problem = link_message(shown) if is_link else not_a_folder_message(shown)
    return ArchiveBlocked(refusal_code(problem), f"{problem}. No files were changed.")


def _open_child(dfd: int, name: str, shown: str, created: list[tuple[str, ...]]) -> int:
    if name in ("", ".", "..") or "/" in name:
        raise ArchiveBlocked("archive_path_symlink", f"{shown} is not a plain name; refused")
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        os.mkdir(name, 0o777, dir_fd=dfd)  # the umask applies, as for mkdir -p
        created.append(tuple(shown.split("/")))
        return os.open(name, _DIR_FLAGS, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in _LINK_ERRORS:
            raise refusal(dfd, name, shown) from None
        raise


def open_folder(
    root: Path, parts: Sequence[str], created: list[tuple[str, ...]] | None = None
) -> int:
    """A descriptor of ``root/parts``, every component opened with ``O_NOFOLLOW`` from the one
    above. When ``created`` is given, missing folders are made and their parts appended to it
    (shallowest first); otherwise a missing one raises FileNotFoundError."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    made: list[tuple[str, ...]] = []
    try:
        for i, name in enumerate(parts):
            shown = "/".join(parts[: i + 1])
            if created is None:
                child = _open_existing(fd, name, shown)
            else:
                child = _open_child(fd, name, shown, made)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        remove_folders(root, made)
        raise
    if created is not None:
        created.extend(made)
    return fd


def _open_existing(dfd: int, name: str, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in _LINK_ERRORS:
            raise refusal(dfd, name, shown) from None
        raise


def remove_folders(root: Path, created: Sequence[tuple[str, ...]]) -> None:
    """Remove the (empty) folders ``created`` listed, deepest first; stop at one not empty."""
    for parts in reversed(created):
        try:
            parent = open_folder(root, parts[:-1])
        except OSError:
            return
        try:
            os.rmdir(parts[-1], dir_fd=parent)
        except OSError:
            return
        finally:
            os.close(parent)


def regular_mode(dfd: int, name: str, shown: str) -> int | None:
    """The permission bits of the regular file ``name`` of ``dfd``, None when it is missing;
    a link or anything else there is refused (ArchiveBlocked)."""
    try:
        st = os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise ArchiveBlocked(
            "archive_path_symlink", f"{link_message(shown)}. No files were changed."
        )
    if not stat.S_ISREG(st.st_mode):
        raise ArchiveBlocked(
            "archive_spec_unreadable", f"{shown} is not a regular file. No files were changed."
        )
    return st.st_mode & 0o7777


def replace_file(dfd: int, name: str, data: bytes, mode: int | None) -> None:
    """Put ``data`` at ``name`` of the open folder ``dfd`` atomically: a new temporary file
    beside it (``O_EXCL | O_NOFOLLOW``: never an existing file or a link's target), flushed,
    given ``mode`` (None: the umask's), then renamed over ``name`` (a rename replaces a link
    there, never writes through it)."""
    temp = f".{name}.ralph-archive-{os.urandom(4).hex()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o666, dir_fd=dfd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dfd)
        raise
