"""A full disk (issue 37, "Also"): the project lives on a small tmpfs that a fake agent (a real
subprocess) fills at an iteration, so that the run's raw log, its record and its checkpoint hit
"no space left on device". tasks.md, the user's files, the history and the checkpoints are never
left corrupt; the run ends ``failed`` saying "no space left on device", the CLI exits 1, and once
space is freed a re-run goes on. Mounting needs root: skipped with the reason otherwise."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralph_lsp.runs.history import load_records
from tests.faults.conftest import TASKS
from tests.faults.helpers import FaultEnv, check_tasks
from tests.tags import scratch

FILLER = Path(__file__).resolve().parents[1] / "fake_agents" / "fill_disk.py"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=30)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60
    )


def _project_on(disk: Path, fx: FaultEnv, git_only: bool) -> Path:
    """The project on ``disk``, a git work tree; with ``git_only``, only its git folder is
    there (``--separate-git-dir``): a full disk then fails the checkpoint, not the history."""
    root = fx.root
    if not git_only:
        root = disk / "project"
        shutil.copytree(fx.root, root)
    for args in (
        ("init", "-q", "-b", "main", *(["--separate-git-dir", str(disk / "git")] * git_only)),
        ("config", "user.email", "u@example.com"),
        ("config", "user.name", "U"),
        ("add", "-A"),
        ("commit", "-qm", "start"),
    ):
        assert _git(root, *args).returncode == 0
    fx.root = root
    return root


CASES = {
    # (spawn that fills, lines printed after, only git's folder on the small disk)
    "after-an-iteration": (2, 0, False),
    "while-the-raw-log-is-written": (1, 20000, False),
    "during-a-checkpoint": (2, 0, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_full_disk_ends_the_run_failed_and_corrupts_nothing(
    fx: FaultEnv, small_disk: Path, case: str
) -> None:
    fill_at, then_print, git_only = CASES[case]
    root = _project_on(small_disk, fx, git_only)
    logs = scratch(root)  # in the work tree: a sandboxed agent may write there
    # The filler fills the small disk from where a sandboxed agent may write on it: the work
    # tree, or, when only the git folder is there, what git commit needs of it (its objects).
    filler = (small_disk / "git" / "objects" if git_only else logs) / "filler.bin"
    readme = (root / "README.md").read_bytes()
    fx.env.update({
        "FAKE_COUNTER": str(logs / "spawned"), "FILL_AT": str(fill_at),
        "FILL_PATH": str(filler), "FILL_THEN_PRINT": str(then_print),
    })  # fmt: skip
    agent = shlex.join([sys.executable, str(FILLER)])
    result = fx.run_cli("alpha", "--agent-command", agent, "--verify-when", "off", timeout=120)
    said = result.stdout[-3000:] + result.stderr[-2000:]
    assert result.returncode == 1, said
    assert "failed: no space left on device" in result.stdout, said
    what = "checkpoint" if git_only else "the run's history"
    assert f"failed: no space left on device: {what}" in result.stdout, said
    spawned = int((logs / "spawned").read_text())
    assert spawned == fill_at  # no spawn after the disk filled
    # tasks.md is the original with one box checked per spawn, the user's file as it was
    assert fx.tasks().read_bytes() == check_tasks(TASKS.encode(), spawned)
    assert (root / "README.md").read_bytes() == readme
    # the history is whole: the record says how the run ended; no temporary file is left
    (record,) = load_records(root, "alpha")
    assert record["state"] == "failed" and "no space left on device" in record["reason"]
    runs = root / ".ralph" / "runs"
    for path in runs.rglob("*"):
        assert not path.name.startswith(".tmp-") and path.name != ".reserve", path
        if path.name == "record.json":
            json.loads(path.read_text())
    # the checkpoints are whole
    fsck = _git(root, "fsck", "--strict")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    refs = _git(root, "for-each-ref", "--format=%(refname)", "refs/ralph").stdout.split()
    assert refs and all(_git(root, "cat-file", "-e", r).returncode == 0 for r in refs)

    filler.unlink()  # space is freed: a re-run goes on where the first one ended
    again = fx.run_cli("alpha", "--agent-command", agent, "--verify-when", "off", name="again")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "[ ]" not in fx.tasks().read_text()
    with contextlib.suppress(FileNotFoundError):
        assert _git(root, "fsck", "--strict").returncode == 0
