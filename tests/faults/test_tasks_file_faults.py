"""tasks.md deleted, emptied or made unreadable, or the change folder removed, mid-run: the run
ends ``failed`` with a clear reason, the engine recreates or rewrites nothing, and every other
file of the project is as it was."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults.conftest import TASKS, make_change, snapshot
from tests.faults.helpers import CliResult, FaultEnv, assert_outcome, check_tasks, wait_until
from tests.faults.lsp_raw import RawLsp

StartLsp = Callable[..., RawLsp]


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


def _not_a_file(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_tasks_md_that_is_not_a_file_never_hangs_the_cli(fx: FaultEnv, kind: str) -> None:
    # Found in review: a FIFO hung `ralph-lsp changes`; a symlink to /dev/zero read until
    # memory ran out. Now: a warning, 0/0 for that change, everything else as usual.
    make_change(fx.root, "beta")
    _not_a_file(fx.tasks("beta"), kind)
    listing = fx.ralph("changes", "--json", timeout=20)
    assert listing.returncode == 0, listing.stderr
    counts = {
        c["name"]: (c["completed"], c["total"]) for c in json.loads(listing.stdout)["changes"]
    }
    assert counts == {"alpha": (0, 3), "beta": (0, 0)}
    assert "not a regular file" in listing.stderr
    result = fx.run_cli("beta", "--agent-command", fx.agent_command("check"), timeout=20)
    assert_outcome(fx, result, "failed", "not a regular file", change="beta")
    assert fx.spawns() == []


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_tasks_md_that_is_not_a_file_never_blocks_the_server(
    fx: FaultEnv, start_lsp: StartLsp, kind: str
) -> None:
    make_change(fx.root, "beta")
    _not_a_file(fx.tasks("beta"), kind)
    server = start_lsp()
    answer = server.command("ralph.changes", {}, timeout=10)
    counts = {c["name"]: (c["completed"], c["total"]) for c in answer["result"]["changes"]}
    assert counts == {"alpha": (0, 3), "beta": (0, 0)}
    wait_until(lambda: "not a regular file" in server.logs(), 10, "the warning in the log")
    lenses = server.code_lens(fx.tasks().as_uri(), timeout=10)
    assert any("Run change" in lens["command"]["title"] for lens in lenses)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_history_record_that_is_not_a_file_is_skipped(fx: FaultEnv, kind: str) -> None:
    done = fx.run_cli("alpha", "--agent-command", fx.agent_command("check"))
    assert done.returncode == 0, done.stdout
    bad = fx.root / ".ralph" / "runs" / "r-bad" / "record.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{}")
    _not_a_file(bad, kind)
    history = fx.ralph("history", "alpha", "--json", timeout=20)
    assert history.returncode == 0, history.stderr
    assert [r["state"] for r in json.loads(history.stdout)["runs"]] == ["succeeded"]


def test_an_agent_that_archives_the_finished_change_succeeds(fx: FaultEnv) -> None:
    # Found in review: OpenSpec's normal last step (archive) failed the run with "the change
    # folder was removed".
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("archive", "all"))
    record = assert_outcome(fx, result, "succeeded", "every task is checked (3/3)")
    archived = fx.root / "openspec" / "changes" / "archive" / "2026-01-02-alpha"
    assert str(archived) in str(record["reason"])
    assert (archived / "tasks.md").read_bytes() == check_tasks(TASKS.encode(), 3)
    assert [i["tasksChecked"] for i in record["iterations"]] == [3]  # type: ignore[attr-defined]


def test_an_agent_that_archives_an_unfinished_change_fails_saying_so(fx: FaultEnv) -> None:
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("archive"))
    record = assert_outcome(fx, result, "failed", "was archived to")
    assert "with 2 of 3 tasks open" in str(record["reason"])


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_spec_that_is_not_a_file_never_blocks_the_server(
    fx: FaultEnv, start_lsp: StartLsp, kind: str
) -> None:
    # OpenSpec validation (SPEC §11) reads every spec of the tree: a stranger's named pipe or
    # device there must not hang the server either.
    for spec in (
        fx.root / "openspec" / "changes" / "alpha" / "specs" / "cap" / "spec.md",
        fx.root / "openspec" / "specs" / "cap" / "spec.md",
    ):
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text("")
        _not_a_file(spec, kind)
    server = start_lsp()
    answer = server.command("ralph.changes", {}, timeout=10)
    counts = {c["name"]: (c["completed"], c["total"]) for c in answer["result"]["changes"]}
    assert counts == {"alpha": (0, 3)}
    lenses = server.code_lens(fx.tasks().as_uri(), timeout=10)
    assert any("Run change" in lens["command"]["title"] for lens in lenses)
