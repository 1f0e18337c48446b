from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, alive
from tests.tags import scratch

FAKES = Path(__file__).resolve().parents[1] / "fake_agents"
CHANGE = "add-greeting-cli"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "hello"
    shutil.copytree(EXAMPLE, root)
    return root


def fake(name: str, *args: str) -> list[str]:
    """An agentCommand running one of the fake agents with this Python."""
    return [sys.executable, str(FAKES / name), *args]


@pytest.fixture
def spawn_log(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fake agents' log of their spawns, in the work tree (the folder a sandboxed run may
    write), git-ignored."""
    log = scratch(project) / "spawns.jsonl"
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    yield log


def spawns(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def assert_gone(pids: list[int]) -> None:
    left = [p for p in pids if alive(p)]
    assert left == [], f"processes still alive: {left}"


os.environ.setdefault("RALPH_DEMO_DELAY", "0")
