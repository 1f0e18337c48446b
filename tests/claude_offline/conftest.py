"""Fixtures for running the real Claude Code CLI offline against the scripted model server.

- `claude_bin`: the real `claude` binary, installed once per session into the repository's
  git-ignored `.cache/claude-code/` by `install_claude.sh`. Skipped (with the reason) only when
  the npm registry cannot be reached; any other install failure fails the tests.
- `scripted_model`: a fresh `ScriptedModel` on 127.0.0.1 (an ephemeral port), mode `normal`.
- `claude_env`: builds the clean environment the CLI needs to run offline (fresh empty HOME).
- `make_change`: lays out a temporary OpenSpec project with one change and its tasks.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .harness import offline_env
from .scripted_server import ScriptedModel

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
INSTALLER = HERE / "install_claude.sh"


def _registry_reachable() -> bool:
    npm = shutil.which("npm")
    if npm is None:
        return True  # not a network problem: let the install failure show
    try:
        proc = subprocess.run(
            [npm, "ping"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real `claude` binary (installed on first use)."""
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
            pytest.skip("the npm registry cannot be reached: cannot install Claude Code")
        raise
    if proc.returncode != 0:
        if not _registry_reachable():
            pytest.skip("the npm registry cannot be reached: cannot install Claude Code")
        pytest.fail(
            f"install_claude.sh failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.is_file() and os.access(path, os.X_OK), path
    return path


@pytest.fixture
def scripted_model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


BuildEnv = Callable[..., dict[str, str]]


@pytest.fixture
def claude_env(claude_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> BuildEnv:
    """`claude_env(server, retries=0, **extra)` → a clean environment for one CLI run.

    Each call gets a fresh, empty HOME (the CLI writes ~/.claude.json and session files there).
    Nothing is inherited from the test process except the directories of PATH the CLI needs.
    """

    def build(server: ScriptedModel, *, retries: int | None = 0, **extra: str) -> dict[str, str]:
        home = tmp_path_factory.mktemp("claude-home")
        return offline_env(claude_bin, server.url, home, retries=retries, **extra)

    return build


@dataclass
class Change:
    root: Path  # the OpenSpec root (the agent's working directory)
    name: str
    folder: Path
    tasks: Path

    def read_tasks(self) -> str:
        return self.tasks.read_text(encoding="utf-8")

    def checked(self) -> int:
        return sum(1 for ln in self.read_tasks().splitlines() if ln.lstrip().startswith("- [x]"))

    def unchecked(self) -> int:
        return sum(1 for ln in self.read_tasks().splitlines() if ln.lstrip().startswith("- [ ]"))


MakeChange = Callable[..., Change]


@pytest.fixture
def make_change(tmp_path: Path) -> MakeChange:
    """`make_change(n_tasks=3, name="demo", root=None)` → a project with one change."""

    def make(n_tasks: int = 3, name: str = "demo", root: Path | None = None) -> Change:
        root = root or (tmp_path / "project")
        folder = root / "openspec" / "changes" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "proposal.md").write_text(
            f"## Why\nA scripted change for the offline Claude Code tests.\n\n"
            f"## What Changes\n- {n_tasks} trivial tasks.\n",
            encoding="utf-8",
        )
        lines = ["## 1. Scripted work", ""]
        lines += [f"- [ ] 1.{i} Scripted task number {i}" for i in range(1, n_tasks + 1)]
        tasks = folder / "tasks.md"
        tasks.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return Change(root=root, name=name, folder=folder, tasks=tasks)

    return make
