"""Runs in real runner processes, over a small project made in tmp_path."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import alive
from tests.lsp.conftest import client_profile, start_session, workspace  # noqa: F401 (fixtures)

FAKES = Path(__file__).resolve().parents[1] / "fake_agents"
PY = sys.executable


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Control sockets in a folder of this test (short: a socket path must fit in 108 bytes)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    folder.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder


@pytest.fixture
def project(tmp_path: Path, runtime_dir: Path) -> Path:
    root = tmp_path / "proj"
    change = root / "openspec" / "changes" / "a"
    change.mkdir(parents=True)
    (change / "tasks.md").write_text(
        "## 1. First\n- [ ] 1.1 one\n- [ ] 1.2 two\n## 2. Second\n- [ ] 2.1 three\n"
        "- [ ] 2.2 four\n",
        encoding="utf-8",
    )
    return root


def demo_settings(delay: float = 0.6, **more: Any) -> dict[str, Any]:
    return {
        "agent": "demo",
        "verifyWhen": "off",
        "checkpoints": False,
        "env": {"RALPH_DEMO_DELAY": str(delay)},
        **more,
    }


def fake_settings(name: str, *args: str, **more: Any) -> dict[str, Any]:
    return {
        "agent": "custom",
        "agentCommand": [PY, str(FAKES / name), *args],
        "verifyWhen": "off",
        "checkpoints": False,
        "stuckAfter": 50,
        **more,
    }


def cli(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> Any:
    import subprocess

    return subprocess.run(
        [PY, "-m", "ralph_lsp", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def wait_for(check: Any, timeout: float = 20.0, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {check}")


def record(root: Path) -> dict[str, Any]:
    [path] = (root / ".ralph" / "runs").glob("*/record.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def children_of(pid: int) -> list[int]:
    """Every descendant of ``pid`` (through /proc), the watchdog and the agent included."""
    found: list[int] = []
    parents = {pid}
    for _ in range(6):
        more = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid in parents and int(entry) not in found:
                more.append(int(entry))
        found += more
        parents = set(more)
        if not more:
            break
    return found


def kill_all(pids: list[int]) -> None:
    import signal

    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def reaper() -> Iterator[list[int]]:
    """Pids a test started: killed at its end, whatever happened."""
    pids: list[int] = []
    yield pids
    kill_all(pids)


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)
