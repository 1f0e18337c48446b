"""What a run's sandbox grants of the git repository it works in (SPEC §10), from its files.

:func:`git_paths` gives what ``git commit`` inside needs writable (the git directory, and the
common directory's objects, refs and logs when they are outside the work tree) and what stays
read-only (hooks, config, every ``config.worktree``, info, the other worktrees' folders);
:func:`git_pointers` every file that says where the repository, its config or its objects
are, which a run must never write. ``policy.py`` builds the run's policy with them and
``git_guard.py`` checks the pointers after a sandboxed process. Reads files, never writes any.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path


def git_dirs(work_root: Path) -> tuple[Path, Path] | None:
    """The git directory of the work tree holding ``work_root`` and its common directory
    (the same, but for a linked worktree), read from the files alone."""
    for folder in (work_root, *work_root.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot, dot
        if dot.is_file():
            try:
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            gitdir = Path(os.path.realpath(folder / text.removeprefix("gitdir:").strip()))
            common = gitdir
            try:
                pointer = (gitdir / "commondir").read_text(encoding="utf-8").strip()
                common = Path(os.path.realpath(gitdir / pointer))
            except OSError:
                pass
            return gitdir, common
    return None


def git_paths(work_root: Path) -> tuple[list[Path], list[Path]]:
    """(writable, read-only) paths of the repository holding ``work_root``.

    The git directory is bound onto itself, writable: ``git commit`` inside writes there, and a
    mount point cannot be renamed or replaced, so the run cannot put a ``.git`` of its own in
    its place (nor an ``objects`` folder: :func:`pinned`). The other worktrees' folders
    (``worktrees/``, when the run's git directory is not one of them) are read-only whole. A
    git directory outside the work tree (a linked worktree's, or a root below the repository's
    top) gets what ``git commit`` writes: its own folder, and the common directory's objects,
    refs and logs. Everything git would run or obey later stays read-only: hooks, config,
    every ``config.worktree``, info (attributes, exclude), and every file that says where a
    repository is (:func:`git_pointers`)."""
    found = git_dirs(work_root)
    if found is None:
        return [], []
    gitdir, common = found
    writable = [gitdir, *pinned(work_root, common)]
    for path in (common / "objects", common / "refs", common / "logs"):
        if not inside(path, work_root):
            writable.append(path)
    read_only = [common / "hooks", common / "config", common / "info", common / "config.worktree"]
    read_only += [gitdir / "config.worktree"]
    worktrees = common / "worktrees"
    if not inside(gitdir, worktrees) and is_folder(worktrees):
        read_only.append(worktrees)  # the other worktrees' folders, whole: one bind for all
    # (the git directory itself is no pointer: a work tree's own .git folder stays writable)
    read_only += [
        p
        for p in git_pointers(work_root)
        if not is_folder(p) and (p.parent.parent != worktrees or p.parent == gitdir)
    ]
    modules = common / "modules"
    if modules.is_dir():
        read_only.append(modules)
    return writable, list(unique(read_only))


def pinned(work_root: Path, common: Path) -> list[Path]:
    """The folders of a git directory inside the work tree that hold a pointer (``objects``
    and ``objects/info``): bound onto themselves, so that a run cannot move one away and put
    a folder of its own, with other pointers, in its place."""
    out = [common / "objects", common / "objects" / "info"]
    return [p for p in out if inside(p, work_root) and is_folder(p)]


# Files in a git directory that say where a repository, its config or its objects are: each one
# written by a run would redirect the host's next git command (SPEC §10).
POINTERS = ("commondir", "gitdir", "config.worktree", "locked")


def git_pointers(work_root: Path) -> list[Path]:
    """Every file that tells git where the repository of ``work_root`` is, or what its config
    and objects are, whether it exists or not: the work tree's ``.git`` (a linked worktree's
    gitfile, or one a run would make in a root below the repository's top), ``commondir`` and
    ``config.worktree`` of the git and common directories, ``objects/info/alternates``, and
    ``commondir``, ``gitdir``, ``config.worktree`` and ``locked`` (which keeps a worktree from
    being removed) of every linked worktree's folder, the ``.git`` file of each one in the work
    tree, and the files the config includes where a run could write them. ``[]`` outside a
    repository."""
    found = git_dirs(work_root)
    if found is None:
        return []
    gitdir, common = found
    out = [work_root / ".git"]
    for folder in dict.fromkeys([gitdir, common]):
        out += [folder / "commondir", folder / "config.worktree"]
    out.append(common / "objects" / "info" / "alternates")
    worktrees = common / "worktrees"
    try:
        entries = sorted(e for e in worktrees.iterdir() if e.is_dir() and not e.is_symlink())
    except OSError:
        entries = []
    out += [entry / name for entry in entries for name in POINTERS]
    # the .git file of every linked worktree in the work tree (another run's, the train's)
    out += [f for f in map(_gitfile_of, entries) if f is not None and inside(f, work_root)]
    # what the config includes, where a run may write (a project's shared .gitconfig)
    for config in dict.fromkeys([common / "config", common / "config.worktree"]):
        out += [f for f in included(config) if inside(f, work_root) or inside(f, common)]
    return list(unique(out))


_INCLUDE = re.compile(r"^\s*\[\s*include(?:if)?\b", re.IGNORECASE)
_PATH = re.compile(r"^\s*path\s*=\s*(.*?)\s*$", re.IGNORECASE)


def included(config: Path, depth: int = 0) -> list[Path]:
    """The files ``config`` includes (``include.path``, ``includeIf.<cond>.path``), whatever
    the condition, and theirs in turn (a few levels): each one is the repository's config as
    much as ``config`` itself."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found: list[Path] = []
    inside = False
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            inside = bool(_INCLUDE.match(line))
        elif inside and (m := _PATH.match(line)):
            value = m.group(1)
            if value.startswith('"') and value.endswith('"') and len(value) > 1:
                value = value[1:-1]
            target = Path(os.path.expanduser(value))
            found.append(Path(os.path.abspath(config.parent / target)))
    if depth < 3:
        found += [f for target in list(found) for f in included(target, depth + 1)]
    return found


def _gitfile_of(admin: Path) -> Path | None:
    """The ``.git`` file a linked worktree's folder names in its ``gitdir``."""
    try:
        text = (admin / "gitdir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return Path(os.path.abspath(admin / text)) if text else None


def inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def is_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def unique(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(paths))
