"""A stopped sandboxed run gives its agent SIGTERM and the grace to end (``stopGraceSeconds``),
as an unsandboxed one does: bubblewrap, sent the SIGTERM too, ended at once and took its PID
namespace down with SIGKILL, so the agent never ran its handler."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import EXAMPLE

CHANGE = "add-greeting-cli"
AGENT = """
import pathlib, signal, sys, time
def ended(*_):
    pathlib.Path("got-term").write_text("yes")
    time.sleep(0.3)  # work that takes a moment, as an agent saving its state would
    pathlib.Path("after-grace").write_text("yes")
    sys.exit(0)
signal.signal(signal.SIGTERM, ended)
pathlib.Path("up").write_text("yes")
print("up", flush=True)
time.sleep(600)
"""


def test_a_stopped_sandboxed_agent_gets_its_sigterm_and_its_grace(tmp_path: Path) -> None:
    root = tmp_path / "hello"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".ralph"))
    (root / "agent.py").write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if k != "RALPH_SANDBOX"}  # the default: auto
    cli = [sys.executable, "-m", "ralph_lsp"]
    agent = ["--agent", "custom", "--agent-command", f"{sys.executable} agent.py"]
    once = ["--verify-when", "off", "--no-checkpoints", "--max-iterations", "1"]
    run = subprocess.Popen(
        [*cli, "run", CHANGE, "--root", str(root), *agent, *once],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (root / "up").exists():
            assert run.poll() is None, run.communicate()[0]
            assert time.monotonic() < deadline, "the agent did not start"
            time.sleep(0.05)
        stopped = subprocess.run(
            [*cli, "stop", CHANGE, "--root", str(root)], env=env, capture_output=True, text=True
        )
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        out, _ = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert any(line.startswith("sandbox: bwrap ") for line in out.splitlines()[:8]), out
    assert (root / "got-term").exists(), out
    assert (root / "after-grace").exists(), out  # not SIGKILLed within its handler
    assert "stopped" in out.splitlines()[-1], out
