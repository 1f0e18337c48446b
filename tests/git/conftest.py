"""Real git repositories in temporary folders; a fingerprint of everything that is the user's."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import copy_example

NEEDS_GIT = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Tess Ter",
    "GIT_AUTHOR_EMAIL": "tess@example.com",
    "GIT_COMMITTER_NAME": "Tess Ter",
    "GIT_COMMITTER_EMAIL": "tess@example.com",
}


def git(cwd: Path, *args: str, check: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    env["HOME"] = str(cwd)  # no user config of this machine leaks in
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Tess Ter")
    git(path, "config", "user.email", "tess@example.com")
    return path


def fingerprint(repo: Path) -> dict[str, object]:
    """Everything of the user's that a run must leave byte-identical."""
    gitdir = repo / ".git"

    def digest(p: Path) -> str | None:
        return hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None

    files = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel.startswith((".git/", ".ralph/")) or rel in (".git", ".ralph") or path.is_dir():
            continue
        files[rel] = digest(path)
    return {
        # --no-optional-locks: the test's own `git status` must not refresh the index it checks
        "status": git(repo, "--no-optional-locks", "status", "--porcelain=v1", "-uall"),
        "index": digest(gitdir / "index"),
        "HEAD": (gitdir / "HEAD").read_text(),
        "head_commit": git(repo, "rev-parse", "HEAD", check=False),
        "branches": git(repo, "for-each-ref", "refs/heads", "refs/tags"),
        "stash": git(repo, "for-each-ref", "refs/stash"),
        "stash_log": digest(gitdir / "logs" / "refs" / "stash"),
        "files": files,
    }


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """examples/hello as a git repository with the user's own work in progress: one commit, a
    stash, a staged change, an unstaged change, an untracked file and an ignored file."""
    repo = tmp_path / "hello"
    copy_example(repo)
    init_repo(repo)
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    (repo / "notes.txt").write_text("first\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    (repo / "notes.txt").write_text("stashed\n")
    git(repo, "stash", "-q")
    (repo / "notes.txt").write_text("staged\n")
    git(repo, "add", "notes.txt")
    (repo / "notes.txt").write_text("staged then edited\n")
    (repo / "scratch.txt").write_text("untracked\n")
    (repo / "debug.log").write_text("ignored\n")
    yield repo
