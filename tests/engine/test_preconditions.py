"""``loop/preconditions.py``: what is refused before a run starts, in the one place the engine,
the terminal and its detached runs ask (git, budget, sandbox; the agent program)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from ralph_lsp.loop.engine import Engine
from ralph_lsp.loop.preconditions import program_refusal, refusal
from ralph_lsp.runs.status import EngineError
from ralph_lsp.settings import Settings
from tests.queue.conftest import CHANGES, TOOLBOX


@pytest.fixture
def toolbox(tmp_path: Path) -> Path:
    root = tmp_path / "toolbox"
    shutil.copytree(TOOLBOX, root, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    return root


def fake_program(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


async def test_a_run_that_can_start_is_not_refused(toolbox: Path) -> None:
    assert await refusal(toolbox, Settings(agent="demo")) is None


async def test_worktree_isolation_outside_git(toolbox: Path) -> None:
    reason = await refusal(toolbox, Settings(agent="demo", isolation="worktree"))
    assert reason is not None and "needs a git work tree" in reason and str(toolbox) in reason


async def test_a_budget_that_cannot_be_enforced(toolbox: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_program(bin_dir, "codex")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    settings = Settings(agent="codex", max_cost_usd=1.0, models={"apply": "nope-1"}, env=env)
    reason = await refusal(toolbox, settings)
    assert reason is not None and reason.startswith("maxCostUsd cannot be enforced")
    assert "'nope-1' has no price" in reason
    assert program_refusal(settings, toolbox) is None  # the program itself is there
    with_price = settings.replace(prices={"nope-1": {"input": 1.0, "output": 2.0}})
    assert await refusal(toolbox, with_price) is None
    # the engine asks the same: refused before anything starts, nothing recorded
    engine = Engine()
    try:
        await engine.start(toolbox, CHANGES[0], settings)
    except EngineError as exc:
        assert str(exc) == reason
    else:
        raise AssertionError("the engine started a run whose budget it cannot enforce")
    assert not (toolbox / ".ralph" / "runs").exists()


def test_a_missing_or_unusable_agent_program(toolbox: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = Settings(agent="codex", env={"PATH": str(empty)})
    reason = program_refusal(missing, toolbox)
    assert reason is not None and "'codex' was not found" in reason
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n")
    reason = program_refusal(Settings(agent_command=(str(script),)), toolbox)
    assert reason is not None and "not executable" in reason
    assert program_refusal(Settings(agent="demo"), toolbox) is None
