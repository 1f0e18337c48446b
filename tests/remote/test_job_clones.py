"""A job's clone lives in a ``ralph-job-*`` folder of the worker's temp folder; a runner that is
killed cannot remove its own, so the next job on that node removes the clones whose runner is
gone, and only those."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ralph_lsp.remote.job import new_workdir


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_new_job_removes_the_clones_of_runners_that_are_gone(tmp_path: Path) -> None:
    dead = tmp_path / "ralph-job-dead"
    (dead / "repo").mkdir(parents=True)
    (dead / "owner").write_text(f"{dead_pid()}\n")
    live = tmp_path / "ralph-job-live"
    live.mkdir()
    (live / "owner").write_text(f"{os.getppid()}\n")  # a running process: its job goes on
    unowned = tmp_path / "ralph-job-unowned"  # not ours to judge
    unowned.mkdir()
    other = tmp_path / "something-else"
    other.mkdir()
    (other / "owner").write_text(f"{dead_pid()}\n")

    work = new_workdir(tmp_path)

    assert work.parent == tmp_path and work.name.startswith("ralph-job-")
    assert (work / "owner").read_text().strip() == str(os.getpid())
    assert not dead.exists()
    assert live.exists() and unowned.exists() and other.exists()
