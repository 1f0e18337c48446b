"""Checkpoints of the work tree as git commit objects, their diffs, restore and pruning (SPEC §8).

A checkpoint is a commit of the whole work tree (tracked files and untracked files git does not
ignore), built in a *temporary* index (``GIT_INDEX_FILE``) seeded from a copy of the user's index
(so unchanged files are not hashed again), parented on the run's previous checkpoint (``HEAD``
for the first), and referenced as ``refs/ralph/<change>/<runId>/<n>`` (``/0`` before
iteration 1). Nothing of the user's is touched: not their index, ``HEAD``, branches, stash, or
files. Everything is done by the ``git`` program itself. No LSP imports.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph_lsp.gitcli import (
    GitError,
    Repo,
    find_repo,
    git_available,
    identity_env,
    read_capped,
)

REF_PREFIX = "refs/ralph"
MAX_FILE_BYTES = 16 * 1024 * 1024  # ralph.fileAt: larger files are refused
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


class CheckpointError(Exception):
    """A checkpoint that cannot be found or used; the message says what exists instead."""


def ref_component(name: str) -> str:
    """``name`` as one valid ref component: anything but letters, digits, '-' and '_' as %XX."""
    return "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in name)


def run_prefix(change: str, run_id: str) -> str:
    return f"{REF_PREFIX}/{ref_component(change)}/{ref_component(run_id)}"


def ref_name(change: str, run_id: str, n: int | str) -> str:
    return f"{run_prefix(change, run_id)}/{n}"


@dataclass(frozen=True)
class Checkpoint:
    commit: str
    ref: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "commit": self.commit}

    @property
    def name(self) -> str:
        return self.ref or self.commit


# -- the repository's state --------------------------------------------------------------------
def repo_notes(repo: Repo) -> list[str]:
    """What makes checkpoints of this repository partial or unusual, one sentence each."""
    notes: list[str] = []
    if repo.rev("HEAD") is None:
        notes.append("the repository has no commits yet: the first checkpoint has no parent")
    elif repo.run("symbolic-ref", "-q", "HEAD", check=False).returncode != 0:
        notes.append("HEAD is detached: checkpoints are parented on the detached commit")
    for marker, what in (
        ("MERGE_HEAD", "a merge"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase"),
    ):
        if (repo.git_dir / marker).exists():
            notes.append(
                f"{what} is in progress: checkpoints record the files as they are (conflict"
                " markers included) and leave the merge state alone"
            )
            break
    if (repo.top / ".gitmodules").exists():
        notes.append("submodules are recorded as their checked-out commit, not their files")
    if _uses_lfs(repo):
        notes.append("LFS files are recorded as they are on disk: no filter program is ever run")
    if repo.git("config", "--bool", "--get", "core.sparseCheckout", check=False) == "true":
        notes.append("sparse checkout: files outside the checkout are recorded as HEAD has them")
    return notes


def _uses_lfs(repo: Repo) -> bool:
    try:
        text = (repo.top / ".gitattributes").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "filter=lfs" in text


# -- making checkpoints ------------------------------------------------------------------------
@contextmanager
def temporary_index(repo: Repo, seed: bool = True) -> Iterator[dict[str, str]]:
    """An environment whose ``GIT_INDEX_FILE`` is a private copy of the user's index."""
    folder = tempfile.mkdtemp(prefix="ralph-index-")
    index = Path(folder) / "index"
    try:
        user_index = repo.git_dir / "index"
        if seed and user_index.is_file():
            shutil.copyfile(user_index, index)  # read only: the user's index is never written
        yield {"GIT_INDEX_FILE": str(index)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def snapshot(
    repo: Repo,
    parent: str | None,
    message: str,
    *,
    index_env: dict[str, str] | None = None,
    reuse_unchanged: bool = False,
    identity: dict[str, str] | None = None,
) -> tuple[str, list[str]]:
    """A commit of the whole work tree; returns it and git's complaints (unreadable files…).

    With ``index_env`` None a temporary index is used; otherwise the given one (a worktree of
    our own uses its own index). ``reuse_unchanged``: a tree equal to the parent's gives the
    parent itself instead of a new commit."""
    if index_env is None:
        with temporary_index(repo) as env:
            return snapshot(repo, parent, message, index_env=env)
    added = repo.run("add", "--all", "--ignore-errors", env=index_env, check=False)
    problems = [
        line
        for line in added.stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith("warning: in the working copy")
    ]
    fatal = [line for line in problems if line.startswith("fatal:")]
    if added.returncode != 0 and (fatal or not problems):
        raise GitError("git add: " + " ".join(problems[-2:] or [f"exit {added.returncode}"]))
    tree = repo.git("write-tree", env=index_env)
    if reuse_unchanged and parent and repo.git("rev-parse", f"{parent}^{{tree}}") == tree:
        return parent, problems
    argv = ["commit-tree", "--no-gpg-sign", tree, "-m", message]
    if parent:
        argv += ["-p", parent]
    commit = repo.git(*argv, env=identity_env(repo) if identity is None else identity)
    return commit, problems


def files_changed(repo: Repo, before: str | None, after: str) -> list[str]:
    """Paths that differ between two commits (every path of ``after`` when there is no before)."""
    if before is None:
        raw = repo.run("ls-tree", "-r", "-z", "--name-only", after).stdout
    else:
        raw = repo.run(
            "diff-tree", "-r", "-z", "--no-renames", "--name-only", "--no-commit-id", before, after
        ).stdout
    return [p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0") if p]


def set_ref(repo: Repo, ref: str, commit: str) -> None:
    repo.run("update-ref", "--no-deref", ref, commit)


@dataclass
class Checkpointer:
    """One run's checkpoints: ``record(n)`` after iteration n (0: before the first).

    Never raises: a checkpoint that cannot be made is a warning, and the run goes on."""

    repo: Repo
    change: str
    run_id: str
    warn: Callable[[str], None]
    parent: str | None = None
    branch: str | None = None  # worktree mode: commits go on this branch, made in its own index
    failures: int = 0
    _started: bool = field(default=False, repr=False)
    # The run's private index, kept between checkpoints so that git re-reads only the files
    # whose stat data changed (seeded from the user's index; removed by close()).
    _index_dir: str | None = field(default=None, repr=False)
    _seeded_from: tuple[int, int, int] | None = field(default=None, repr=False)
    _identity: dict[str, str] | None = field(default=None, repr=False)

    def _index_env(self) -> dict[str, str]:
        """The index a checkpoint is built in. Seeded again whenever the user's index changed,
        so that what is tracked (a file added with ``-f`` though ignored) is as it is now."""
        if self.branch:
            return {}  # the worktree's own index
        if self._index_dir is None:
            self._index_dir = tempfile.mkdtemp(prefix="ralph-index-")
        index = Path(self._index_dir) / "index"
        user_index = self.repo.git_dir / "index"
        try:
            st = user_index.stat()
            key: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            key = None
        if key != self._seeded_from or not index.exists():
            index.unlink(missing_ok=True)
            if key is not None:
                shutil.copyfile(user_index, index)  # read only: the user's is never written
            self._seeded_from = key
        return {"GIT_INDEX_FILE": str(index)}

    def close(self) -> None:
        if self._index_dir is not None:
            shutil.rmtree(self._index_dir, ignore_errors=True)
            self._index_dir = None

    def start(self) -> None:
        for note in repo_notes(self.repo):
            self.warn(f"checkpoints: {note}")
        self.parent = self.repo.rev("HEAD")
        self._identity = identity_env(self.repo)  # looked up once per run
        self._started = True

    def record(self, n: int, message: str | None = None) -> tuple[Checkpoint | None, list[str]]:
        if not self._started:
            self.start()
        msg = message or f"ralph: {self.change} checkpoint {n} (run {self.run_id})"
        try:
            commit, problems = snapshot(
                self.repo,
                self.parent,
                msg,
                index_env=self._index_env(),
                reuse_unchanged=bool(self.branch),  # no empty commits on the run's branch
                identity=self._identity,
            )
            changed = files_changed(self.repo, self.parent, commit) if self.parent else []
            ref = ref_name(self.change, self.run_id, n)
            set_ref(self.repo, ref, commit)
            if self.branch:
                self.repo.run("update-ref", f"refs/heads/{self.branch}", commit)
        except (GitError, OSError) as exc:
            self.failures += 1
            self.warn(f"checkpoint {n} could not be recorded ({exc}); the run goes on without it")
            return None, []
        for problem in problems[:3]:
            self.warn(f"checkpoint {n}: {problem}")
        self.parent = commit
        return Checkpoint(commit, ref), changed


def open_checkpointer(
    root: Path,
    change: str,
    run_id: str,
    warn: Callable[[str], None],
    note: Callable[[str], None] | None = None,
) -> Checkpointer | None:
    """A checkpointer for the git work tree holding ``root``; None (said once, through
    ``note``: it is no fault) outside git."""
    if not git_available():
        (note or warn)("checkpoints are off: git is not installed (no `git` on PATH)")
        return None
    repo = find_repo(root)
    if repo is None:
        (note or warn)("checkpoints are off: the project is not in a git work tree")
        return None
    checkpointer = Checkpointer(repo, change, run_id, warn)
    try:
        checkpointer.start()
    except (GitError, OSError) as exc:
        warn(f"checkpoints are off: {exc}")
        return None
    return checkpointer


# -- finding checkpoints -----------------------------------------------------------------------
def list_refs(repo: Repo, prefix: str) -> list[tuple[str, str]]:
    """(refname, commit) under ``prefix``, newest commit first."""
    text = repo.git(
        "for-each-ref", "--sort=-committerdate", "--format=%(refname) %(objectname)", prefix + "/"
    )
    return [tuple(line.rsplit(" ", 1)) for line in text.splitlines() if " " in line]  # type: ignore[misc]


def run_ids(repo: Repo, change: str) -> list[str]:
    """The run ids (as ref components) that have checkpoints of ``change``, newest first."""
    prefix = f"{REF_PREFIX}/{ref_component(change)}"
    seen: list[str] = []
    for ref, _ in list_refs(repo, prefix):
        run = ref[len(prefix) + 1 :].split("/")[0]
        if run not in seen:
            seen.append(run)
    return seen


def iterations(repo: Repo, change: str, run_id: str) -> dict[int, str]:
    """Iteration number → checkpoint commit of one run (0 is the state before iteration 1)."""
    prefix = run_prefix(change, run_id)
    found: dict[int, str] = {}
    for ref, commit in list_refs(repo, prefix):
        last = ref.rsplit("/", 1)[1]
        if last.isdigit():
            found[int(last)] = commit
    return dict(sorted(found.items()))


def pick_run(repo: Repo, change: str, run_id: str | None, newest_first: Sequence[str]) -> str:
    """``run_id``, or the newest run (by ``newest_first``, else by date) that has checkpoints."""
    have = run_ids(repo, change)
    if run_id is not None:
        if ref_component(run_id) not in have:
            listing = ", ".join(have[:5]) or "none"
            raise CheckpointError(
                f"run {run_id!r} of {change!r} has no checkpoints (runs: {listing})"
            )
        return run_id
    for rid in newest_first:
        if ref_component(rid) in have:
            return rid
    if have:
        return have[0]
    raise CheckpointError(
        f"no checkpoints of {change!r} yet: runs record them in a git work tree (ralph.checkpoints)"
    )


def iteration_pair(
    repo: Repo, change: str, run_id: str, n: int | None
) -> tuple[int, Checkpoint, Checkpoint]:
    """The checkpoints before and after iteration ``n`` (default: the run's last iteration)."""
    its = iterations(repo, change, run_id)
    numbered = [k for k in its if k > 0]
    if n is None:
        if not numbered:
            raise CheckpointError(f"run {run_id} has no iteration checkpoints")
        n = numbered[-1]
    if n not in its or n < 1:
        listing = ", ".join(str(k) for k in numbered) or "none"
        raise CheckpointError(
            f"run {run_id} has no checkpoint after iteration {n} (iterations: {listing})"
        )
    after = Checkpoint(its[n], ref_name(change, run_id, n))
    if n - 1 in its:
        before = Checkpoint(its[n - 1], ref_name(change, run_id, n - 1))
    else:  # an earlier checkpoint failed: the commit's parent is the last one that was made
        parent = repo.rev(f"{its[n]}^")
        if parent is None:
            raise CheckpointError(f"iteration {n}'s checkpoint has no earlier state to compare")
        before = Checkpoint(parent)
    return n, before, after


def resolve_checkpoint(repo: Repo, name: str) -> Checkpoint:
    """A checkpoint named by its ref (``refs/ralph/…``) or its commit id (hex); nothing else."""
    if name.startswith(REF_PREFIX + "/") and ".." not in name:
        commit = repo.rev(name)
        if commit is None:
            raise CheckpointError(f"no checkpoint {name}")
        return Checkpoint(commit, name)
    if 4 <= len(name) <= 64 and all(c in "0123456789abcdef" for c in name.lower()):
        commit = repo.rev(name)
        if commit is not None:
            return Checkpoint(commit)
    raise CheckpointError(f"{name!r} is not a checkpoint (a refs/ralph/… ref or a commit id)")


# -- looking at checkpoints --------------------------------------------------------------------
@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # "added", "modified", "deleted", "typechange"


_STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "typechange"}


def changed_files(repo: Repo, before: str, after: str) -> list[FileChange]:
    raw = repo.run("diff-tree", "-r", "-z", "--no-renames", "--name-status", before, after).stdout
    parts = [p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0")]
    out = []
    for status, path in zip(parts[0::2], parts[1::2], strict=False):
        if path:
            out.append(FileChange(path, _STATUS.get(status[:1], status)))
    return out


def patch(repo: Repo, before: str, after: str, *, color: bool = False) -> str:
    """git's own diff between two checkpoints."""
    return repo.run(*_patch_args(before, after, color)).stdout.decode("utf-8", "replace")


def capped_patch(
    repo: Repo, before: str, after: str, cap: int, *, color: bool = False
) -> tuple[str, bool]:
    """At most ``cap`` bytes of :func:`patch` (git is stopped there), and whether it was cut."""
    data, cut = read_capped(repo.top, _patch_args(before, after, color), cap)
    return data.decode("utf-8", "ignore" if cut else "replace"), cut


def _patch_args(before: str, after: str, color: bool) -> list[str]:
    return ["diff", "--no-ext-diff", "--color=always" if color else "--no-color", before, after]


def file_at(repo: Repo, checkpoint: Checkpoint, path: str) -> bytes | None:
    """The bytes of ``path`` in a checkpoint, or None when it has no such file."""
    clean = path.replace("\\", "/").lstrip("/")
    if not clean or any(part in ("", ".", "..") for part in clean.split("/")):
        raise CheckpointError(f"{path!r} is not a path inside the repository")
    spec = f"{checkpoint.commit}:{clean}"
    kind = repo.run("cat-file", "-t", spec, check=False)
    if kind.returncode != 0 or kind.stdout.strip() != b"blob":
        return None
    size = int(repo.git("cat-file", "-s", spec))
    if size > MAX_FILE_BYTES:
        raise CheckpointError(f"{path} is {size} bytes; only files up to 16 MiB are shown")
    return repo.run("cat-file", "blob", spec).stdout


# -- pruning -----------------------------------------------------------------------------------
def prune(root: Path, change: str, keep_run_ids: Iterable[str]) -> int:
    """Delete ``refs/ralph/<change>/<run>/…`` of runs not kept; returns how many refs went."""
    repo = find_repo(root)
    if repo is None:
        return 0
    keep = {ref_component(r) for r in keep_run_ids}
    prefix = f"{REF_PREFIX}/{ref_component(change)}"
    doomed = [
        ref
        for ref, _ in list_refs(repo, prefix)
        if ref[len(prefix) + 1 :].split("/")[0] not in keep
    ]
    if doomed:
        script = "".join(f"delete {ref}\n" for ref in doomed).encode()
        repo.run("update-ref", "--stdin", stdin=script)
    return len(doomed)
