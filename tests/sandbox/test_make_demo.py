"""``make demo`` (scripts/demo.sh) runs sandboxed by default and says so in its first lines
(issue 36 "Done when"), as root here: root uses bubblewrap too."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_make_demo_says_sandbox_bwrap_first_and_succeeds() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the Linux sandbox")
    if not (REPO / ".venv" / "bin" / "ralph-lsp").exists():
        pytest.skip("scripts/demo.sh runs the checkout's .venv (make venv)")
    env = {k: v for k, v in os.environ.items() if k != "RALPH_SANDBOX"}
    env["RALPH_DEMO_DELAY"] = "0"
    done = subprocess.run(
        ["bash", "scripts/demo.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run_lines = [line for line in done.stdout.splitlines() if not line.startswith("[ralph]")]
    first = run_lines[: run_lines.index(next(x for x in run_lines if x.startswith("▶")))]
    assert any(line.startswith("sandbox: bwrap ") for line in first), first
    assert "succeeded: every task is checked (8/8)" in done.stdout
