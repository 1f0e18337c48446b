"""Checkpoints of the work tree as git commit objects, their diffs, restore and pruning (SPEC §8).

A checkpoint is a commit of the whole work tree (tracked files and untracked files git does not
ignore), built in a *temporary* index (``GIT_INDEX_FILE``) seeded from a copy of the user's index
(so unchanged files are not hashed again), parented on the run's previous checkpoint (``HEAD``
for the first), and referenced as ``refs/ralph/@<rootId>/<change>/<runId>/<n>`` (``/0`` before
iteration 1). ``<rootId>`` is ``@`` and 12 hex digits of a hash of the OpenSpec root's real
path: refs are shared by every ``git worktree`` of a repository (and by every OpenSpec root in
it), while each root has its own ``.ralph/`` history, so each root's checkpoints live apart and
no run of one root prunes or picks another's. A restore's undo is
``refs/ralph/@<rootId>/<change>/@undo/<k>``: it holds the user's work, not run history, so no
run and no retention removes it. Refs written by v2 (``refs/ralph/<change>/<runId>/<n>``,
shared by every work tree) are still read for runs this root's history names. Nothing of the
user's is touched: not their index, ``HEAD``, branches, stash, or files. Everything is done by
the ``git`` program itself. No LSP imports.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ralph_lsp.git.command import (
    GitError,
    Repo,
    find_repo,
    git_available,
    git_command,
    identity_env,
    read_capped,
)
from ralph_lsp.git.refs import (
    Checkpoint,
    CheckpointError,
    change_prefix,
    legacy_prefix,
    list_refs,
    ref_component,
    ref_name,
)
from ralph_lsp.openspec.tasks import read_regular_text

MAX_FILE_BYTES = 16 * 1024 * 1024  # ralph.fileAt: larger files are refused


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
        text = read_regular_text(repo.top / ".gitattributes", 4 * 1024 * 1024)
    except OSError:  # missing, huge, or a named pipe that must not hang the run
        return False
    return "filter=lfs" in text


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
    root: Path | None = None  # the OpenSpec root whose history names the run (default: top)
    failures: int = 0
    no_space: str | None = None  # a checkpoint failed for a full disk: why the run must end
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

    def _base(self) -> str | None:
        """The new checkpoint's parent: the previous one, or in worktree mode the branch's tip
        when the agent committed there itself (its commits stay on the branch)."""
        if self.branch:
            tip = self.repo.rev(f"refs/heads/{self.branch}")
            if tip is not None:
                return tip
        return self.parent

    def record(self, n: int, message: str | None = None) -> tuple[Checkpoint | None, list[str]]:
        if not self._started:
            self.start()
        msg = message or f"ralph: {self.change} checkpoint {n} (run {self.run_id})"
        try:
            base = self._base()
            commit, problems = snapshot(
                self.repo,
                base,
                msg,
                index_env=self._index_env(),
                reuse_unchanged=bool(self.branch),  # no empty commits on the run's branch
                identity=self._identity,
            )
            changed = files_changed(self.repo, self.parent, commit) if self.parent else []
            ref = ref_name(self.root or self.repo.top, self.change, self.run_id, n)
            set_ref(self.repo, ref, commit)
            if self.branch:
                self.repo.run("update-ref", f"refs/heads/{self.branch}", commit)
        except (GitError, OSError) as exc:
            self.failures += 1
            full = getattr(exc, "errno", 0) == errno.ENOSPC
            if full or "no space left on device" in str(exc).lower():
                self.no_space = (
                    f"no space left on device: checkpoint {n} could not be recorded; free some"
                    " space, then run again to go on"
                )
                self.warn(f"checkpoint {n} could not be recorded ({exc}); the run ends")
                return None, []
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
    checkpointer = Checkpointer(repo, change, run_id, warn, root=root)
    try:
        checkpointer.start()
    except (GitError, OSError) as exc:
        warn(f"checkpoints are off: {exc}")
        return None
    return checkpointer


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


def write_patch(repo: Repo, before: str, after: str, fd: int, *, color: bool = False) -> None:
    """:func:`patch` straight to a file descriptor (``ralph-lsp diff``: no size limit in memory)."""
    argv, env = git_command(repo.top, _patch_args(before, after, color))
    subprocess.run(argv, cwd=repo.top, env=env, stdin=subprocess.DEVNULL, stdout=fd, check=False)


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


def prune(root: Path, change: str, removed_run_ids: Iterable[str]) -> int:
    """Delete the checkpoints of the runs that history retention has just removed from this
    root (its own refs, and those v2 wrote for those runs); returns how many refs went.

    Nothing else goes: not other roots' or work trees' runs, and never an undo (``@undo``,
    v2's ``…/undo-<k>``): an undo holds the user's work, not run history."""
    repo = find_repo(root)
    runs = [ref_component(r) for r in removed_run_ids]
    if repo is None or not runs:
        return 0
    doomed: list[str] = []
    for run in runs:
        for prefix in (f"{change_prefix(root, change)}/{run}", f"{legacy_prefix(change)}/{run}"):
            doomed += [
                ref
                for ref, _ in list_refs(repo, prefix)
                if not ref.rsplit("/", 1)[1].startswith("undo-")
            ]
    if doomed:
        script = "".join(f"delete {ref}\n" for ref in doomed).encode()
        repo.run("update-ref", "--stdin", stdin=script)
    return len(doomed)
