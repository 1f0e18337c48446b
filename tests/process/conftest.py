"""Fixtures for the process tests: real fake agents, and a check that nothing is left running."""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from proc_helpers import FAKE_AGENTS, TAG, tagged_processes

from ralph_lsp.proc.process import SpawnSpec
from tests.conftest import take_inspection


@pytest.fixture
def pid_file(tmp_path: Path) -> Path:
    return tmp_path / "pids.txt"


@pytest.fixture
def agent_env(pid_file: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The environment for fake agents; after the test, no process carrying it may be alive."""
    take_inspection(request)
    tag = uuid.uuid4().hex
    yield dict(os.environ, **{TAG: tag, "FAKE_AGENT_PID_FILE": str(pid_file)})
    deadline = time.monotonic() + 3.0
    while (left := tagged_processes(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"processes left running after the test: {left}"


@pytest.fixture
def spec(agent_env: dict[str, str], tmp_path: Path) -> Callable[..., SpawnSpec]:
    """``spec("flood.py", "lines")`` → a SpawnSpec running that fake agent with this Python."""

    def make(script: str, *args: str, stdin: bytes | None = None) -> SpawnSpec:
        argv = [sys.executable, str(FAKE_AGENTS / script), *args]
        return SpawnSpec(argv=argv, cwd=tmp_path, env=agent_env, stdin_data=stdin)

    return make
