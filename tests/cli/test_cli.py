"""The headless command line, run as a real process the way a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE
from tests.engine.conftest import CHANGE, FAKES, assert_gone
from tests.tags import fake_agent_processes, scratch, terminal_signals

CLI = [sys.executable, "-m", "ralph_lsp"]


def ralph(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "RALPH_DEMO_DELAY": "0", **(env or {})}
    return subprocess.run(
        [*CLI, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "hello"
    shutil.copytree(EXAMPLE, root)
    return root


def test_help_and_version() -> None:
    out = ralph("--help")
    assert out.returncode == 0 and "changes" in out.stdout and "run" in out.stdout
    run_help = ralph("run", "--help").stdout
    for flag in (
        "--root",
        "--agent",
        "--agent-command",
        "--max-iterations",
        "--max-cost",
        "--stuck-after",
        "--scope",
        "--iteration-timeout",
        "--stop-grace",
        "--guidance",
        "--story",
        "--verify",
        "--verify-when",
        "--verify-timeout",
        "--finish-grace",
        "--allow-tool",
    ):
        assert flag in run_help
    assert "--root" in ralph("verify", "--help").stdout
    assert ralph("--version").stdout.startswith("ralph-lsp ")


def test_changes_json_and_table(project: Path) -> None:
    out = ralph("changes", "--json", "--root", str(project))
    data = json.loads(out.stdout)
    (change,) = data["changes"]
    assert change["name"] == CHANGE and change["completed"] == 0 and change["total"] == 8
    assert change["run"] is None
    assert change["tasksUri"].startswith("file://") and change["tasksUri"].endswith("tasks.md")
    assert [s["id"] for s in change["stories"]] == ["1", "2", "3"]
    table = ralph("changes", cwd=project / "openspec" / "changes").stdout  # ancestors searched
    assert CHANGE in table and "0/8" in table


def test_no_openspec_root_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = ralph("changes", "--root", str(tmp_path))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "openspec/changes" in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_change_lists_known(project: Path) -> None:
    out = ralph("run", "../etc", "--root", str(project))
    assert out.returncode == 2
    assert "unknown change '../etc' (known: add-greeting-cli)" in out.stderr


def test_run_demo_succeeds_and_last_line_is_state(project: Path) -> None:
    out = ralph("run", CHANGE, "--root", str(project), "--agent", "demo")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.rstrip("\n").splitlines()
    assert lines[-1] == (
        "succeeded: every task is checked (8/8); verification passed (make test);"
        " 4/4 scenarios verified"
    )
    assert any(line.startswith("→ Edit ") for line in lines)
    assert any("▶ iteration 1/20" in line for line in lines)
    hist = json.loads(ralph("history", CHANGE, "--root", str(project), "--json").stdout)
    assert hist["runs"][0]["state"] == "succeeded"
    assert len(hist["runs"][0]["iterations"]) == 3


def test_run_a_story_first_with_guidance(project: Path) -> None:
    out = ralph(
        "run", CHANGE, "--root", str(project), "--agent", "demo", "--story", "3",
        "--guidance", "Keep the greeting format",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    iterations = [line for line in out.stdout.splitlines() if "▶ iteration" in line]
    assert [line.split("· story ")[1].split(":")[0] for line in iterations] == ["3", "1", "2"]
    assert "guidance: 1" in iterations[0]
    record = json.loads(ralph("history", CHANGE, "--root", str(project), "--json").stdout)
    assert record["runs"][0]["guidance"][0]["deliveredIn"] == 1


def test_run_an_unknown_story_is_a_usage_error(project: Path) -> None:
    out = ralph("run", CHANGE, "--root", str(project), "--agent", "demo", "--story", "9")
    assert out.returncode == 2
    assert out.stderr.strip().endswith("has no story '9' (stories: 1, 2, 3)")
    assert out.stdout == "" and not (project / ".ralph" / "runs").exists()


def test_run_with_every_open_task_blocked_ends_stuck_naming_it(project: Path) -> None:
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    text = tasks.read_text().replace("- [ ]", "- [x]", 7)
    tasks.write_text(text + "  - blocked: a person must write the docs\n")
    out = ralph("run", CHANGE, "--root", str(project), "--agent", "demo")
    assert out.returncode == 3
    assert out.stdout.splitlines()[-1] == "stuck: blocked: 3.3 a person must write the docs"


def test_run_stuck_exit_code_and_last_line(project: Path) -> None:
    cmd = f"{sys.executable} {FAKES / 'no_progress.py'}"
    out = ralph("run", CHANGE, "--root", str(project), "--agent-command", cmd, "--stuck-after", "2")
    assert out.returncode == 3
    assert out.stdout.rstrip("\n").splitlines()[-1] == "stuck: no task checked in 2 iterations"


def test_agent_command_is_never_run_through_a_shell(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    cmd = f"{sys.executable} {FAKES / 'no_progress.py'} '$(touch {marker})' `touch {marker}`"
    ralph("run", CHANGE, "--root", str(project), "--agent-command", cmd, "--stuck-after", "1")
    assert not marker.exists()


def test_prompt_is_byte_identical_and_carries_guidance(project: Path) -> None:
    a = ralph("prompt", CHANGE, "--root", str(project)).stdout
    b = ralph("prompt", CHANGE, "--root", str(project)).stdout
    assert a == b and "Story in scope: 1" in a and "`make test`" in a  # the example's Makefile
    where = ralph("prompt", CHANGE, "--root", str(project)).stderr
    assert where == "verification: make test (Makefile: test target)\n"  # the source, aside
    g = ralph("prompt", CHANGE, "--root", str(project), "--guidance", "Prefer click").stdout
    assert "## Guidance" in g and "Prefer click" in g and "## Guidance" not in a


def test_sigint_stops_the_run_and_its_tree(project: Path) -> None:
    pidfile = scratch(project) / "pids"
    env = {**os.environ, "FAKE_AGENT_PID_FILE": str(pidfile)}
    cmd = f"{sys.executable} {FAKES / 'ignore_sigterm_with_children.py'}"
    proc = subprocess.Popen(
        [
            *CLI,
            "run",
            CHANGE,
            "--root",
            str(project),
            "--agent-command",
            cmd,
            "--stop-grace",
            "0.5",
        ],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=terminal_signals,  # Ctrl-C as a terminal's foreground job gets it
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (
        pidfile.exists() and len(pidfile.read_text().split()) >= 3
    ):
        time.sleep(0.05)
    pids = fake_agent_processes()  # the host's pids: the file has the sandbox's
    assert len(pids) >= 3
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 5
    assert out.rstrip("\n").splitlines()[-1].startswith("stopped: ")
    assert_gone(pids)


def test_a_box_ticking_agent_ends_stuck_naming_the_failing_command(project: Path) -> None:
    # It checks one box per spawn and writes no code: the example's own tests (its Makefile's
    # test target, inferred) keep failing, so the run can never succeed.
    cmd = f"{sys.executable} {FAKES / 'check_one.py'}"
    out = ralph("run", CHANGE, "--root", str(project), "--agent-command", cmd, timeout=120)
    assert out.returncode == 3, out.stdout[-3000:]
    lines = out.stdout.rstrip("\n").splitlines()
    assert "verification (final): make test (Makefile: test target)" in out.stdout
    assert (
        lines[-1] == "stuck: verification fails (make test exited 2); no progress in 3 iterations"
    )
    tasks = (project / "openspec" / "changes" / CHANGE / "tasks.md").read_text()
    assert "- [ ]" not in tasks  # every box ticked, and still not a success


def test_the_demo_run_leaves_the_examples_own_tests_passing(project: Path) -> None:
    before = subprocess.run(["make", "test"], cwd=project, capture_output=True, text=True)
    assert before.returncode != 0  # the example's acceptance tests fail until the code exists
    out = ralph("run", CHANGE, "--root", str(project), "--agent", "demo")
    assert out.returncode == 0, out.stdout[-3000:]
    after = subprocess.run(["make", "test"], cwd=project, capture_output=True, text=True)
    assert after.returncode == 0, after.stdout + after.stderr
    assert "OK" in after.stderr


def test_verification_flags(project: Path) -> None:
    from ralph_lsp.cli.flags import settings_from_args
    from ralph_lsp.cli.parser import build_parser

    args = build_parser().parse_args(
        ["run", CHANGE, "--verify", "make test", "--verify", "npm test", "--verify-when", "each",
         "--verify-timeout", "30", "--finish-grace", "5", "--allow-tool", "Bash(make build:*)",
         "--allow-tool", "WebFetch"]
    )  # fmt: skip
    s = settings_from_args(args)
    assert s.verify_commands == ("make test", "npm test") and s.verify_when == "each"
    assert s.verify_timeout_seconds == 30 and s.finish_grace_seconds == 5
    assert s.allowed_tools == ("Bash(make build:*)", "WebFetch")
    bad = ralph("run", CHANGE, "--root", str(project), "--verify-timeout", "-1")
    assert bad.returncode == 2 and "--verify-timeout: expected a number of at least 0" in bad.stderr
    # --verify-when off: the file alone, as in v1 (the box ticker succeeds)
    cmd = f"{sys.executable} {FAKES / 'check_one.py'}"
    off = ralph(
        "run", CHANGE, "--root", str(project), "--agent-command", cmd, "--verify-when", "off"
    )
    assert off.returncode == 0
    assert off.stdout.splitlines()[-1] == "succeeded: every task is checked (8/8)"


def test_a_verification_command_over_its_timeout_is_stopped(project: Path) -> None:
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"))
    slow = f"{sys.executable} -c 'import time; time.sleep(60)'"
    out = ralph(
        "verify", CHANGE, "--root", str(project), "--verify", slow, "--verify-timeout", "0.5"
    )
    assert out.returncode == 1
    assert out.stdout.splitlines()[-1] == (
        f"failed: {slow} timed out after 0.5s (verifyTimeoutSeconds)"
    )
    assert "[ralph: timed out after 0.5s (verifyTimeoutSeconds)]" in out.stdout


def test_a_verify_timeout_of_zero_means_no_limit(project: Path) -> None:
    # Found in review: 0 timed out every check at once, so a run could never succeed.
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"))
    slow = f"{sys.executable} -c 'import time; time.sleep(0.5)'"
    out = ralph("verify", CHANGE, "--root", str(project), "--verify", slow, "--verify-timeout", "0")
    assert out.returncode == 0, out.stdout[-2000:]
    assert "timed out" not in out.stdout
    assert out.stdout.splitlines()[-1].startswith("passed"), out.stdout[-500:]
