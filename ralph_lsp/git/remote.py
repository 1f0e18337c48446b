"""Git as the data plane of a remote run (SPEC §9 "Remote runs on Ray").

The operator pushes its ``HEAD`` to a new run branch ``ralph/<change>/<runId>``; the job clones
that branch, pushes one commit per iteration to it and fetches the guidance and stop refs the
operator pushes under ``refs/ralph/…``; the operator fetches the branch back. Every push here is
a plain ``git push`` (never ``--force``, never a ``+`` refspec) to a ref under
``refs/heads/ralph/`` or ``refs/ralph/``: :func:`push` refuses anything else before git runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from ralph_lsp.git.command import GitError, Repo, identity_env, out, run_git

RUN_BRANCH_PREFIX = "refs/heads/ralph/"
CONTROL_PREFIX = "refs/ralph/"
# The wrapper allows no transport at all (git/command.py); these commands reach the remote the
# user named, over git's usual transports only (no ext::, no fd::), hooks still off.
REMOTE_ENV = {"GIT_ALLOW_PROTOCOL": "file:git:ssh:http:https"}


def run_branch(change: str, run_id: str) -> str:
    return f"ralph/{change}/{run_id}"


def guidance_prefix(change: str, run_id: str) -> str:
    """Where guidance k is pushed: ``refs/ralph/guidance/<change>/<runId>/<k>`` (a blob)."""
    return f"{CONTROL_PREFIX}guidance/{change}/{run_id}/"


def stop_ref(change: str, run_id: str) -> str:
    """The ref whose presence asks the job to stop its run cooperatively."""
    return f"{CONTROL_PREFIX}stop/{change}/{run_id}"


def origin_url(repo: Repo, name: str = "origin") -> str | None:
    proc = repo.run("remote", "get-url", name, check=False)
    url = proc.stdout.decode("utf-8", "replace").strip()
    return url if proc.returncode == 0 and url else None


def absolute_url(top: Path, url: str) -> str:
    """``url`` as a clone elsewhere can use it: a local path that is relative (to the
    repository, as ``git remote add origin ../shared.git`` leaves it) made absolute; a URL
    (``scheme://``, ``file:``) or a ``host:path`` is left as it is."""
    if "://" in url or url.startswith("file:") or ":" in url.split("/", 1)[0]:
        return url
    return url if os.path.isabs(url) else str((top / url).resolve())


def uncommitted(repo: Repo) -> list[str]:
    """The paths whose changes a clone of ``HEAD`` would not see (ignored files excepted)."""
    text = out(repo.top, ["status", "--porcelain", "--untracked-files=all"])
    return [line[3:] for line in text.splitlines() if line.strip()]


def push(cwd: Path, url: str, source: str, target: str) -> None:
    """``git push url source:target``, only to ``ralph/…`` refs and never forced."""
    if not target.startswith((RUN_BRANCH_PREFIX, CONTROL_PREFIX)) or ".." in target:
        raise GitError(f"refusing to push outside ralph/…: {target}")
    if source.startswith("+"):
        raise GitError("refusing a forced push")
    run_git(cwd, ["push", "--quiet", "--no-verify", url, f"{source}:{target}"], env=REMOTE_ENV)


def write_note(repo: Repo, text: str) -> str:
    """A commit of the empty tree whose message is ``text`` (how guidance travels)."""
    tree = run_git(repo.top, ["mktree"], stdin=b"").stdout.decode("ascii").strip()
    proc = run_git(
        repo.top, ["commit-tree", tree], env=identity_env(repo), stdin=text.encode("utf-8")
    )
    return proc.stdout.decode("ascii").strip()


def read_note(cwd: Path, oid: str) -> str:
    text = out(cwd, ["cat-file", "commit", oid])
    return text.split("\n\n", 1)[1] if "\n\n" in text else ""


def remote_refs(cwd: Path, url: str, prefix: str) -> dict[str, str]:
    """ref → object id of the remote's refs under ``prefix``."""
    text = out(cwd, ["ls-remote", url, prefix + "*"], env=REMOTE_ENV)
    refs: dict[str, str] = {}
    for line in text.splitlines():
        oid, _, ref = line.partition("\t")
        if ref.startswith(prefix):
            refs[ref] = oid
    return refs


def fetch(cwd: Path, url: str, source: str, target: str) -> None:
    """Fetch ``source`` of ``url`` into the local ref ``target`` (under ``refs/ralph/``)."""
    if not target.startswith(CONTROL_PREFIX):
        raise GitError(f"refusing to fetch into {target}: only refs/ralph/… are written")
    run_git(cwd, ["fetch", "--quiet", "--no-tags", url, f"+{source}:{target}"], env=REMOTE_ENV)


def fetch_objects(cwd: Path, url: str, refs: list[str]) -> None:
    """Fetch the commits of ``refs`` without writing any local ref."""
    if refs:
        args = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", url, *refs]
        run_git(cwd, args, env=REMOTE_ENV)


def clone_branch(url: str, branch: str, dest: Path) -> None:
    """A clone of only ``branch`` of ``url`` into ``dest`` (which must not exist), at its tip
    with a detached ``HEAD`` and no local branch: the run's own worktree branch
    ``ralph/<change>`` could not live beside a local ``ralph/<change>/<runId>``."""
    run_git(
        dest.parent,
        ["clone", "--quiet", "--single-branch", "--no-tags", "--branch", branch, url, str(dest)],
        env=REMOTE_ENV,
    )
    run_git(dest, ["checkout", "--quiet", "--detach"])
    run_git(dest, ["branch", "--quiet", "-D", branch])
