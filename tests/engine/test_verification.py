"""The verification gate through real processes: a run succeeds only when the project's own
checks pass. The example (examples/hello) ships its change's spec as acceptance tests, which
fail until the code exists."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.loop.engine import Engine, LogEvent
from ralph_lsp.runs.history import load_records
from ralph_lsp.settings import Settings
from tests.conftest import alive
from tests.engine.conftest import CHANGE, fake, spawns
from tests.tags import running, scratch

UNITTEST = "python3 -m unittest discover -s tests"


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    def logs(self) -> str:
        return "\n".join(e.text for e in self.events if isinstance(e, LogEvent))


async def run(project: Path, settings: Settings) -> tuple[Recorder, Any]:
    rec = Recorder()
    engine = Engine(rec)
    await engine.start(project, CHANGE, settings)
    return rec, await asyncio.wait_for(engine.wait(project, CHANGE), 120)


def box_ticker(**more: Any) -> Settings:
    """An agent that checks one box per spawn and writes no code."""
    more.setdefault("verify_commands", (UNITTEST,))
    return Settings(agent="custom", agent_command=tuple(fake("check_one.py")), **more)


async def test_a_box_ticking_agent_never_succeeds(project: Path, spawn_log: Path) -> None:
    rec, status = await run(project, box_ticker())
    assert status.state == "stuck", status.reason
    assert status.reason == (
        f"verification fails ({UNITTEST} exited 1); no progress in 3 iterations"
    )
    record = load_records(project, CHANGE)[0]
    checks = [i["verification"] for i in record["iterations"] if i["verification"]]
    assert checks and all(c[0]["command"] == UNITTEST and c[0]["exitCode"] == 1 for c in checks)
    assert "FAILED" in checks[-1][0]["outputTail"]
    # The next prompt carries the failure as the project's current state, not as history.
    later = spawns(spawn_log)[-1]["prompt"]
    assert f"`{UNITTEST}` currently fails (exit 1)" in later
    assert "FAILED (failures=" in later and "tried" not in later.lower()
    assert "verify $ python3 -m unittest" in rec.logs()


async def test_the_demo_agent_does_the_work_and_succeeds(project: Path) -> None:
    # The example's `make test` writes a JUnit report (run_tests.py), and its tests name the
    # scenarios: the conformance gate is met too (SPEC §13).
    settings = Settings(agent="demo", verify_commands=("make test",))
    _, status = await run(project, settings)
    assert status.state == "succeeded", status.reason
    assert status.reason == (
        "every task is checked (8/8); verification passed (make test); 4/4 scenarios verified"
    )
    # The example's own tests pass afterwards, run by hand.
    after = subprocess.run(UNITTEST.split(), cwd=project, capture_output=True, text=True)
    assert after.returncode == 0, after.stderr
    assert "Ran 8 tests" in after.stderr


async def test_verification_off_is_the_file_alone(project: Path) -> None:
    _, status = await run(project, box_ticker(verify_when="off"))
    assert status.state == "succeeded" and status.reason == "every task is checked (8/8)"


async def test_nothing_to_verify_succeeds_on_the_file_and_warns(project: Path) -> None:
    for name in ("Makefile", "tests"):  # then the project defines no test command
        subprocess.run(["rm", "-rf", str(project / name)], check=True)
    rec, status = await run(project, box_ticker(verify_commands=()))
    assert status.state == "succeeded" and status.reason == "every task is checked (8/8)"
    assert "nothing is verified" in rec.logs()


async def test_all_checked_but_failing_iterates_instead_of_succeeding(
    project: Path, spawn_log: Path
) -> None:
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"))
    _, status = await run(project, box_ticker(stuck_after=2))
    assert status.state == "stuck" and "verification fails" in status.reason
    assert len(spawns(spawn_log)) == 2  # it did not succeed at once: the agent was asked to fix


async def test_each_verifies_after_every_iteration_that_checked_a_task(project: Path) -> None:
    _, status = await run(project, box_ticker(verify_when="each", max_iterations=3))
    record = load_records(project, CHANGE)[0]
    assert [bool(i["verification"]) for i in record["iterations"]] == [True, True, True]
    assert status.state == "exhausted"
    assert status.reason.endswith(f"; verification fails ({UNITTEST} exited 1)")


async def test_a_stop_during_verification_leaves_nothing_running(
    project: Path, tmp_path: Path
) -> None:
    pid_file = scratch(project) / "verify.pid"  # the check's pid in its sandbox: only a sign
    script = tmp_path / "slow_check.py"
    script.write_text(
        "import os, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(120)\n"
    )
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"))
    settings = Settings(
        agent="custom",
        agent_command=tuple(fake("check_one.py")),
        verify_commands=(f"{sys.executable} {script}",),
        stop_grace_seconds=0.5,
    )
    engine = Engine()
    await engine.start(project, CHANGE, settings)
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.05)
    pids = running(str(script))  # the check and the sandbox around it, as the host sees them
    assert pids
    [status] = engine.statuses()
    assert status.phase == "verifying"
    stopped = await asyncio.wait_for(engine.stop(project, CHANGE), 20)
    assert stopped.state == "stopped"
    assert not [pid for pid in pids if alive(pid)]


@pytest.mark.parametrize("before_work", [True, False])
def test_the_verify_command(project: Path, before_work: bool) -> None:
    cli = [sys.executable, "-m", "ralph_lsp"]
    env = {**os.environ, "RALPH_DEMO_DELAY": "0"}
    if not before_work:
        done = subprocess.run(
            # (plain unittest writes no JUnit report: the conformance gate off, SPEC §13)
            [*cli, "run", CHANGE, "--agent", "demo", "--verify", UNITTEST, "--conformance", "off"],
            cwd=project,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-2000:]
    result = subprocess.run(
        [*cli, "verify", CHANGE, "--verify", UNITTEST],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    lines = result.stdout.splitlines()
    assert lines[0].startswith("sandbox: "), lines  # what the checks may touch, said first
    assert lines[1] == f"verification: {UNITTEST} (verifyCommands)"
    if before_work:
        assert result.returncode == 1 and lines[-1] == f"failed: {UNITTEST} exited 1"
    else:
        assert result.returncode == 0 and lines[-1] == f"passed: {UNITTEST}"


async def test_the_claude_preset_may_run_the_checks_and_refusals_are_recorded(
    project: Path, spawn_log: Path, tmp_path: Path
) -> None:
    # A `claude` on PATH that records its argv and reports one refused Bash call per spawn.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    fake_claude = Path(fake("claude_refused.py")[1])
    claude.write_text(f'#!/bin/sh\nexec {sys.executable} {fake_claude} "$@"\n')
    claude.chmod(0o755)
    settings = Settings(
        agent="claude",
        verify_commands=(UNITTEST,),
        verify_when="off",
        allowed_tools=("Bash(npm run build:*)",),
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    rec, status = await run(project, replace(settings, max_iterations=2))
    assert status.state == "exhausted", status.reason
    argv = spawns(spawn_log)[0]["argv"]
    tools = argv.index("--allowedTools")
    assert argv[tools : tools + 3] == [
        "--allowedTools",
        f"Bash({UNITTEST}:*)",
        "Bash(npm run build:*)",
    ]
    # Claude Code's own sandbox stands down inside ours (agents/sandboxed.py)
    assert argv[tools + 3 :] == ["--settings", '{"sandbox": {"enabled": false}}']
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"  # no blanket bypass
    assert "⚠ refused: Bash(make build) — allow it with ralph.allowedTools" in rec.logs()
    assert status.refusals == ("Bash(make build)",)  # in the status, once
    record = load_records(project, CHANGE)[0]
    assert [i["refusals"] for i in record["iterations"]] == [
        [{"tool": "Bash", "input": "make build", "rule": "Bash(make build)"}]
    ] * 2


async def test_a_verify_timeout_of_zero_means_no_limit(project: Path) -> None:
    # verifyTimeoutSeconds: 0 timed out every check at once: the run could never succeed.
    slow = f"{sys.executable} -c 'import time; time.sleep(0.3)'"
    # (the gate off: the example's tests name its scenarios, which this check does not run)
    settings = box_ticker(
        verify_commands=(slow,), verify_timeout_seconds=0.0, conformance_require="off"
    )
    _, status = await run(project, settings)
    assert status.state == "succeeded", status.reason
    assert status.reason == f"every task is checked (8/8); verification passed ({slow})"


async def test_a_passing_commands_stderr_is_no_warning_a_failure_is(project: Path) -> None:
    """unittest writes its report to stderr: while the command passes that is no warning (the
    Output panel showed `[warning]` lines for a passing check); its failure is one."""
    # (plain unittest writes no JUnit report: the conformance gate off, SPEC §13)
    settings = Settings(agent="demo", verify_commands=(UNITTEST,), conformance_require="off")
    rec, status = await run(project, settings)
    assert status.state == "succeeded", status.reason
    verify = [e for e in rec.events if isinstance(e, LogEvent) and e.text.startswith("verify")]
    assert any("Ran 8 tests" in e.text for e in verify)  # the stderr report is in the log
    assert [e.text for e in verify if e.level != "info"] == []
    failing = "python3 -c 'import sys; sys.exit(1)'"
    rec, status = await run(project, box_ticker(verify_commands=(failing,), stuck_after=1))
    assert status.state == "stuck", status.reason
    failed = [e for e in rec.events if isinstance(e, LogEvent) and "verify ✗" in e.text]
    assert failed and all(e.level == "warning" for e in failed)
