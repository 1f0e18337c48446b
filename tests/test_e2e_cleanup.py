"""An interrupted ``make e2e`` leaves no process behind (issue 46: a timeout's SIGTERM during
the e2e left its code-server and node running for 50 minutes).

``editor-client/scripts/e2e.sh`` calls ``end_everything_on_exit`` (``scripts/lib.sh``) first.
These tests run that very function in a script shaped like e2e.sh: a process in a session of its
own (code-server is started ``detached``), one that ignores SIGTERM and SIGINT, and a long
foreground step started as ``cmd & wait $!``. Whether the script is sent SIGTERM alone (a
timeout, or make passing its SIGTERM on), SIGINT with its process group (Ctrl-C) or SIGHUP,
nothing it started is left a few seconds later. The real e2e (code-server, Chromium) is too
heavy for the suite; its processes carry the same tag.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.tags import gone_within, running, tagged, terminal_signals

LIB = REPO / "editor-client" / "scripts" / "lib.sh"
E2E = REPO / "editor-client" / "scripts" / "e2e.sh"
SLEEPS = ("1001", "1002", "1003", "1004")
SHAPED_LIKE_E2E = f"""
source {LIB}
end_everything_on_exit
setsid sleep {SLEEPS[0]} &                                  # code-server: a session of its own
bash -c 'trap "" TERM INT HUP; exec sleep {SLEEPS[1]}' &    # deaf to SIGTERM and SIGINT
sh -c 'sleep {SLEEPS[2]}' &
echo ready
sleep {SLEEPS[3]} &                                         # node --test: the long step
wait $!
"""


def start(tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    script = tmp_path / "e2e-shaped.sh"
    script.write_text(SHAPED_LIKE_E2E)
    proc = subprocess.Popen(
        ["bash", str(script)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=terminal_signals,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    deadline = time.monotonic() + 10
    while len(pids := started()) < len(SLEEPS) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pids) >= len(SLEEPS), pids
    return proc, pids


def started() -> list[int]:
    """This test's processes running one of the script's sleeps (found by its tag)."""
    return sorted({pid for s in SLEEPS for pid in running(f"sleep\0{s}")})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "status"),
    [("SIGTERM to the script", 143), ("SIGINT to its group", 130), ("SIGHUP", 129)],
)
def test_an_interrupted_e2e_leaves_no_process(
    tmp_path: Path, process_tag: str, how: str, status: int
) -> None:
    proc, pids = start(tmp_path)
    if how == "SIGINT to its group":  # as a terminal's Ctrl-C (this process is not in it)
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGHUP)
    assert proc.wait(timeout=15) == status
    # SIGTERM first, SIGKILL 5 s later for the one that ignores it
    assert gone_within(pids, 3) == []
    assert tagged(process_tag) == []  # nor anything else it started


@pytest.mark.slow  # as the interrupted ones: the one deaf to SIGTERM takes the 5 s grace
def test_a_finished_e2e_leaves_no_process_either(tmp_path: Path, process_tag: str) -> None:
    script = tmp_path / "e2e-shaped.sh"
    script.write_text(SHAPED_LIKE_E2E.replace(f"sleep {SLEEPS[3]} &", "sleep 0.2 &"))
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert tagged(process_tag) == []


def test_e2e_sh_ends_everything_on_exit_before_it_starts_anything() -> None:
    lines = [line.strip() for line in E2E.read_text().splitlines()]
    call = lines.index("end_everything_on_exit")
    assert lines.index('source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"') < call
    first_command = next(
        i for i, line in enumerate(lines) if line.startswith(("bash ", "vsix=", "node "))
    )
    assert call < first_command
    # its own EXIT trap (the temporary folder) still ends what it started
    assert "trap 'end_tagged; " in E2E.read_text()
    # the tests run in the background and are waited for: a trap runs while waiting
    node = next(i for i, line in enumerate(lines) if line.startswith("node --test"))
    assert lines[node].endswith("&") and lines[node + 1].startswith("wait $!")
