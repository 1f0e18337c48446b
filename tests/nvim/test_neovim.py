"""The documented Neovim setup (contrib/nvim/ralph.lua) in a real headless Neovim: a demo run
moves line 0's lens from 0/8 to 8/8 with no `:checktime`, and the agent's output reaches the
split. Skipped where Neovim is not installed (`make test` installs Debian's package)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE

REPO = Path(__file__).resolve().parents[2]
NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (make test installs it)")
def test_a_demo_run_in_headless_neovim(tmp_path: Path) -> None:
    project = tmp_path / "hello"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    tasks = project / "openspec" / "changes" / "add-greeting-cli" / "tasks.md"
    out = tmp_path / "seen.json"
    env = {
        **os.environ,
        "RALPH_NVIM_OUT": str(out),
        "RALPH_NVIM_LUA": str(REPO / "contrib" / "nvim"),
        "RALPH_NVIM_PYTHON": sys.executable,
        "RALPH_NVIM_TASKS": str(tasks),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    assert NVIM is not None
    done = subprocess.run(
        [
            NVIM,
            "--headless",
            "-n",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-c",
            f"luafile {REPO / 'tests' / 'nvim' / 'drive.lua'}",
        ],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=150,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    seen = json.loads(out.read_text())
    assert seen["errors"] == [], seen
    # said in full when it fails: the lens titles seen in order and the run's last lines
    said = {"lenses": seen.get("lenses"), "output": seen.get("output", [])[-15:]}
    assert seen["attached"] and seen["finished"], json.dumps(said, indent=1)
    assert seen["lenses"][0] == "▶ Run change · 0/8 tasks"
    assert seen["lenses"][-1] == "▶ Run change · 8/8 tasks"
    assert any("/8 tasks" in t and "Stop" in t for t in seen["lenses"]), seen["lenses"]
    assert seen["buffer_unchecked"] == 8 and seen["modified"] is False  # never reloaded
    output = "\n".join(seen["output"])
    assert seen["output_shown"] and "▶ iteration 1/20" in output and "■ succeeded" in output
    assert "- [ ]" not in tasks.read_text()
