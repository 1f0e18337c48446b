"""Files the product reads under ``.ralph/`` and in the project that are not regular files (a
named pipe, a symlink, a folder): never opened for good, never a traceback; ignored with a
warning (SPEC §2, issue 25 fault 6)."""

from __future__ import annotations

import os
import subprocess

from tests.faults.conftest import make_change
from tests.faults.helpers import FaultEnv, assert_outcome

ONE_TASK = "## 1. Only\n- [ ] 1.1 The one task\n"


def _fifo_lock(fx: FaultEnv, change: str = "alpha") -> None:
    locks = fx.root / ".ralph" / "locks"
    locks.mkdir(parents=True)
    os.mkfifo(locks / f"{change}.lock")


def test_a_named_pipe_as_the_lock_of_a_change_is_ignored_by_run(fx: FaultEnv) -> None:
    # Found in review: `ralph-lsp run` died with a traceback on a FIFO at .ralph/locks/<c>.lock.
    _fifo_lock(fx)
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("check"), timeout=30)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert_outcome(fx, result, "succeeded", "every task is checked")
    assert "alpha.lock is not a regular file (a named pipe): not read" in result.stdout
    assert "not guarded against a run of the same change" in result.stdout


def test_a_symlink_as_the_lock_is_ignored_with_a_warning(fx: FaultEnv) -> None:
    locks = fx.root / ".ralph" / "locks"
    locks.mkdir(parents=True)
    target = fx.tmp / "elsewhere"
    target.write_text("")
    (locks / "alpha.lock").symlink_to(target)
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("check"), timeout=30)
    assert_outcome(fx, result, "succeeded", "every task is checked")
    assert "alpha.lock is a symbolic link: not read" in result.stdout
    assert target.read_text() == ""  # nothing written through the link


def test_status_and_history_never_open_a_named_pipe_lock(fx: FaultEnv) -> None:
    _fifo_lock(fx)
    for args in (["changes", "--json"], ["history", "alpha"]):
        done = fx.ralph(*args, timeout=10)  # a hang raises TimeoutExpired
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr


def test_a_named_pipe_as_a_project_file_never_hangs_verification_inference(
    fx: FaultEnv,
) -> None:
    # The Makefile and package.json are read to infer verification commands; a FIFO there
    # used to be safe only by a racy is_file() check; now it is opened non-blocking.
    make_change(fx.root, "solo", ONE_TASK)
    os.mkfifo(fx.root / "Makefile")
    os.mkfifo(fx.root / "package.json")
    try:
        done = fx.ralph("prompt", "solo", timeout=10)
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - the failure being guarded
        raise AssertionError("ralph-lsp prompt hung on a named pipe") from exc
    assert done.returncode == 0, done.stderr
