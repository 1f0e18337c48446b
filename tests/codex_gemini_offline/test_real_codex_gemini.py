"""`ralph-lsp run demo --agent codex|gemini` with the real CLIs (pinned: codex 0.169.0, gemini
0.61.0), offline, against the scripted servers of `scripted_servers.py` on 127.0.0.1. The presets
are used as shipped: the agents' own configuration points them at the server, no extra flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import TASKS_PATH, make_project, normal_steps, ralph_run
from .scripted_servers import ScriptedServer, Step

REPO = Path(__file__).resolve().parent.parent.parent
AGENTS = ("codex", "gemini")


@pytest.mark.parametrize("agent", AGENTS)
def test_normal_session_succeeds_with_verification(
    agent: str, agent_clis: dict[str, Path], base: Path
) -> None:
    """Task 1.1 edits pyproject.toml (Gemini: through the preset's .ralph-new + mv route, as
    headless Gemini refuses write_file on build files); the agent runs `make test`."""
    project = make_project(base)
    with ScriptedServer(agent, normal_steps(agent)) as server:
        run = ralph_run(agent, agent_clis[agent], server.url, project, base)
    # then the estimated spend: " · $0.0… · … (estimate)"
    state, spent = run.last_line.split(" · ", 1)
    assert state == "succeeded: every task is checked (2/2); verification passed (make test)", (
        run.stdout[-3000:]
    )
    assert spent.endswith("(estimate)"), spent
    assert "$ make test" in run.stdout
    assert 'version = "0.2.0"' in (project.root / "pyproject.toml").read_text()
    assert run.refusals() == []
    assert run.seconds < 60


def test_gemini_refusal_of_a_build_file_is_recorded(
    agent_clis: dict[str, Path], base: Path
) -> None:
    project = make_project(base)
    steps = [Step("write", path="pyproject.toml", new="x = 1\n"), Step("text", text="Blocked.")]
    with ScriptedServer("gemini", steps) as server:
        run = ralph_run(
            "gemini", agent_clis["gemini"], server.url, project, base,
            extra=["--stuck-after", "1"],
        )  # fmt: skip
    assert run.last_line.startswith("stuck:"), run.stdout[-3000:]
    refusals = run.refusals()
    assert refusals and refusals[0]["tool"] == "Write", refusals
    assert refusals[0]["input"] == "pyproject.toml"
    assert "⚠ refused: Write(pyproject.toml)" in run.stdout


def test_gemini_shell_outside_the_rules_is_a_refusal(
    agent_clis: dict[str, Path], base: Path
) -> None:
    project = make_project(base)
    steps = [Step("shell", command="rm -rf build"), Step("text", text="Done.")]
    with ScriptedServer("gemini", steps) as server:
        run = ralph_run(
            "gemini", agent_clis["gemini"], server.url, project, base,
            extra=["--stuck-after", "1"],
        )  # fmt: skip
    assert {"tool": "Bash", "input": "rm -rf build", "rule": "Bash(rm -rf build)"} in (
        run.refusals()
    ), run.stdout[-3000:]


def test_codex_sandbox_and_approval_refusals_are_recorded(
    agent_clis: dict[str, Path], base: Path
) -> None:
    """What the real codex 0.169 does when its workspace-write sandbox or its approval policy
    says no: a write outside the project, a patch outside it, an escalation request. Codex's
    own sandbox: ralph's is off here (inside ralph's, Codex's stands down)."""
    project = make_project(base)
    steps = [
        Step("shell", command="echo x > /opt/ralph-refused.txt"),
        Step("write", path="/opt/ralph-refused-patch.txt", new="hi\n"),
        Step("shell", command="touch /opt/ralph-escalated.txt", text="escalate"),
        Step("text", text="Done."),
    ]
    with ScriptedServer("codex", steps) as server:
        run = ralph_run(
            "codex", agent_clis["codex"], server.url, project, base,
            extra=["--stuck-after", "1", "--sandbox", "off"],
        )  # fmt: skip
    rules = [r["rule"] for r in run.refusals()]
    # The patch and the escalation: stderr lines only (no JSON event), always there.
    assert "Edit" in rules and "Bash" in rules, run.stdout[-3000:]
    assert "⚠ refused: Edit" in run.stdout and "⚠ refused: Bash" in run.stdout
    # The command the sandbox stopped: Codex 0.169 emitted its command_execution item in some
    # runs and not in others (the command ran either way); when it is there, it is a refusal.
    if "$ echo x > /opt/ralph-refused.txt" in run.stdout:
        assert "Bash(echo x > /opt/ralph-refused.txt)" in rules, rules
    assert not Path("/opt/ralph-refused-patch.txt").exists()


@pytest.mark.parametrize("agent", AGENTS)
def test_bad_key_fails_with_a_clean_reason(
    agent: str, agent_clis: dict[str, Path], base: Path
) -> None:
    project = make_project(base)
    with ScriptedServer(agent, [], mode="401") as server:
        run = ralph_run(agent, agent_clis[agent], server.url, project, base)
    assert run.last_line.startswith("failed: the agent cannot authenticate:"), run.stdout[-3000:]
    assert "401" in run.last_line
    assert "Reconnecting" not in run.last_line and "request id" not in run.last_line
    assert "/" not in run.last_line.split("authenticate:", 1)[1].replace("HTTP", ""), run.last_line
    assert run.seconds < 30


@pytest.mark.parametrize("agent", AGENTS)
def test_429_with_retry_after_waits_then_succeeds(
    agent: str, agent_clis: dict[str, Path], base: Path
) -> None:
    project = make_project(base)
    with ScriptedServer(agent, normal_steps(agent), mode="429") as server:
        run = ralph_run(agent, agent_clis[agent], server.url, project, base)
    assert run.last_line.startswith("succeeded:"), run.stdout[-3000:]
    assert run.seconds < 60


@pytest.mark.parametrize("agent", AGENTS)
def test_dead_server_ends_within_seconds_naming_the_connection(
    agent: str, agent_clis: dict[str, Path], base: Path
) -> None:
    project = make_project(base)
    server = ScriptedServer(agent, [])
    url = server.url
    server.server.server_close()  # nothing listens on the port any more
    run = ralph_run(agent, agent_clis[agent], url, project, base, timeout=60)
    assert run.last_line.startswith("failed: the agent cannot work: cannot reach the model API"), (
        run.stdout[-3000:]
    )
    assert run.seconds < 30


@pytest.mark.parametrize("agent", AGENTS)
def test_a_model_that_never_checks_a_box_is_stuck(
    agent: str, agent_clis: dict[str, Path], base: Path
) -> None:
    project = make_project(base)
    steps = [Step("shell", command="make test"), Step("text", text="I looked around.")]
    with ScriptedServer(agent, steps) as server:
        run = ralph_run(
            agent, agent_clis[agent], server.url, project, base, extra=["--stuck-after", "2"]
        )
    assert run.last_line.split(" · ")[0] == "stuck: no task checked in 2 iterations", run.stdout[
        -3000:
    ]
    assert "- [ ]" in (project.root / TASKS_PATH).read_text()


def test_codex_max_cost_stops_on_the_estimate(agent_clis: dict[str, Path], base: Path) -> None:
    """Codex reports tokens, no cost: `--max-cost 0.01` is enforced on the estimate from the
    model's list price (gpt-5.5, the harness's model: $5 in / $30 out per million tokens), and
    every place that shows it says it is an estimate."""
    project = make_project(base)
    steps = [Step("shell", command="make test"), Step("text", text="I looked around.")]
    with ScriptedServer("codex", steps) as server:
        run = ralph_run(
            "codex", agent_clis["codex"], server.url, project, base,
            extra=["--stuck-after", "9", "--max-cost", "0.01"],
        )  # fmt: skip
    # 2 model turns a spawn, 1000 input + 100 output tokens each: $0.016 estimated a spawn
    assert run.last_line.startswith(
        "exhausted: the estimated cost $0.0160 (from tokens at list prices) reached maxCostUsd"
        " $0.0100"
    ), run.stdout[-3000:]
    assert run.last_line.endswith("(estimate)"), run.last_line
    (it,) = run.record["iterations"]
    assert it["costEstimated"] is True and it["costUsd"] == pytest.approx(0.016)
    assert "$0.0160 (estimate)" in run.stdout  # the status line and the iteration's summary


def test_max_cost_with_an_unpriced_model_is_refused_at_start(
    agent_clis: dict[str, Path], base: Path
) -> None:
    project = make_project(base)
    with ScriptedServer("codex", []) as server:
        run = ralph_run(
            "codex", agent_clis["codex"], server.url, project, base,
            extra=["--max-cost", "1", "--agent-args", "-m mystery-model"],
        )  # fmt: skip
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "maxCostUsd cannot be enforced" in run.stderr and "mystery-model" in run.stderr
    assert "ralph.modelPrices" in run.stderr
    assert server.requests == []  # nothing was spawned
