"""Agents that crash, get killed, hang, or refuse to die — through ``ralph-lsp run``.

Each case checks what the user sees (exit code, last line ``<state>: <reason>``), the history
record, that tasks.md holds exactly the agent's edits, and that every process is gone.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.faults.conftest import TASKS
from tests.faults.helpers import (
    CliResult,
    FaultEnv,
    alive,
    assert_outcome,
    check_tasks,
    killed_by,
    wait_until,
)


@pytest.mark.parametrize("code", [3])
def test_nonzero_exit_after_checking_a_task_keeps_going(fx: FaultEnv, code: int) -> None:
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("check", str(code)))
    record = assert_outcome(fx, result, "succeeded", "every task is checked (3/3)")
    assert len(fx.spawns()) == 3
    assert [(i["exitCode"], i["tasksChecked"]) for i in record["iterations"]] == [(code, 1)] * 3  # type: ignore[attr-defined]
    assert fx.tasks().read_bytes() == check_tasks(TASKS.encode(), 3)


@pytest.mark.parametrize(
    "text",
    [
        "FAILED tests/test_login.py::test_bad_password - authentication failed",
        "error: unknown option '--frobnicate'",
        "Claude AI usage limit reached|1700000000",
    ],
)
def test_a_custom_agents_stderr_is_not_read_with_claudes_patterns(fx: FaultEnv, text: str) -> None:
    # Found in review: a test run printing "authentication failed" ended the run
    # `failed: the agent cannot authenticate`. Claude's patterns belong to Claude's output only.
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("stderr-check", text))
    record = assert_outcome(fx, result, "succeeded", "every task is checked (3/3)")
    assert [i["tasksChecked"] for i in record["iterations"]] == [1, 1, 1]  # type: ignore[attr-defined]
    assert text in result.stdout  # shown to the user as the agent's stderr
    assert fx.tasks().read_bytes() == check_tasks(TASKS.encode(), 3)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSEGV])
def test_killed_by_a_signal_after_checking_a_task_keeps_going(fx: FaultEnv, signum: int) -> None:
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("check-signal", str(signum)))
    record = assert_outcome(fx, result, "succeeded", "every task is checked (3/3)")
    iterations = record["iterations"]
    assert [(i["exitCode"], i["tasksChecked"]) for i in iterations] == [(killed_by(signum), 1)] * 3  # type: ignore[attr-defined]
    assert f"exit {killed_by(signum)}" in result.stdout
    assert fx.tasks().read_bytes() == check_tasks(TASKS.encode(), 3)


def test_killed_by_a_signal_before_any_work_fails_after_two_spawns(fx: FaultEnv) -> None:
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("signal", "9"))
    record = assert_outcome(fx, result, "failed", "the agent failed the same way twice")
    assert f"exit code {killed_by(signal.SIGKILL)}" in str(record["reason"])
    assert len(fx.spawns()) == 2
    assert fx.tasks().read_bytes() == TASKS.encode()


def test_silent_hang_is_ended_by_the_iteration_timeout(fx: FaultEnv) -> None:
    result = fx.run_cli(
        "alpha",
        "--agent-command",
        fx.agent_command("hang"),
        "--iteration-timeout",
        "0.5",
        "--stuck-after",
        "2",
        "--stop-grace",
        "0.5",
    )
    record = assert_outcome(fx, result, "stuck", "no task checked in 2 iterations")
    assert len(fx.spawns()) == 2
    assert result.stdout.count("iteration timed out after 0.5s") == 2
    assert [i["exitCode"] for i in record["iterations"]] == [killed_by(signal.SIGTERM)] * 2  # type: ignore[attr-defined]
    assert fx.tasks().read_bytes() == TASKS.encode()
    assert result.elapsed < 20


def test_stubborn_tree_is_killed_by_the_iteration_timeout(fx: FaultEnv) -> None:
    """The agent ignores SIGTERM and leaves a child and a ``setsid`` grandchild that do too."""
    result = fx.run_cli(
        "alpha",
        "--agent-command",
        fx.agent_command("stubborn"),
        "--iteration-timeout",
        "2",
        "--stuck-after",
        "1",
        "--stop-grace",
        "0.3",
    )
    record = assert_outcome(fx, result, "stuck", "no task checked in 1 iteration")
    assert len(fx.pids_written()) == 3, "the agent, its child and its setsid grandchild"
    assert "ready" in result.stdout
    # the whole tree SIGKILLed after the grace, the sandbox's bubblewrap too: -9 in either mode
    assert [i["exitCode"] for i in record["iterations"]] == [-signal.SIGKILL]  # type: ignore[attr-defined]
    assert fx.tasks().read_bytes() == TASKS.encode()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stop_kills_a_stubborn_tree(fx: FaultEnv, signum: int) -> None:
    """Ctrl-C (or SIGTERM) on the CLI stops the run as ``stop`` does: the whole tree goes."""
    cli = fx.start_cli(
        "alpha", "--agent-command", fx.agent_command("stubborn"), "--stop-grace", "0.5"
    )
    try:
        wait_until(lambda: len(fx.pids()) == 3, 20, "the stubborn agent and its offspring")
        assert all(alive(p) for p in fx.pids())
        sent = time.monotonic()
        cli.send_signal(signum)
        code = cli.wait(20)
        elapsed = time.monotonic() - sent
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    out, err = fx.cli_output()
    result = CliResult(code, out, err, elapsed)
    assert_outcome(fx, result, "stopped", "stopped by the user")
    assert f"{signal.Signals(signum).name}: stopping the run" in out
    assert 0.4 < elapsed < 10, elapsed  # the grace is honoured, then SIGKILL
    assert fx.tasks().read_bytes() == TASKS.encode()


def test_guidance_is_not_used_up_by_a_rate_limited_spawn(fx: FaultEnv) -> None:
    # Found in review: the guidance went to a spawn that was rate limited and did not count,
    # and the iteration that did the work never saw it.
    recorded = Path(__file__).resolve().parents[1] / "fixtures" / "claude_real" / "rate_limit.jsonl"
    fx.env["RALPH_BACKOFF_SECONDS"] = "0.2"
    guidance = "Use the staging database, never production."
    result = fx.run_cli(
        "alpha",
        "--agent-command",
        fx.agent_command("limited-once", str(recorded)),
        "--guidance",
        guidance,
    )
    record = assert_outcome(fx, result, "succeeded", "every task is checked (3/3)")
    prompts = [s["prompt"] for s in fx.spawns()]
    assert len(prompts) == 4  # one rate-limited spawn, then three iterations
    assert guidance in prompts[0] and guidance in prompts[1]  # queued again after the limit
    assert all(guidance not in p for p in prompts[2:])  # delivered once it counted
    assert record["guidance"] == [  # type: ignore[comparison-overlap]
        {"text": guidance, "at": record["guidance"][0]["at"], "deliveredIn": 1}  # type: ignore[index]
    ]
    assert [i["n"] for i in record["iterations"]] == [1, 2, 3]  # type: ignore[attr-defined]
    assert [s["beforeIteration"] for s in record["rateLimited"]] == [1]  # type: ignore[attr-defined]
    assert "rate limited" in result.stdout


def test_an_agent_that_checked_everything_and_lingers_is_stopped_after_the_finish_grace(
    fx: FaultEnv,
) -> None:
    # Found in review: with no iteration timeout, such an agent was waited on forever.
    result = fx.run_cli(
        "alpha",
        "--agent-command",
        fx.agent_command("check-all-linger"),
        "--finish-grace",
        "0.5",
        "--stop-grace",
        "0.5",
        timeout=30,
    )
    record = assert_outcome(fx, result, "succeeded", "every task is checked (3/3)")
    assert len(fx.spawns()) == 1
    [iteration] = record["iterations"]  # type: ignore[misc]
    assert iteration["tasksChecked"] == 3 and iteration["exitCode"] == killed_by(signal.SIGTERM)
    assert "finishGraceSeconds" in result.stdout
    assert result.elapsed < 15
    assert fx.tasks().read_bytes() == check_tasks(TASKS.encode(), 3)


def test_a_huge_stop_grace_is_honoured_not_an_overflow(fx: FaultEnv) -> None:
    # Found in review: --stop-grace 3000000 overflowed the watchdog's poll timeout; the
    # watchdog crashed and the agent was SIGKILLed at once instead of getting its SIGTERM.
    cli = fx.start_cli(
        "alpha", "--agent-command", fx.agent_command("hang"), "--stop-grace", "3000000"
    )
    try:
        wait_until(lambda: len(fx.pids()) == 1, 20, "the agent to start")
        time.sleep(0.3)
        cli.send_signal(signal.SIGINT)
        code = cli.wait(20)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    out, err = fx.cli_output()
    record = assert_outcome(fx, CliResult(code, out, err, 0.0), "stopped", "stopped by the user")
    assert [i["exitCode"] for i in record["iterations"]] == [killed_by(signal.SIGTERM)]  # type: ignore[attr-defined]
    assert "Traceback" not in err, err[-2000:]


@pytest.mark.parametrize(("count", "char"), [(9, "g"), (3, "漢")])
def test_long_guidance_never_fails_the_run(fx: FaultEnv, count: int, char: str) -> None:
    # Found in review: nine guidance texts of 15,000 characters (or three of 15,000 CJK
    # characters) failed the run with "command line is too long".
    texts = [f"Directive {i}: " + char * 15_000 for i in range(count)]
    flags = [arg for text in texts for arg in ("--guidance", text)]
    result = fx.run_cli(
        "alpha", "--agent-command", fx.agent_command("check") + " -p {prompt}", *flags
    )
    assert_outcome(fx, result, "succeeded", "every task is checked (3/3)")
    first = fx.spawns()[0]["prompt"]
    assert "Directive 0: " in first and fx.tasks().as_posix() in first
    assert len(first.encode()) < 200_000  # bounded, with a note where guidance was cut
    assert count == 3 or "did not fit in this prompt" in first


def test_a_story_of_2400_tasks_never_fails_the_run(fx: FaultEnv) -> None:
    many = "## 1. Huge\n" + "".join(
        f"- [ ] 1.{i} Task number {i} " + "x" * 40 + "\n" for i in range(2400)
    )
    fx.tasks().write_text(many)
    result = fx.run_cli(
        "alpha",
        "--agent-command",
        fx.agent_command("check") + " -p {prompt}",
        "--max-iterations",
        "1",
    )
    assert_outcome(fx, result, "exhausted", "1 iteration ran (maxIterations) and 2399 of 2400")
    prompt = fx.spawns()[0]["prompt"]
    assert "- 1.0 Task number 0" in prompt and "2200 more unchecked tasks" in prompt


def test_the_demo_agent_follows_a_prompt_handed_over_as_a_file(fx: FaultEnv) -> None:
    # Found in review: three 15,000-character CJK guidance texts (45 KB of UTF-8 each) made the
    # prompt too long for a command line; the demo agent got "Your instructions for this
    # session are in the file …", did not read it, and said "the prompt has no 'Tasks file:
    # <path>' line": the run checked nothing. It reads the file, as a real agent would.
    texts = [f"Directive {i}: " + "漢" * 15_000 for i in range(3)]
    assert all(len(t.encode()) > 45_000 for t in texts)
    flags = [arg for text in texts for arg in ("--guidance", text)]
    fx.env["RALPH_DEMO_DELAY"] = "0"
    result = fx.run_cli("alpha", "--agent", "demo", *flags, timeout=60)
    assert "has no 'Tasks file" not in result.stdout, result.stdout[-2000:]
    record = assert_outcome(fx, result, "succeeded", "every task is checked (3/3)")
    first = record["iterations"][0]  # type: ignore[index]
    assert first["tasksChecked"] > 0 and first["exitCode"] == 0, first
    prompt = (fx.root / ".ralph" / "runs" / str(record["runId"]) / "prompt-1.md").read_text()
    assert len(prompt.encode()) > 100_000  # this prompt did go over as a file
