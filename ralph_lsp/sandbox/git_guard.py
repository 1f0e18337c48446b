"""What a sandboxed process wrote to the files that tell git where a repository is, undone on
the host before the run runs git again (SPEC §10).

The sandbox binds every such file that exists read-only (``repository.git_pointers``), but one that
does not exist yet (``.git/commondir`` of an ordinary repository, a ``config.worktree``, a
worktree's ``locked``, a ``.git`` in a root below the repository's top) cannot be bound without
making it on the host, and the git directory around it must stay writable for ``git commit``
inside. So :meth:`GitGuard.watch` records each pointer's state before a sandboxed process, and
:meth:`GitGuard.undo`, after it, puts back what changed: a file made is removed, a file changed
is written back as it was. Each one undone is said (``the agent wrote .git/commondir:
undone``) and kept as a refusal by the caller.

Nothing here follows a link the run may have made: a file is read with ``O_NOFOLLOW``, put back
by a rename over the path (which replaces a link, never writes through it), and a pointer whose
folder is no longer the folder it was (moved away, or now a link) is left alone and said.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.sandbox.repository import git_pointers

# A pointer larger than this is not a pointer: it is recorded by size alone and never put back
# from memory (git's own are a line of text).
MAX_POINTER_BYTES = 1 << 20


@dataclass(frozen=True)
class State:
    """One path's state: ``absent``, ``file`` (its bytes and mode), ``link`` (its target),
    ``folder`` (its identity) or ``other``."""

    kind: str
    data: bytes = b""
    mode: int = 0
    ident: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Watched:
    path: Path
    folder: str  # the real path of its folder when watched
    before: State


class GitGuard:
    """The pointers of the repository holding ``work_root``, watched around each process."""

    def __init__(
        self, work_root: Path, shown_from: Path | None = None, also: Sequence[Path] = ()
    ) -> None:
        self.work_root = work_root
        self.shown_from = shown_from or work_root  # paths are said relative to this folder
        # files outside git that a run may write but must not leave changed (Codex's own
        # config.toml, which names the host the next run's allowlist takes)
        self.also = tuple(also)
        self._watched: list[Watched] = []

    def watch(self) -> None:
        """Record every pointer's state now: before a sandboxed process starts."""
        pointers = [*git_pointers(self.work_root), *self.also]
        folders = {f: os.path.realpath(f) for f in dict.fromkeys(p.parent for p in pointers)}
        self._watched = [Watched(p, folders[p.parent], state_of(p)) for p in pointers]

    def undo(self) -> list[str]:
        """Put back every pointer that changed since :meth:`watch`; one line per pointer, what
        was found and what was done (``.git/commondir: made; undone``)."""
        said: list[str] = []
        for item in self._watched:
            now = state_of(item.path)
            if now == item.before:
                continue
            if now.kind == "absent" and not os.path.isdir(item.path.parent):
                continue  # its whole folder went (a worktree removed, by its run): no redirect
            said.append(f"{self._shown(item.path)}: {_undo(item, now)}")
        return said

    def _shown(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.shown_from))
        except ValueError:
            return str(path)


def state_of(path: Path) -> State:
    """``path``'s state, never following a link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return State("absent")
    except OSError:
        return State("other")
    if stat.S_ISLNK(st.st_mode):
        return State("link", os.fsencode(os.readlink(path)))
    if stat.S_ISDIR(st.st_mode):
        return State("folder", ident=(st.st_dev, st.st_ino))
    if not stat.S_ISREG(st.st_mode):
        return State("other", mode=st.st_mode)
    if st.st_size > MAX_POINTER_BYTES:
        return State("other", mode=st.st_mode, ident=(st.st_size, st.st_mtime_ns))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return State("other", mode=st.st_mode)
    with os.fdopen(fd, "rb") as f:
        return State("file", f.read(MAX_POINTER_BYTES + 1), stat.S_IMODE(st.st_mode))


def _undo(item: Watched, now: State) -> str:
    """Put ``item`` back as it was; what was found and what was done."""
    found = {"absent": "removed", "file": "changed", "link": "replaced by a link"}
    what = "made" if item.before.kind == "absent" else found.get(now.kind, f"replaced ({now.kind})")
    if os.path.realpath(item.path.parent) != item.folder:
        return f"{what}, in a folder that is no longer where it was: not undone, look at it"
    try:
        if item.before.kind == "absent":
            _remove(item.path)
        elif item.before.kind in ("file", "link"):
            _put_back(item.path, item.before)
        else:
            return f"{what}: not undone (it was a {item.before.kind}), look at it"
    except OSError as exc:
        return f"{what}: could not be undone ({exc.strerror or exc}), look at it"
    return f"{what}; undone"


def _remove(path: Path) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _put_back(path: Path, before: State) -> None:
    """``before`` written to a new file beside ``path`` and renamed over it (a folder there is
    removed first: a rename cannot replace one)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    temporary = path.with_name(f".{path.name}.ralph-undo-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    if before.kind == "link":
        os.symlink(os.fsdecode(before.data), temporary)
    else:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(temporary, flags, before.mode or 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(before.data)
        os.chmod(temporary, before.mode or 0o644)
    os.replace(temporary, path)
