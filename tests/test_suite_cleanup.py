"""An interrupted pytest leaves nothing of what its tests started (issue 46: a ``make test``
ended by a timeout's SIGTERM left processes running).

A pytest with this suite's conftest runs a test that starts a process in a session of its own
(as a detached runner is, or an agent that escaped with ``setsid``), which no signal to pytest
or its group reaches. Sent SIGTERM, SIGHUP or SIGINT, pytest ends, and so does that process:
the session finds what it started by ``RALPH_TEST_SESSION`` and kills it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.tags import gone_within, terminal_signals

INNER = """
import subprocess, time

def test_starts_a_detached_process():
    subprocess.Popen(["sleep", "{seconds}"], start_new_session=True)
    print("started", flush=True)
    time.sleep(600)
"""


def detached(seconds: str) -> list[int]:
    """Live processes running ``sleep <seconds>`` (a number no other test uses)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if f.read() == f"sleep\0{seconds}\0".encode():
                    found.append(int(name))
        except (OSError, ValueError):
            continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signalled_pytest_ends_what_its_tests_started(tmp_path: Path, signum: int) -> None:
    seconds = str(random.randrange(10**6, 10**7))
    (tmp_path / "test_inner.py").write_text(INNER.format(seconds=seconds))
    log = tmp_path / "out.txt"  # a file, not a pipe: a process left behind would hold a pipe
    with log.open("w") as out_file:
        inner = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "tests.conftest", str(tmp_path)],
            cwd=REPO,
            stdout=out_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=terminal_signals,
        )
    try:
        deadline = time.monotonic() + 60
        while not (pids := detached(seconds)) and time.monotonic() < deadline:
            assert inner.poll() is None, log.read_text()
            time.sleep(0.1)
        assert pids, "the inner test did not start its process"
        inner.send_signal(signum)
        assert inner.wait(timeout=30) != 0
        out = log.read_text()
        assert gone_within(pids, 5) == [], out
        assert "the session ended 1 process(es) it had left" in out
    finally:
        inner.kill()
        for pid in detached(seconds):
            os.kill(pid, signal.SIGKILL)
