"""Helpers shared by the process tests (a unique module name: other folders have conftests)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.tags import alive as alive

FAKE_AGENTS = Path(__file__).resolve().parent.parent / "fake_agents"
TAG = "RALPH_TEST_PROCESS_TAG"


def tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment carries ``TAG=tag`` (every process a test started)."""
    needle = f"{TAG}={tag}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def read_pids(path: Path) -> list[int]:
    return [int(word) for word in path.read_text().split()] if path.exists() else []
