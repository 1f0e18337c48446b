"""Merging a run's branch into a target branch (SPEC §12). No LSP imports.

What this module may do, and nothing else:

- **check** a merge without touching any work tree or ref: ``git merge-tree --write-tree``
  (git >= 2.38; an older git is refused by :func:`require_merge_tree`) gives the merged tree or
  the conflicting files (:func:`check`);
- **make** the merged commit without a work tree (``commit-tree`` of that tree, for the ``merge``
  and ``squash`` strategies), or, for ``rebase``, by cherry-picking the branch's commits in a
  **scratch integration worktree** (:func:`integration_worktree`, under the repository's git
  dir, detached, removed afterwards), where the merged result is also verified;
- **advance** the target branch only by a compare-and-swap of its ref, fast-forward only, never
  forced (:func:`advance`). When the target is checked out (here or in another worktree), its
  work tree is moved as ``git merge --ff-only`` moves it, run there once the ref is checked: a
  merge that touches a locally changed or untracked file is refused first, naming the files;
  local changes to the other files stay as they are.

Like every git command of the product, these run with hooks, filters and external programs off
(``git/command.py``), merge drivers included: a driver named by the repository's own
``.gitattributes`` and config never runs; each file it would merge is merged by git's own
three-way text merge instead, as a driver that is not configured is.
"""

from __future__ import annotations

import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ralph_lsp.git.command import GitError, Repo, identity_env, out, run_git

Strategy = Literal["merge", "squash", "rebase"]
STRATEGIES: tuple[Strategy, ...] = ("merge", "squash", "rebase")
MIN_GIT = (2, 38)
#: The name prefix of a scratch worktree moved aside to be deleted.
TRASH = "deleting-"


class MergeError(Exception):
    """A merge that cannot be done as asked; the message says why (and what to do)."""


class TargetMoved(MergeError):
    """The target branch is no longer at the commit the merge was made on."""


class LocalChanges(MergeError):
    """The target's work tree has local changes (or untracked files) the merge would touch."""

    def __init__(self, worktree: Path, files: list[str]) -> None:
        self.worktree, self.files = worktree, files
        super().__init__(
            f"the target is checked out at {worktree}, where the merge would touch"
            f" {len(files)} locally changed or untracked file(s): {', '.join(files)};"
            " commit, stash or move them, then merge again (nothing was changed)"
        )


@dataclass(frozen=True)
class Check:
    """What ``git merge-tree`` says of merging ``branch`` into ``target``."""

    target: str
    branch: str
    tree: str  # the merged tree (with conflict markers where ``conflicts`` is not empty)
    conflicts: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.conflicts


def git_version(repo: Repo) -> tuple[int, ...]:
    text = out(repo.top, ["version"])
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if m is None:
        raise MergeError(f"cannot read git's version from {text!r}")
    return tuple(int(g or 0) for g in m.groups())


def require_merge_tree(repo: Repo) -> None:
    """Refuses, clearly, a git too old for ``merge-tree --write-tree``."""
    have = git_version(repo)
    if have[:2] < MIN_GIT:
        raise MergeError(
            f"merging needs git {MIN_GIT[0]}.{MIN_GIT[1]} or newer (`git merge-tree"
            f" --write-tree`); this git is {'.'.join(map(str, have))}: upgrade git"
        )


def check(repo: Repo, target: str, branch: str) -> Check:
    """The conflict check: no work tree, index or ref is touched (only objects are written)."""
    proc = repo.run(
        "merge-tree",
        "--write-tree",
        "--name-only",
        "-z",
        "--no-messages",
        target,
        branch,
        check=False,
    )
    if proc.returncode not in (0, 1):
        words = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git merge-tree: {words or f'exit {proc.returncode}'}")
    parts = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    tree, names = parts[0], []
    for name in parts[1:]:
        if not name:
            break
        names.append(name)
    return Check(target, branch, tree, sorted(dict.fromkeys(names)))


def merge_base(repo: Repo, a: str, b: str) -> str | None:
    proc = repo.run("merge-base", a, b, check=False)
    text = proc.stdout.decode("ascii", "replace").strip()
    return text if proc.returncode == 0 and text else None


def is_ancestor(repo: Repo, old: str, new: str) -> bool:
    return repo.run("merge-base", "--is-ancestor", old, new, check=False).returncode == 0


def commit_merge(
    repo: Repo,
    result: Check,
    strategy: Strategy,
    message: str,
    identity: dict[str, str] | None = None,
) -> str:
    """The merged commit for ``merge`` (two parents) or ``squash`` (the target alone)."""
    if not result.clean:
        raise MergeError(f"the merge conflicts in {', '.join(result.conflicts)}")
    parents = [result.target] + ([result.branch] if strategy == "merge" else [])
    return commit_tree(repo, result.tree, parents, message, identity)


def commit_tree(
    repo: Repo,
    tree: str,
    parents: list[str],
    message: str,
    identity: dict[str, str] | None = None,
) -> str:
    """A commit object (no ref moves), with the user's identity or ralph-lsp's (``identity``:
    :func:`identity_env`'s answer already read, as a train reads it once)."""
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    env = identity_env(repo) if identity is None else identity
    return repo.git(*args, "-m", message, env=env)


def commit_identity(repo: Repo) -> dict[str, str]:
    """The environment naming who commits (:func:`identity_env`), to read once and reuse."""
    return identity_env(repo)


def branch_tips(repo: Repo, *branches: str) -> dict[str, str | None]:
    """The commit each branch points at (None: no such branch), read in one git call."""
    refs = {f"refs/heads/{b}": b for b in branches}
    text = repo.git("for-each-ref", "--format=%(refname)%00%(objectname)", *refs)
    found = dict(line.split("\0", 1) for line in text.splitlines() if "\0" in line)
    return {b: found.get(ref) for ref, b in refs.items()}


def integration_path(repo: Repo) -> Path:
    return repo.common_dir / "ralph" / "integration" / uuid.uuid4().hex[:12]


def open_integration(repo: Repo, commit: str) -> Path:
    """A scratch worktree, detached at ``commit``, under the repository's git dir (what an
    interrupted deletion left beside it is deleted first)."""
    path = integration_path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    for left in path.parent.glob(f"{TRASH}*"):
        if not any(t.is_alive() and t.name == "ralph-scratch" for t in _REMOVING):
            shutil.rmtree(left, ignore_errors=True)
    repo.run("worktree", "add", "-q", "--detach", str(path), commit)
    return path


def reset_integration(path: Path, commit: str, *, clean: bool = True) -> None:
    """The scratch worktree moved to ``commit``, with whatever an earlier verification wrote in
    it removed (a train reuses one worktree: only the files that differ are written);
    ``clean=False``: :func:`clean_integration` removed it already."""
    run_git(path, ["checkout", "-q", "--detach", "-f", commit])
    if clean:
        clean_integration(path)


def clean_integration(path: Path) -> None:
    """Every file of the scratch worktree that its commit does not track, ignored ones too."""
    run_git(path, ["clean", "-q", "-ffdx"])


def close_integration(repo: Repo, path: Path, *, later: bool = False) -> None:
    """Remove the scratch worktree and its registration (both ours alone: no other worktree's
    registration is pruned), whatever a verification wrote in it. With ``later``, git forgets
    it now and its files (moved aside first) are deleted by a thread of their own: unlinking
    a checkout's files costs hundreds of ms that a train's result need not wait for; the
    process still waits for that thread before it exits (:func:`settle` waits for it too)."""
    admin: Path | None = None
    try:
        text = (path / ".git").read_text(encoding="utf-8").strip()
        admin = Path(text.removeprefix("gitdir:").strip())
    except OSError:
        pass
    if admin is not None and admin.parent == repo.common_dir / "worktrees":
        shutil.rmtree(admin, ignore_errors=True)
        _remove(path, later)
    else:
        shutil.rmtree(path, ignore_errors=True)
        if path.exists() or admin is None:
            repo.run("worktree", "remove", "--force", "--force", str(path), check=False)


_REMOVING: list[threading.Thread] = []


def _remove(path: Path, later: bool) -> None:
    if not later:
        shutil.rmtree(path, ignore_errors=True)
        return
    trash = path.with_name(f"{TRASH}{path.name}")
    try:
        path.rename(trash)
    except OSError:
        trash = path
    thread = threading.Thread(
        target=shutil.rmtree, args=(trash,), kwargs={"ignore_errors": True}, name="ralph-scratch"
    )
    thread.start()  # not a daemon: the interpreter waits for it at exit
    _REMOVING.append(thread)


def settle() -> None:
    """Wait until every scratch worktree closed with ``later`` is deleted."""
    while _REMOVING:
        _REMOVING.pop().join()


@contextmanager
def integration_worktree(repo: Repo, commit: str) -> Iterator[Path]:
    """:func:`open_integration` for the length of a block, removed when it ends."""
    path = open_integration(repo, commit)
    try:
        yield path
    finally:
        close_integration(repo, path)


def rebase_onto(repo: Repo, wt: Path, target: str, branch: str) -> tuple[str | None, list[str]]:
    """The branch's own commits replayed on ``target`` in the integration worktree ``wt``
    (detached at ``target``): (the new tip, []) or (None, the files of the first conflict)."""
    base = merge_base(repo, target, branch)
    span = f"{base}..{branch}" if base else branch
    commits = out(repo.top, ["rev-list", "--reverse", "--no-merges", span]).split()
    env = identity_env(repo)
    for commit in commits:
        proc = run_git(
            wt,
            ["cherry-pick", "--allow-empty", "--keep-redundant-commits", commit],
            env=env,
            check=False,
        )
        if proc.returncode != 0:
            names = out(wt, ["diff", "--name-only", "--diff-filter=U", "-z"]).split("\0")
            run_git(wt, ["cherry-pick", "--abort"], check=False)
            return None, sorted(n for n in names if n)
    return out(wt, ["rev-parse", "HEAD"]), []


def commit_all(wt: Path, message: str, identity: dict[str, str]) -> str | None:
    """Commit everything changed in the scratch worktree ``wt`` on its detached HEAD; the new
    commit, or None when nothing changed."""
    run_git(wt, ["add", "-A"])
    if run_git(wt, ["diff", "--cached", "--quiet"], check=False).returncode == 0:
        return None
    run_git(wt, ["commit", "-q", "--no-verify", "-m", message], env=identity)
    return out(wt, ["rev-parse", "HEAD"])


def holders(repo: Repo, branch: str) -> list[Path]:
    """The worktrees (the main one included) that have ``branch`` checked out."""
    found: list[Path] = []
    path: Path | None = None
    for line in repo.git("worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(line[len("worktree ") :])
        elif line == f"branch refs/heads/{branch}" and path is not None:
            found.append(path)
    return found


def local_changes(wt: Path) -> set[str]:
    """Paths with local changes in ``wt``: staged, unstaged, and untracked (not ignored)."""
    text = out(wt, ["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all"])
    return {entry[3:] for entry in text.split("\0") if len(entry) > 3}


def touched(repo: Repo, old: str, new: str) -> set[str]:
    text = out(repo.top, ["diff-tree", "-r", "--name-only", "-z", "--no-renames", old, new])
    return {name for name in text.split("\0") if name}


def _ensure_at(repo: Repo, branch: str, old: str) -> None:
    now = repo.rev(f"refs/heads/{branch}")
    if now != old:
        raise TargetMoved(
            f"{branch} moved while the merge was made and verified ({old[:12]} →"
            f" {(now or 'deleted')[:12]}); it was left as it is"
        )


def advance(repo: Repo, branch: str, old: str, new: str, message: str) -> None:
    """Move ``refs/heads/<branch>`` from ``old`` to ``new``: a compare-and-swap, fast-forward
    only, never forced; a checked-out target's work tree follows as ``git merge --ff-only``
    would. Raises :class:`TargetMoved`, :class:`LocalChanges` or :class:`MergeError`; on any of
    them, the ref and every work tree are as they were (the target is re-read right before it
    moves: an earlier read would add a git call and prove nothing more)."""
    if not is_ancestor(repo, old, new):
        raise MergeError(f"{new[:12]} does not descend from {branch} ({old[:12]}): not moved")
    places = holders(repo, branch)
    if len(places) > 1:
        raise MergeError(
            f"{branch} is checked out in {len(places)} worktrees"
            f" ({', '.join(map(str, places))}); leave one, then merge again"
        )
    if not places:
        proc = repo.run("update-ref", "-m", message, f"refs/heads/{branch}", new, old, check=False)
        if proc.returncode != 0:
            _ensure_at(repo, branch, old)  # raises when it moved
            raise MergeError(f"git update-ref: {proc.stderr.decode('utf-8', 'replace').strip()}")
        return
    wt = places[0]
    clash = sorted(local_changes(wt) & touched(repo, old, new))
    if clash:
        raise LocalChanges(wt, clash)
    _ensure_at(repo, branch, old)
    # a fast-forward makes no commit: no identity needed
    proc = run_git(wt, ["merge", "--ff-only", "--no-edit", "-q", new], check=False)
    if proc.returncode != 0:
        words = proc.stderr.decode("utf-8", "replace").strip()
        raise MergeError(f"git merge --ff-only in {wt} refused: {words}; nothing was changed")


def changed_files(repo: Repo, base: str, tip: str) -> list[dict[str, str]]:
    """``[{"status", "path"}]`` of ``git diff --name-status base tip`` (renames as delete+add)."""
    text = out(repo.top, ["diff", "--name-status", "-z", "--no-renames", base, tip])
    parts = [p for p in text.split("\0") if p]
    return [{"status": s, "path": p} for s, p in zip(parts[::2], parts[1::2], strict=False)]


def diff_text(repo: Repo, base: str, tip: str) -> str:
    """``git diff base tip``: the patch a review shows."""
    text = out(repo.top, ["diff", base, tip])
    return text + "\n" if text else ""


def commits_between(repo: Repo, base: str, tip: str) -> list[dict[str, str]]:
    """``[{"commit", "subject"}]`` of ``base..tip``, oldest first."""
    text = out(repo.top, ["log", "--reverse", "--format=%H%x00%s", f"{base}..{tip}"])
    rows = [line.split("\0", 1) for line in text.splitlines() if "\0" in line]
    return [{"commit": c, "subject": s} for c, s in rows]


def show_file(repo: Repo, commit: str, path: str) -> str | None:
    """A file's text at ``commit`` (None when it is not there)."""
    proc = repo.run("cat-file", "blob", f"{commit}:{path}", check=False)
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None
