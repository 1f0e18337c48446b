"""Helpers of the fault matrix: running the CLI as a user does, reading what the fake agents
recorded, the history record, and the process table."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph_lsp.runs.history import load_records
from tests.conftest import alive
from tests.tags import programs, tagged, terminal_signals

TAG = "RALPH_FAULT_TAG"
FAULT_AGENT = Path(__file__).resolve().parents[1] / "fake_agents" / "fault_agent.py"
CLI = [sys.executable, "-m", "ralph_lsp"]
FINAL_STATES = ("succeeded", "stuck", "exhausted", "failed", "stopped", "interrupted")


def tagged_processes(tag: str) -> list[int]:
    """Live processes (zombies excluded) whose environment carries ``TAG=tag``."""
    return tagged(tag, TAG)


WATCHDOG = b"ralph_lsp.proc.watchdog"


def killed_by(signum: int) -> int:
    """The exit code a run records for an agent killed by ``signum``: ``-signum``, sandboxed too
    (bubblewrap reports the death as 128 + n; the bridge says it was a signal)."""
    return -signum


def watchdogs(pids: list[int]) -> list[int]:
    """The watchdogs among ``pids`` (their command line names the module)."""
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if WATCHDOG in f.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return found


def gone_for(tag: str, *, within: float, quiet: float) -> bool:
    """Whether, within ``within`` seconds, no process carrying ``tag`` is seen in any scan for
    ``quiet`` seconds in a row."""
    start = last_seen = time.monotonic()
    while time.monotonic() - start < within + quiet:
        if tagged_processes(tag):
            last_seen = time.monotonic()
        elif time.monotonic() - last_seen >= quiet and last_seen - start <= within:
            return True
        time.sleep(0.005)
    return False


def kill_tagged_for_good(tag: str, seconds: float = 3.0) -> None:
    """The test's own cleanup: SIGKILL whatever carries ``tag`` until none has shown for a
    second, so a failing test never leaves a process hopping for the rest of the session."""
    quiet = time.monotonic()
    deadline = quiet + seconds
    while time.monotonic() < deadline and time.monotonic() - quiet < 1.0:
        for pid in tagged_processes(tag):
            quiet = time.monotonic()
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``predicate`` until it is truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def gone_within(pids: list[int], timeout: float) -> list[int]:
    """The pids still alive after ``timeout`` seconds (empty when all went in time)."""
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.01)
    return left


def check_tasks(data: bytes, k: int) -> bytes:
    """``data`` with its first ``k`` unchecked tasks checked, as the fault agent edits it."""
    for _ in range(k):
        data = re.sub(rb"^(\s*[-*+] )\[ \]", rb"\1[x]", data, count=1, flags=re.M)
    return data


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    elapsed: float

    @property
    def last_line(self) -> str:
        lines = self.stdout.rstrip("\n").split("\n")
        return lines[-1] if lines else ""


@dataclass
class FaultEnv:
    root: Path
    logs: Path
    tmp: Path
    env: dict[str, str]
    tag: str

    # -- the agent -----------------------------------------------------------------------------
    def agent(self, *args: str) -> list[str]:
        """The argv of the fault agent in ``args``' mode."""
        return [sys.executable, str(FAULT_AGENT), *args]

    def agent_command(self, *args: str) -> str:
        return shlex.join(self.agent(*args))

    def pids(self) -> list[int]:
        """The host's pids of the fault agents alive now (and of the children they forked),
        found by the tag: those in pids.txt are their PID namespace's when sandboxed."""
        return programs(FAULT_AGENT, self.tag, TAG)

    def pids_written(self) -> list[int]:
        """The pids the agents wrote (their own namespace's): how many have started."""
        path = self.logs / "pids.txt"
        return [int(w) for w in path.read_text().split()] if path.exists() else []

    def spawns(self) -> list[dict[str, Any]]:
        path = self.logs / "spawns.jsonl"
        if not path.exists():
            return []
        # a line is whole once its newline is written: a spawn's line still being appended
        # (the test polls while the agent writes) is not one yet
        text = path.read_text()
        return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]

    # -- the project ---------------------------------------------------------------------------
    def tasks(self, change: str = "alpha") -> Path:
        return self.root / "openspec" / "changes" / change / "tasks.md"

    def record(self, change: str = "alpha") -> dict[str, Any]:
        """The one history record of ``change`` (exactly one run is expected)."""
        records = load_records(self.root, change)
        assert len(records) == 1, f"expected one record of {change}, found {len(records)}"
        return records[0]

    # -- the CLI -------------------------------------------------------------------------------
    def ralph(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Any ``ralph-lsp`` subcommand, run to its end."""
        return subprocess.run(
            [*CLI, *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )

    def cli_argv(self, change: str, *extra: str) -> list[str]:
        return [*CLI, "run", change, "--root", str(self.root), *extra]

    def start_cli(self, change: str, *extra: str, name: str = "cli") -> subprocess.Popen[bytes]:
        """Start ``ralph-lsp run`` with stdout/stderr going to files in the log folder, its
        SIGINT a terminal's (Ctrl-C stops it, whatever this test process inherited)."""
        out = open(self.logs / f"{name}.stdout", "wb")  # noqa: SIM115
        err = open(self.logs / f"{name}.stderr", "wb")  # noqa: SIM115
        try:
            return subprocess.Popen(
                self.cli_argv(change, *extra),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=self.env,
                cwd=self.root,
                preexec_fn=terminal_signals,
            )
        finally:
            out.close()
            err.close()

    def cli_output(self, name: str = "cli") -> tuple[str, str]:
        read = lambda s: (self.logs / f"{name}.{s}").read_bytes().decode("utf-8", "replace")  # noqa: E731
        return read("stdout"), read("stderr")

    def run_cli(
        self, change: str, *extra: str, timeout: float = 60, name: str = "cli"
    ) -> CliResult:
        started = time.monotonic()
        proc = self.start_cli(change, *extra, name=name)
        try:
            code = proc.wait(timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out, err = self.cli_output(name)
        return CliResult(code, out, err, time.monotonic() - started)


EXIT_CODES = {
    "succeeded": 0,
    "failed": 1,
    "stuck": 3,
    "exhausted": 4,
    "stopped": 5,
    "interrupted": 6,
}


def assert_outcome(
    fx: FaultEnv,
    result: CliResult,
    state: str,
    reason: str,
    change: str = "alpha",
) -> dict[str, Any]:
    """The CLI, the record and the process table agree on the end of the one run of ``change``."""
    record = fx.record(change)
    assert result.last_line == f"{state}: {record['reason']}", result.stdout[-2000:]
    assert reason in str(record["reason"]), record["reason"]
    assert result.returncode == EXIT_CODES[state], result.stderr[-2000:]
    assert record["state"] == state
    assert record["endedAt"] is not None
    assert record["transitions"][-1]["state"] == state  # type: ignore[index]
    # The engine waits for the whole tree before it ends a run: nothing is left at this point.
    assert gone_within(fx.pids(), 0) == []
    return record
