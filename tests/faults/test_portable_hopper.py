"""Portable supervision (``RALPH_PROC=portable``: psutil and the tree's tag, no subreaper; the
macOS path) against a fast process hopper (issue: "portable supervision loses a fast hopper"):
a program that forks, lets its parent exit, starts a session of its own and forks again, with
no pause, for 8 s. Before the fix a compiled one was still alive 4 s after the run ended (3 tries
out of 3). After the run ends, no process carrying the test's tag may be alive."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.helpers import FaultEnv, kill_tagged_for_good, tagged_processes

HOPPER_C = r"""
#include <time.h>
#include <unistd.h>

int main(void) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (fork() != 0) return 0;  /* the agent itself exits at once */
    for (;;) {
        setsid();
        pid_t child = fork();
        if (child > 0) _exit(0);  /* the parent goes; the child hops on under a new pid */
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= 8) _exit(0);
    }
}
"""


def _compiled_hopper(tmp: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc, gcc or clang) to build the compiled hopper")
    source = tmp / "hopper.c"
    source.write_text(HOPPER_C)
    exe = tmp / "hopper"
    subprocess.run([cc, "-O2", "-o", str(exe), str(source)], check=True, timeout=120)
    return exe


# The CLI runs under this small reaper, as on a desktop whose init reaps at once: the hopper's
# orphans come to it (a child subreaper) and are reaped as they die. Left to this machine's PID 1,
# which reaps slowly, 8 s of hopping piled up zombies until pid_max was reached and the CLI itself
# could not start a thread. What is tested is unchanged: the portable supervision finds the
# hopper by its tag, never by who its parent is.
REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
cli = subprocess.Popen(sys.argv[1:])
while True:
    pid, status = os.wait()
    if pid == cli.pid:
        sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run_and_look(fx: FaultEnv, command: str, *extra: str) -> list[int]:
    """Run one iteration of ``command`` under the portable inspection; the tagged processes
    still alive half a second after the CLI ended."""
    fx.env["RALPH_PROC"] = "portable"
    try:
        argv = fx.cli_argv("alpha", "--agent-command", command, "--max-iterations", "1", *extra)
        result = subprocess.run(
            [sys.executable, "-c", REAPER, *argv],
            env=fx.env,
            cwd=fx.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode in (3, 4), result.stdout[-2000:] + result.stderr[-2000:]
        time.sleep(0.5)
        return tagged_processes(fx.tag)
    finally:
        kill_tagged_for_good(fx.tag)


def test_a_compiled_fast_hopper_is_gone_when_the_run_ends(fx: FaultEnv, tmp_path: Path) -> None:
    exe = _compiled_hopper(tmp_path)
    for attempt in range(3):
        left = _run_and_look(fx, str(exe))
        assert left == [], f"try {attempt + 1}: a compiled hopper outlived the run: {left}"
        for record in (fx.root / ".ralph" / "runs").iterdir():
            shutil.rmtree(record)


def test_a_python_fast_hopper_is_gone_when_the_run_ends(fx: FaultEnv) -> None:
    fx.env["FAULT_HOP_SECONDS"] = "0"
    command = fx.agent_command("hopper")
    left = _run_and_look(fx, command, "--iteration-timeout", "1", "--stop-grace", "0.2")
    assert left == [], f"a Python hopper outlived the run: {left}"
