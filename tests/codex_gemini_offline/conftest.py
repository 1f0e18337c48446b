"""Fixtures for running the real Codex CLI and Gemini CLI offline against scripted servers.

`agent_clis`: the real `codex` and `gemini` binaries, installed once per session into the
repository's git-ignored `.cache/agent-clis/` by `install_clis.sh` (which `make pytest` runs
first). Skipped (with the reason) only when the npm registry cannot be reached; any other
install failure fails the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
INSTALLER = HERE / "install_clis.sh"
REPO = HERE.parent.parent


def _registry_reachable() -> bool:
    npm = shutil.which("npm")
    if npm is None:
        return True  # not a network problem: let the install failure show
    try:
        proc = subprocess.run(
            [npm, "ping"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@pytest.fixture(scope="session")
def agent_clis() -> dict[str, Path]:
    """{"codex": path, "gemini": path} of the pinned real CLIs (installed on first use)."""
    try:
        proc = subprocess.run(
            ["bash", str(INSTALLER)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    except subprocess.TimeoutExpired:
        if not _registry_reachable():
            pytest.skip("the npm registry cannot be reached: cannot install Codex/Gemini CLI")
        raise
    if proc.returncode != 0:
        if not _registry_reachable():
            pytest.skip("the npm registry cannot be reached: cannot install Codex/Gemini CLI")
        pytest.fail(
            f"install_clis.sh failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    found = dict(
        line.split("=", 1) for line in proc.stdout.strip().splitlines()[-2:] if "=" in line
    )
    paths = {name: Path(found[name]) for name in ("codex", "gemini")}
    for path in paths.values():
        assert path.is_file() and os.access(path, os.X_OK), path
    return paths


@pytest.fixture
def base() -> Iterator[Path]:
    """A scratch folder outside /tmp: Gemini ignores a settings file under a world-writable
    folder, which the preset's retry default is."""
    parent = REPO / ".cache" / "offline-runs"
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=parent))
    yield path
    shutil.rmtree(path, ignore_errors=True)
