"""An agent that floods its output — 100k lines fast, one 10 MB line, binary and invalid UTF-8,
ANSI escapes — through ``ralph-lsp run``: the run finishes normally, the terminal gets clean,
bounded UTF-8 lines, and the raw output is kept for the operator."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time

import pytest

from tests.faults.conftest import make_change
from tests.faults.helpers import CLI, FaultEnv, assert_outcome, gone_within
from tests.tags import running

ONE_TASK = "## 1. Only\n- [ ] 1.1 The one task\n"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize(
    ("kind", "marker"),
    [
        ("lines", "flood line 99999 of 100000"),
        ("long", "after the long line"),
        ("binary", "after the binary"),
        ("ansi", "after the escapes"),
    ],
)
def test_flood_through_the_cli(fx: FaultEnv, kind: str, marker: str) -> None:
    make_change(fx.root, "solo", ONE_TASK)
    result = fx.run_cli("solo", "--agent-command", fx.agent_command("flood", kind), timeout=90)
    assert_outcome(fx, result, "succeeded", "every task is checked (1/1)", change="solo")
    assert fx.tasks("solo").read_text() == ONE_TASK.replace("[ ]", "[x]")
    raw = (fx.logs / "cli.stdout").read_bytes()
    text = raw.decode("utf-8")  # strict: the terminal only ever gets valid UTF-8
    assert CONTROL.search(text) is None, "escape or control characters reached the terminal"
    lines = text.split("\n")
    assert any(marker in line for line in lines), "output after the flood was lost"
    assert "checked one task" in lines
    assert max(len(line) for line in lines) < 10_000, "a line reached the terminal uncapped"
    if kind == "lines":
        assert sum(1 for line in lines if line.startswith("flood line ")) == 100_000
    # The operator keeps the raw bytes of the iteration.
    record_dir = next((fx.root / ".ralph" / "runs").iterdir())
    raw_log = (record_dir / "iteration-1.log").read_bytes()
    if kind == "long":
        assert len(raw_log) > 10 * 1024 * 1024
    assert marker.encode() in raw_log
    assert result.elapsed < 60


def test_a_closed_stdout_stops_the_run_quietly(fx: FaultEnv) -> None:
    # Found in review: `ralph-lsp run … | head -2` printed 131 tracebacks and ran every
    # iteration anyway. Now the first failed write stops the run as Ctrl-C does, silently.
    fx.env["FAULT_RELEASE"] = str(fx.logs / "never")
    argv = fx.cli_argv("alpha", "--agent-command", fx.agent_command("flood-until"))
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=fx.env, cwd=fx.root
    )
    assert proc.stdout is not None and proc.stderr is not None
    head = [proc.stdout.readline() for _ in range(2)]  # what `head -2` reads
    proc.stdout.close()
    try:
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read().decode("utf-8", "replace")
    assert all(head)
    assert code == 5, stderr[-2000:]
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr[-2000:]
    record = fx.record()
    assert record["state"] == "stopped"
    assert record["reason"] == "standard output was closed"
    assert len(record["iterations"]) == 1  # type: ignore[arg-type]


def test_a_closed_stdout_stops_verify_and_its_command(fx: FaultEnv) -> None:
    # Found in review: `ralph-lsp verify … | head` ran the command to its end after the pipe
    # closed. Now the command's tree is stopped as soon as stdout is closed, even while the
    # command prints nothing, and verify exits quietly (5, as `run` does).
    pid_file = fx.logs / "verify.pid"  # in the work tree: the command runs sandboxed
    slow = shlex.join(
        [
            sys.executable,
            "-c",
            "import os, sys, time\n"
            f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
            "print('ready', flush=True)\n"
            "time.sleep(120)\n",
        ]
    )
    argv = [*CLI, "verify", "alpha", "--root", str(fx.root), "--verify", slow]
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=fx.env, cwd=fx.root
    )
    assert proc.stdout is not None and proc.stderr is not None
    while not proc.stdout.readline().endswith(b" ready\n"):  # what `head` reads, then exits
        assert time.monotonic() - started < 30, "the command never printed"
    pids = running(str(pid_file))  # the host's pids of the command (and of its sandbox)
    assert pids
    proc.stdout.close()
    try:
        code = proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode("utf-8", "replace")
    assert code == 5, stderr[-2000:]
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr[-2000:]
    assert gone_within(pids, 2) == []
    assert time.monotonic() - started < 20
