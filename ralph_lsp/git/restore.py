"""Putting the work tree's files back as a checkpoint has them, undoably (SPEC §8). No LSP imports.

First the current state is recorded as a checkpoint (the *undo*), so nothing the restore
changes is lost. Then only the paths that differ between the undo and the target are touched:

- a path the target lacks is removed (it is in the undo checkpoint, so it comes back on undo);
- a path the target has is written by ``git checkout-index`` from a temporary index (git's own
  filters, modes and symlinks), never through the user's index.

A path is left alone, and reported, when writing it could lose something the undo does not
hold: an ignored file in the way, a directory in the way, a symlink among its parents, or a
submodule. The user's index, ``HEAD``, branches and stash are never touched.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ralph_lsp.git.checkpoints import set_ref, snapshot, temporary_index
from ralph_lsp.git.command import Repo
from ralph_lsp.git.refs import Checkpoint, undo_prefix

GITLINK = "160000"


@dataclass
class RestoreResult:
    restored: Checkpoint
    undo: Checkpoint
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    def to_json(self) -> dict[str, object]:
        return {
            "restored": self.restored.to_json(),
            "undo": self.undo.to_json(),
            "written": self.written,
            "removed": self.removed,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }


def _undo_ref(repo: Repo, root: Path, change: str) -> str:
    """The next free ``refs/ralph/@<rootId>/<change>/@undo/<k>``: no run or retention removes
    it (it holds the user's work); ``git update-ref -d`` does, when the user wants."""
    prefix = undo_prefix(root, change)
    taken = repo.git("for-each-ref", "--format=%(refname)", prefix + "/").splitlines()
    k = 1
    while f"{prefix}/{k}" in taken:
        k += 1
    return f"{prefix}/{k}"


def _diff(repo: Repo, now: str, target: str) -> list[tuple[str, str, str]]:
    """(status, new mode, path) for each path that differs from ``now`` to ``target``."""
    raw = repo.run("diff-tree", "-r", "-z", "--no-renames", "--raw", now, target).stdout
    parts = raw.split(b"\0")
    out = []
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        fields = meta.decode().lstrip(":").split()
        if len(fields) >= 5 and path:
            out.append((fields[4][:1], fields[1], path.decode("utf-8", "surrogateescape")))
    return out


def _tracked(repo: Repo, commit: str) -> set[str]:
    raw = repo.run("ls-tree", "-r", "-z", "--name-only", commit).stdout
    return {p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0") if p}


def _mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _blocked(top: Path, rel: str, captured: set[str]) -> str | None:
    """Why writing ``rel`` could lose something the undo checkpoint does not hold, or None."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        mode = _mode(top.joinpath(*parts[:i]))
        if mode is None:
            break
        if stat.S_ISLNK(mode):
            return f"{'/'.join(parts[:i])} is a symbolic link"
        if not stat.S_ISDIR(mode):
            return f"{'/'.join(parts[:i])} is a file that git ignores"
    mode = _mode(top / rel)
    if mode is not None and stat.S_ISDIR(mode):
        return "a folder is in the way"
    if mode is not None and rel not in captured:
        return "an ignored file is in the way"
    return None


def remove_path(top: Path, rel: str) -> bool:
    path = top / rel
    mode = _mode(path)
    if mode is None:
        return True
    if stat.S_ISDIR(mode):
        return False
    path.unlink()
    parent = path.parent
    while parent != top and top in parent.parents:
        try:
            parent.rmdir()  # only an empty folder goes
        except OSError:
            break
        parent = parent.parent
    return True


def restore(
    repo: Repo, change: str, run_id: str, target: Checkpoint, root: Path | None = None
) -> RestoreResult:
    """Make the work tree's files as ``target`` has them; raises GitError/OSError on failure.
    The undo is filed under ``root`` (the OpenSpec root; default: the work tree's top)."""
    head = repo.rev("HEAD")
    message = f"ralph: {change} before restoring {target.name}"
    undo_commit, _ = snapshot(repo, head, message)
    del run_id  # the undo belongs to the root, not to a run (runs are pruned, undos are not)
    undo = Checkpoint(undo_commit, _undo_ref(repo, root or repo.top, change))
    set_ref(repo, undo.ref or "", undo_commit)
    result = RestoreResult(restored=target, undo=undo)
    captured = _tracked(repo, undo_commit)
    writes: list[str] = []
    for status, mode, rel in _diff(repo, undo_commit, target.commit):
        if status == "D":
            if remove_path(repo.top, rel):
                result.removed.append(rel)
            else:
                result.skipped.append((rel, "a folder is in the way"))
        elif mode == GITLINK:
            result.skipped.append((rel, "a submodule (restore it with git in the submodule)"))
        else:
            writes.append(rel)
    absent = _absent(repo, target.commit, writes)
    for rel in writes:
        why = "its content is not in this clone (never fetched)" if rel in absent else None
        why = why or _blocked(repo.top, rel, captured)
        if why is None:
            result.written.append(rel)
        else:
            result.skipped.append((rel, why))
    if result.written:
        checkout_paths(repo, target.commit, result.written)
    return result


def _absent(repo: Repo, commit: str, paths: list[str]) -> set[str]:
    """Paths whose blob a partial clone lacks: git would empty such a file and then fail, since
    nothing is ever fetched (gitcli). Listed without fetching (``--missing=print``)."""
    promisors = r"^(extensions\.partialclone|remote\..*\.promisor)$"
    if not paths or not repo.git("config", "--get-regexp", promisors, check=False):
        return set()
    listing = repo.git("rev-list", "--objects", "--missing=print", commit)
    missing = {line[1:] for line in listing.splitlines() if line.startswith("?")}
    if not missing:
        return set()
    wanted = set(paths)
    absent: set[str] = set()
    for entry in repo.run("ls-tree", "-r", "-z", commit).stdout.split(b"\0"):
        meta, _, raw = entry.partition(b"\t")
        rel = raw.decode("utf-8", "surrogateescape")
        if rel in wanted and meta.split()[2].decode() in missing:
            absent.add(rel)
    return absent


def checkout_paths(repo: Repo, commit: str, paths: list[str]) -> None:
    """Write ``paths`` as ``commit`` has them, through a temporary index."""
    with temporary_index(repo, seed=False) as env:
        repo.run("read-tree", commit, env=env)
        names = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        repo.run("checkout-index", "-f", "-z", "--stdin", env=env, stdin=names)
