"""Agents that cannot run or cannot work end the run ``failed`` with a reason the user can act
on, after at most two spawns, and never touch tasks.md."""

from __future__ import annotations

import shlex
import stat
import uuid
from collections.abc import Callable

import pytest

from tests.conftest import shared_path
from tests.faults.conftest import TASKS
from tests.faults.helpers import FaultEnv, assert_outcome
from tests.faults.lsp_raw import RawLsp

StartLsp = Callable[..., RawLsp]


def run_failing(fx: FaultEnv, *extra: str) -> dict[str, object]:
    result = fx.run_cli("alpha", "--max-iterations", "5", "--stuck-after", "5", *extra)
    return assert_outcome(fx, result, "failed", "")


def test_not_logged_in_replay_fails_with_the_agents_message(fx: FaultEnv) -> None:
    rec = shared_path("fixtures", "recorded")
    cmd = fx.agent_command(
        "replay", str(rec / "run1.stdout"), str(rec / "run1.stderr"), str(rec / "run1.rc")
    )
    record = run_failing(fx, "--agent-command", cmd)
    assert record["reason"] == "the agent cannot authenticate: Not logged in · Please run /login"
    assert len(fx.spawns()) == 1
    assert fx.tasks().read_bytes() == TASKS.encode()


def fake_claude(fx: FaultEnv, *mode: str) -> None:
    """A ``claude`` on PATH that is the fault agent in ``mode`` (the preset's own flags follow)."""
    script = fx.tmp / "claude"
    script.write_text(f'#!/bin/sh\nexec {shlex.join(fx.agent(*mode))} "$@"\n')
    script.chmod(0o755)
    fx.env["PATH"] = f"{fx.tmp}:{fx.env['PATH']}"


def test_permission_flag_refused_as_root_fails_with_the_agents_message(fx: FaultEnv) -> None:
    # Claude's own stderr is read with Claude's patterns: only the claude preset (or a custom
    # agent that shows itself to be Claude) is judged by them.
    rec = shared_path("fixtures", "recorded")
    fake_claude(fx, "replay", str(rec / "bypass.stdout"), str(rec / "bypass.stderr"), "1")
    record = run_failing(fx, "--agent", "claude")
    reason = str(record["reason"])
    assert reason.startswith("the agent cannot work: --dangerously-skip-permissions cannot be")
    assert "root/sudo privileges" in reason
    assert 1 <= len(fx.spawns()) <= 2
    assert [i["exitCode"] for i in record["iterations"]] == [1] * len(fx.spawns())  # type: ignore[attr-defined]
    assert fx.tasks().read_bytes() == TASKS.encode()


def refused_before_start(fx: FaultEnv, *extra: str) -> str:
    """`run` checks the agent program first: one line on stderr, exit 2, no run, no record."""
    result = fx.run_cli("alpha", *extra)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""  # no run started: no `<state>: <reason>` line
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("ralph-lsp: error: ")
    assert not (fx.root / ".ralph" / "runs").exists() or not any(
        (fx.root / ".ralph" / "runs").iterdir()
    )
    assert fx.spawns() == [] and fx.tasks().read_bytes() == TASKS.encode()
    return line


def test_missing_binary_is_refused_before_the_run(fx: FaultEnv) -> None:
    name = f"no-such-agent-{uuid.uuid4().hex[:8]}"
    line = refused_before_start(fx, "--agent-command", f"{name} {{prompt}}")
    assert f"agent program {name!r} was not found on PATH" in line
    assert "--agent-command" in line


def test_missing_binary_fails_the_servers_run_without_spawning(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    name = f"no-such-agent-{uuid.uuid4().hex[:8]}"
    server = start_lsp({"agent": "custom", "agentCommand": [name, "{prompt}"]})
    assert "result" in server.command("ralph.run", {"change": "alpha"})
    end = server.wait_final("alpha")
    assert end["state"] == "failed"
    assert f"agent program {name!r} was not found on PATH" in end["reason"]
    assert "ralph.agentCommand" in end["reason"]
    assert fx.spawns() == []
    assert len(fx.record()["iterations"]) == 1  # type: ignore[arg-type]


def test_missing_claude_preset_says_how_to_install_it(fx: FaultEnv) -> None:
    fx.env["PATH"] = str(fx.tmp)  # an empty folder: no claude anywhere
    line = refused_before_start(fx, "--agent", "claude")
    assert "agent program 'claude' was not found on PATH" in line
    assert "npm install -g @anthropic-ai/claude-code" in line


@pytest.mark.parametrize(
    "kind",
    ["no_exec_bit", "directory", "not_a_program"],
)
def test_non_executable_agent_fails_clearly(fx: FaultEnv, kind: str) -> None:
    agent = fx.tmp / "my-agent"
    if kind == "directory":
        agent.mkdir()
    elif kind == "no_exec_bit":
        agent.write_text("#!/bin/sh\necho hi\n")
        agent.chmod(stat.S_IRUSR | stat.S_IWUSR)
    else:
        agent.write_bytes(b"\x7fELF\x01garbage, not a program\n")
        agent.chmod(0o755)
    if kind == "not_a_program":  # executable: it passes the check and fails to start
        reason = str(run_failing(fx, "--agent-command", f"{agent} {{prompt}}")["reason"])
    else:
        reason = refused_before_start(fx, "--agent-command", f"{agent} {{prompt}}")
    assert str(agent) in reason
    expected = {
        "no_exec_bit": "chmod +x",
        "directory": "directory",
        "not_a_program": "not a program this system can run",
    }[kind]
    assert expected in reason
    assert fx.tasks().read_bytes() == TASKS.encode()
