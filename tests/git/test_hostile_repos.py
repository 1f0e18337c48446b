"""A stranger's repository never gets its programs run by ralph-lsp's git (issue 25, fault 2).

The repository's ``.git/config`` names a canary in every key that runs a program (filters,
textconv, external diff, fsmonitor, hooks, pager, ssh, credential helpers, …), and a partial
clone lacks a blob that only an ssh fetch would bring. Checkpoints, ``diff``, ``restore`` and a
worktree run, through the real command line: no canary ever runs.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

from tests.git.conftest import NEEDS_GIT, git
from tests.git.hostile import CHANGE, Canaries, arm, hello_repo, partial_clone
from tests.git.test_runs import cli

pytestmark = NEEDS_GIT


def diff_on_a_terminal(repo: Path, *args: str) -> tuple[int, bytes]:
    """``ralph-lsp diff`` with standard output a terminal (git would start a pager there)."""
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = dict(os.environ, RALPH_DEMO_DELAY="0", TERM="xterm")
    env.pop("NO_COLOR", None)
    env.pop("GIT_PAGER", None)
    env.pop("PAGER", None)
    proc = subprocess.run(
        [sys.executable, "-m", "ralph_lsp", "diff", CHANGE, *args],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
    )
    os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, b"".join(chunks)


def test_checkpoints_diff_and_restore_run_none_of_the_repositorys_programs(
    tmp_path: Path,
) -> None:
    repo = hello_repo(tmp_path / "hello")
    canaries = Canaries(tmp_path)
    arm(repo, canaries)
    canaries.clear()
    run = cli(repo, "run", CHANGE, "--agent", "demo")
    assert run.stdout.splitlines()[-1].startswith("succeeded:")
    assert canaries.hits() == [], "checkpoints ran the repository's programs"
    piped = cli(repo, "diff", CHANGE, "--iteration", "2")
    assert "+- [x] 2.1" in piped.stdout  # git's own text, not a textconv of it
    code, shown = diff_on_a_terminal(repo, "--iteration", "2")
    assert code == 0 and b"2.1" in shown
    assert canaries.hits() == [], "diff ran the repository's programs"
    restored = cli(repo, "restore", CHANGE, "--iteration", "1")
    undo = restored.stdout.split("--checkpoint ")[-1].strip()
    cli(repo, "restore", CHANGE, "--checkpoint", undo)
    assert canaries.hits() == [], "restore ran the repository's programs"


def test_a_worktree_run_runs_none_of_the_repositorys_programs(tmp_path: Path) -> None:
    repo = hello_repo(tmp_path / "hello")
    canaries = Canaries(tmp_path)
    arm(repo, canaries)
    canaries.clear()
    run = cli(repo, "run", CHANGE, "--agent", "demo", "--isolation", "worktree")
    assert run.stdout.splitlines()[-1].startswith("succeeded:"), run.stdout
    cli(repo, "diff", CHANGE, "--iteration", "1")
    assert canaries.hits() == []


def test_a_partial_clone_never_fetches_a_missing_blob_through_its_ssh_command(
    tmp_path: Path,
) -> None:
    clone, old = partial_clone(tmp_path)
    git(clone, "update-ref", f"refs/ralph/{CHANGE}/r-1/0", old)
    git(clone, "update-ref", f"refs/ralph/{CHANGE}/r-1/1", "HEAD")
    canaries = Canaries(tmp_path)
    arm(clone, canaries)
    canaries.clear()
    diff = cli(clone, "diff", CHANGE, "--run", "r-1", "--iteration", "1", check=False)
    assert canaries.hits() == [], diff.stderr
    restore = cli(clone, "restore", CHANGE, "--checkpoint", old, check=False)
    assert canaries.hits() == [], restore.stderr
    assert "left alone: f.txt (its content is not in this clone (never fetched))" in restore.stdout
    assert (clone / "f.txt").read_text() == "two\n"  # nothing could be written without the blob
