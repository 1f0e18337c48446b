"""Fixtures of the fault matrix: a temporary OpenSpec project, a tagged environment whose every
process is checked to be gone after each test, and helpers to run the CLI and read the record."""

from __future__ import annotations

import hashlib
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import take_inspection
from tests.faults.helpers import TAG, FaultEnv, tagged_processes
from tests.faults.lsp_raw import RawLsp
from tests.tags import SCRATCH, scratch

TASKS = """# Tasks

## 1. First story
- [ ] 1.1 Do the first thing
- [ ] 1.2 Do the second thing

## 2. Second story
- [ ] 2.1 Do the third thing
"""


def make_change(root: Path, name: str, tasks: str | bytes = TASKS) -> Path:
    folder = root / "openspec" / "changes" / name
    (folder / "specs" / "core").mkdir(parents=True)
    (folder / "proposal.md").write_text(f"# {name}\n\nWhy: a test.\n")
    (folder / "design.md").write_text("# Design\n\nNothing fancy.\n")
    (folder / "specs" / "core" / "spec.md").write_text("## ADDED Requirements\n")
    data = tasks.encode() if isinstance(tasks, str) else tasks
    (folder / "tasks.md").write_bytes(data)
    return folder


def snapshot(root: Path) -> dict[str, str]:
    """SHA-256 of every file of the project but tasks.md and the history (what must not change)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".ralph", SCRATCH) or path.name == "tasks.md" or not path.is_file():
            continue
        out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def fx(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[FaultEnv]:
    """A project with one change ``alpha`` and an environment tagged for this test alone.

    After the test, no process carrying the tag may be alive (every process a test starts gets
    the tag, and the agents and their offspring inherit it); leftovers are killed and fail it.
    """
    take_inspection(request)
    tag = uuid.uuid4().hex
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("a project\n")
    make_change(root, "alpha")
    logs = scratch(root)  # the agents' logs: in the work tree, the one folder they may write
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ)
    for name in list(env):
        if name.startswith(("FAULT_", "FAKE_AGENT")):
            del env[name]
    env.update({TAG: tag, "FAULT_LOG_DIR": str(logs), "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1"})
    yield FaultEnv(root=root, logs=logs, tmp=tmp, env=env, tag=tag)
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
def start_lsp(fx: FaultEnv) -> Iterator[Callable[..., RawLsp]]:
    """``start_lsp(settings={...}, init={...})`` → an initialized server over the project.

    ``settings`` answer ``workspace/configuration`` and, unless ``init`` is given, are the
    ``initializationOptions`` too. Every server is ended after the test.
    """
    servers: list[RawLsp] = []

    def start(
        settings: dict[str, Any] | None = None, init: Any = None, initialize: bool = True
    ) -> RawLsp:
        # v2's runs, hosted by the server and ended with it (tests/runner covers runners).
        settings = {"runsOutliveEditor": False, **(settings or {})}
        server = RawLsp(
            fx.root,
            fx.env,
            settings=settings,
            init_options=settings if init is None else init,
            stderr_path=fx.logs / f"server-{len(servers)}.stderr",
        )
        servers.append(server)
        if initialize:
            server.initialize()
        return server

    yield start
    for server in servers:
        server.end()
