"""``ralph-lsp verify`` runs the checks as a run runs them: in the sandbox (SPEC §10)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def verify(root: Path, command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RALPH_SANDBOX"}
    argv = [sys.executable, "-m", "ralph_lsp", "verify", "c", "--root", str(root)]
    return subprocess.run(
        [*argv, "--verify", command, *extra], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux sandbox")
def test_verify_runs_the_checks_sandboxed_unless_told_off(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "openspec" / "changes" / "c").mkdir(parents=True)
    (root / "openspec" / "changes" / "c" / "tasks.md").write_text("- [ ] 1.1 x\n")
    outside = tmp_path / "outside.txt"
    inside = root / "inside.txt"
    command = f"sh -c 'echo in > {inside} && echo out > {outside}'"
    boxed = verify(root, command)
    assert boxed.returncode == 1, boxed.stdout + boxed.stderr
    assert boxed.stdout.splitlines()[0].startswith("sandbox: bwrap ")
    assert "Read-only file system" in boxed.stdout
    assert inside.read_text() == "in\n" and not outside.exists()
    free = verify(root, command, "--sandbox", "off")
    assert free.returncode == 0, free.stdout + free.stderr
    assert free.stdout.splitlines()[0].startswith("sandbox: off")
    assert outside.read_text() == "out\n"
