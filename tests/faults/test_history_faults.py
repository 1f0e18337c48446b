"""``.ralph/`` cannot be written: the run goes on, says so exactly once, and loses nothing else."""

from __future__ import annotations

import os

import pytest

from tests.faults.conftest import TASKS
from tests.faults.helpers import FaultEnv, check_tasks, gone_within

WARNING = "history cannot be saved under"


def test_ralph_is_a_file_from_the_start(fx: FaultEnv) -> None:
    (fx.root / ".ralph").write_text("in the way\n")
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("check"))
    assert result.returncode == 0, result.stdout[-2000:]
    assert result.last_line == "succeeded: every task is checked (3/3)"
    warnings = [line for line in result.stdout.splitlines() if WARNING in line]
    assert len(warnings) == 1, warnings
    assert "the run goes on" in warnings[0]
    assert (fx.root / ".ralph").read_text() == "in the way\n"
    assert fx.tasks().read_bytes() == check_tasks(TASKS.encode(), 3)
    assert gone_within(fx.pids(), 0) == []


@pytest.mark.unsandboxed("sandboxed, .ralph/ is read-only to the agent, which cannot replace it")
def test_ralph_replaced_by_a_file_mid_run(fx: FaultEnv) -> None:
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("break-history"))
    assert result.returncode == 0, result.stdout[-2000:]
    assert result.last_line == "succeeded: every task is checked (3/3)"
    warnings = [line for line in result.stdout.splitlines() if WARNING in line]
    assert len(warnings) == 1, warnings
    assert fx.tasks().read_bytes() == check_tasks(TASKS.encode(), 3)


def test_prompt_files_do_not_pile_up_when_history_is_unwritable(fx: FaultEnv) -> None:
    """With ``{promptFile}`` and no history folder, the prompt goes to a temporary file; a run
    of hours must not leave one such file per iteration behind."""
    (fx.root / ".ralph").write_text("in the way\n")
    cmd = fx.agent_command("check", "--prompt-file", "{promptFile}")
    result = fx.run_cli("alpha", "--agent-command", cmd)
    assert result.last_line == "succeeded: every task is checked (3/3)"
    assert len(fx.spawns()) == 3
    # ralph-<uid>: this user's folder of run sockets, kept as $XDG_RUNTIME_DIR/ralph would be
    left = sorted(p.name for p in fx.tmp.iterdir() if p.name != f"ralph-{os.getuid()}")
    assert left == []
    assert not any((fx.tmp / f"ralph-{os.getuid()}").rglob("ralph-prompt-*"))
