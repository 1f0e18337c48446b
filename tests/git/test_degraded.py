"""Unusual repository states: checkpoints still work or degrade with a warning, and never touch
the user's state."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph_lsp.git import checkpoints as cp
from tests.conftest import DEMO_RUN, copy_example
from tests.git.conftest import NEEDS_GIT, fingerprint, git, init_repo

CHANGE = "c"

pytestmark = NEEDS_GIT


def committed(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    return repo


def detached(tmp_path: Path) -> Path:
    repo = committed(tmp_path)
    git(repo, "checkout", "-q", "--detach")
    return repo


def merging(tmp_path: Path) -> Path:
    repo = committed(tmp_path)
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("other\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("mine\n")
    git(repo, "commit", "-q", "-am", "mine")
    git(repo, "merge", "-q", "other", check=False)  # a conflict: the merge stays in progress
    assert (repo / ".git" / "MERGE_HEAD").exists()
    return repo


def unborn(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    return repo


def with_submodule(tmp_path: Path) -> Path:
    sub = committed(tmp_path / "sub")
    repo = committed(tmp_path)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "lib")
    git(repo, "commit", "-q", "-m", "sub")
    return repo


def with_lfs(tmp_path: Path) -> Path:
    repo = committed(tmp_path)
    (repo / ".gitattributes").write_text("*.bin filter=lfs diff=lfs merge=lfs -text\n")
    (repo / "big.bin").write_bytes(b"\0" * 1000)
    return repo


def sparse(tmp_path: Path) -> Path:
    repo = committed(tmp_path)
    (repo / "dir").mkdir()
    (repo / "dir" / "x.txt").write_text("x\n")
    (repo / "keep").mkdir()
    (repo / "keep" / "y.txt").write_text("y\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "dirs")
    git(repo, "sparse-checkout", "set", "keep")
    assert not (repo / "dir").exists()
    return repo


STATES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "detached": (detached, "HEAD is detached"),
    "merging": (merging, "a merge is in progress"),
    "unborn": (unborn, "no commits yet"),
    "submodule": (with_submodule, "submodules are recorded"),
    "lfs": (with_lfs, "LFS files"),
    "sparse": (sparse, "sparse checkout"),
}


@pytest.mark.parametrize("state", sorted(STATES))
def test_checkpoints_in_an_unusual_repository(tmp_path: Path, state: str) -> None:
    make, note = STATES[state]
    repo = make(tmp_path)
    (repo / "agent.txt").write_text("the agent's file\n")
    before = fingerprint(repo)
    warnings: list[str] = []
    c = cp.open_checkpointer(repo, CHANGE, "r-1", warnings.append)
    assert c is not None
    assert any(note in w for w in warnings), warnings
    zero, _ = c.record(0)
    (repo / "agent.txt").write_text("changed by iteration 1\n")
    one, changed = c.record(1)
    assert zero is not None and one is not None, warnings
    assert changed == ["agent.txt"]
    assert fingerprint(repo) == before | {"files": fingerprint(repo)["files"]}
    assert git(repo, "status", "--porcelain=v1") == before["status"]


def test_a_checkpoint_that_fails_is_a_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    repo = committed(tmp_path)
    warnings: list[str] = []
    c = cp.open_checkpointer(repo, CHANGE, "r-1", warnings.append)
    assert c is not None
    (repo / ".git" / "refs" / "ralph").write_text("in the way\n")  # no ref can go under it
    assert c.record(0) == (None, [])
    assert any("checkpoint 0 could not be recorded" in w for w in warnings), warnings
    (repo / ".git" / "refs" / "ralph").unlink()
    (repo / "new.txt").write_text("new\n")
    one, changed = c.record(1)
    assert one is not None and changed == ["new.txt"]


def test_a_file_git_cannot_add_is_a_warning(tmp_path: Path) -> None:
    repo = committed(tmp_path)
    warnings: list[str] = []
    c = cp.open_checkpointer(repo, CHANGE, "r-1", warnings.append)
    assert c is not None
    (repo / "nested").mkdir()
    git(repo / "nested", "init", "-q")  # a repository with no commit: git cannot add it
    (repo / "nested" / "f.txt").write_text("f\n")
    (repo / "ok.txt").write_text("ok\n")
    one, changed = c.record(1)
    assert one is not None and changed == ["ok.txt"]
    assert any("nested/" in w and "checkpoint 1" in w for w in warnings), warnings


@pytest.mark.parametrize("state", sorted(STATES))
def test_a_demo_run_in_an_unusual_repository_succeeds(tmp_path: Path, state: str) -> None:
    # The whole run, not only the checkpointer: the state is said once and never ends the run.
    make, note = STATES[state]
    repo = make(tmp_path)
    copy_example(repo / "project")
    before = git(repo, "--no-optional-locks", "status", "--porcelain=v1")
    proc = subprocess.run(
        DEMO_RUN,
        cwd=repo / "project",
        env=dict(os.environ, RALPH_DEMO_DELAY="0", NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1].startswith("succeeded:")
    assert proc.stdout.count(note) == 1, proc.stdout[-3000:]
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/ralph").split()
    assert len(refs) == 4, refs  # before iteration 1 and after each of the three
    assert git(repo, "--no-optional-locks", "status", "--porcelain=v1") == before
