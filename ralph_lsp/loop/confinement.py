"""A planning run without a sandbox still writes only its change folder (SPEC §14): a snapshot
of the work tree's files (size, modification time, kind) before each iteration, compared after
it, names every path outside the change folder that appeared, vanished or changed.

What the run itself writes (``.ralph/``) and what git rewrites on its own (``.git/index``,
``objects``, ``logs``: an editor's ``git status`` refreshes the index) are left out; git's
configuration, hooks, refs and HEAD are in. Reads the file system only, no git.
"""

from __future__ import annotations

import os
from pathlib import Path

from ralph_lsp.runs.history import HISTORY_DIR

Snapshot = dict[str, tuple[int, int, int]]
_GIT_NOISE = ("index", "objects", "logs", "FETCH_HEAD", "ORIG_HEAD", "index.lock")
MAX_NAMED = 20


def snapshot(root: Path, keep_out: Path) -> Snapshot:
    """Every file and folder under ``root`` but ``keep_out`` (the change folder), by path."""
    out: Snapshot = {}
    skip = os.path.realpath(keep_out)
    top = os.path.realpath(root)
    for folder, dirs, files in os.walk(top):
        rel_folder = os.path.relpath(folder, top)
        kept = []
        for d in dirs:
            path = os.path.join(folder, d)
            if path == skip or _noise(rel_folder, d):
                continue
            kept.append(d)
            _add(out, path, top)
        dirs[:] = kept
        for f in files:
            if not _noise(rel_folder, f):
                _add(out, os.path.join(folder, f), top)
    return out


def _noise(rel_folder: str, name: str) -> bool:
    if rel_folder == ".":
        return name == HISTORY_DIR
    return rel_folder == ".git" and name in _GIT_NOISE


def _add(out: Snapshot, path: str, top: str) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    size = 0 if os.path.isdir(path) and not os.path.islink(path) else st.st_size
    mtime = 0 if size == 0 and st.st_mode & 0o040000 else st.st_mtime_ns
    out[os.path.relpath(path, top)] = (st.st_mode, size, mtime)


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """The paths that appeared, vanished or changed, sorted."""
    keys = set(before) | set(after)
    return sorted(k for k in keys if before.get(k) != after.get(k))


def describe(paths: list[str]) -> str:
    shown = ", ".join(paths[:MAX_NAMED])
    more = f" and {len(paths) - MAX_NAMED} more" if len(paths) > MAX_NAMED else ""
    return (
        f"the planning agent changed files outside the change folder (ralph.sandbox is off):"
        f" {shown}{more}"
    )
