"""tasks.md deleted, emptied or made unreadable, or the change folder removed, mid-run: the run
ends ``failed`` with a clear reason, the engine recreates or rewrites nothing, and every other
file of the project is as it was."""

from __future__ import annotations

import os
import time

import pytest

from tests.faults.conftest import make_change, snapshot
from tests.faults.helpers import CliResult, FaultEnv, assert_outcome, wait_until


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("delete-tasks", "tasks.md is missing"),
        ("empty-tasks", "tasks.md no longer lists any task (was it emptied?)"),
        ("tasks-to-dir", "tasks.md"),
        ("tasks-symlink-loop", "tasks.md cannot be read (Too many levels of symbolic links)"),
    ],
)
def test_tasks_md_damaged_by_the_agent(fx: FaultEnv, mode: str, reason: str) -> None:
    make_change(fx.root, "beta")
    before = snapshot(fx.root)
    beta_tasks = fx.tasks("beta").read_bytes()
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command(mode))
    assert_outcome(fx, result, "failed", reason)
    assert len(fx.spawns()) == 1
    tasks = fx.tasks()
    # The engine left the damage as it found it: nothing recreated, nothing written.
    if mode == "delete-tasks":
        assert not os.path.lexists(tasks)
    elif mode == "empty-tasks":
        assert tasks.read_bytes() == b""
    elif mode == "tasks-to-dir":
        assert tasks.is_dir() and list(tasks.iterdir()) == []
    else:
        assert tasks.is_symlink() and os.readlink(tasks) == "tasks.md"
    assert snapshot(fx.root) == before
    assert fx.tasks("beta").read_bytes() == beta_tasks


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_tasks_md_chmod_000_mid_run(fx: FaultEnv) -> None:
    tasks = fx.tasks()
    before = tasks.read_bytes()
    cli = fx.start_cli(
        "alpha", "--agent-command", fx.agent_command("hang"), "--iteration-timeout", "1"
    )
    try:
        wait_until(fx.spawns, 20, "the agent to start")
        tasks.chmod(0)
        code = cli.wait(30)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        tasks.chmod(0o644)
    out, err = fx.cli_output()
    assert_outcome(fx, CliResult(code, out, err, 0), "failed", "tasks.md cannot be read")
    assert tasks.read_bytes() == before


def test_tasks_md_deleted_by_the_user_during_an_iteration(fx: FaultEnv) -> None:
    """Someone else deletes tasks.md while the agent works; the iteration ends by timeout."""
    before = snapshot(fx.root)
    cli = fx.start_cli(
        "alpha",
        "--agent-command",
        fx.agent_command("hang"),
        "--iteration-timeout",
        "1",
        "--stop-grace",
        "0.2",
    )
    try:
        wait_until(fx.spawns, 20, "the agent to start")
        fx.tasks().unlink()
        started = time.monotonic()
        code = cli.wait(30)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    out, err = fx.cli_output()
    assert_outcome(fx, CliResult(code, out, err, 0), "failed", "tasks.md is missing")
    assert time.monotonic() - started < 10
    assert not os.path.lexists(fx.tasks())
    assert snapshot(fx.root) == before


def test_tasks_md_missing_at_start_fails_without_spawning(fx: FaultEnv) -> None:
    fx.tasks().unlink()
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("check"))
    assert_outcome(fx, result, "failed", "tasks.md is missing")
    assert fx.spawns() == []
    assert not os.path.lexists(fx.tasks())


def test_change_folder_removed_mid_run(fx: FaultEnv) -> None:
    make_change(fx.root, "beta")
    before = {k: v for k, v in snapshot(fx.root).items() if "changes/alpha/" not in k}
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("remove-change"))
    record = assert_outcome(fx, result, "failed", "was removed")
    assert "openspec/changes/alpha" in str(record["reason"])
    assert not (fx.root / "openspec" / "changes" / "alpha").exists()  # not recreated
    assert snapshot(fx.root) == before
