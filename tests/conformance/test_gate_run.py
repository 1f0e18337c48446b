"""The conformance gate through real parts (SPEC §13): a git project whose `make test` runs
pytest, a fake agent that is a real subprocess in the run's sandbox, pytest's own JUnit report.
An agent that ticks every task and tests two of three scenarios is held back until the third
has a test that names it and passes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ralph_lsp.loop.engine import Engine, LogEvent
from ralph_lsp.runs.history import load_records
from ralph_lsp.settings import Settings
from tests.conformance.conftest import CHANGE
from tests.engine.conftest import fake, spawns


async def _run(project: Path, settings: Settings) -> tuple[list[Any], Any]:
    events: list[Any] = []
    engine = Engine(events.append)
    await engine.start(project, CHANGE, settings)
    return events, await asyncio.wait_for(engine.wait(project, CHANGE), 240)


def _agent(mode: str, **more: Any) -> Settings:
    return Settings(agent="custom", agent_command=tuple(fake("scenario_tests.py", mode)), **more)


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralph_lsp", "conformance", *args, "--root", str(project)],
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_an_agent_that_leaves_a_scenario_untested_is_held_back_until_it_tests_it(
    shout_project: Path, spawn_log: Path
) -> None:
    # The user's own PYTEST_ADDOPTS is kept: the JUnit report's option is appended to it.
    settings = _agent("responsive", env={"PYTEST_ADDOPTS": "-o console_output_style=classic"})
    events, status = await _run(shout_project, settings)
    assert status.state == "succeeded", status.reason
    assert status.reason.startswith(
        "every task is checked (4/4); verification passed (make test); 3/3 scenarios verified"
    )
    prompts = [s["prompt"] for s in spawns(spawn_log)]
    assert len(prompts) == 2
    assert "## Conformance" not in prompts[0]
    second = prompts[1]
    assert "## Conformance" in second and "2/3 scenarios verified" in second
    assert "Scenario *Shout twice* has no test that names it" in second
    # every task is checked: the scope says that what is left is the state below it
    assert "Every task of tasks.md is checked." in second
    assert "work through the unchecked tasks" not in second
    # after the verification's section: the fixed part comes first
    assert second.index("## Verification") < second.index("## Conformance")
    record = load_records(shout_project, CHANGE)[0]
    tail = record["iterations"][-1]["verification"][0]["outputTail"]
    assert "3 passed" in tail and "[100%]" not in tail  # the user's classic style
    tables = [i["conformance"] for i in record["iterations"]]
    assert [t["summary"] for t in tables] == ["2/3 scenarios verified", "3/3 scenarios verified"]
    rows = {r["title"]: r for r in tables[-1]["rows"]}
    assert rows["Shout twice"]["test"] == "tests/test_shout.py::test_shout_twice"
    assert rows["Empty input"]["key"] == "cli/Empty input/Empty input"
    assert rows["Shout once"]["spec"] == f"openspec/changes/{CHANGE}/specs/cli/spec.md"
    assert record["conformance"]["summary"] == "3/3 scenarios verified"
    logs = "\n".join(e.text for e in events if isinstance(e, LogEvent))
    assert "conformance: 2/3 scenarios verified" in logs
    # the CLI reads the same verification's reports from the record
    shown = _cli(shout_project, CHANGE)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert (
        "| cli/Shouting/Shout twice | ✓ verified | `tests/test_shout.py::test_shout_twice` |"
        in (shown.stdout)
    )
    as_json = json.loads(_cli(shout_project, CHANGE, "--json").stdout)
    assert as_json["verified"] == 3 and as_json["run"] == record["runId"]


async def test_a_lazy_agent_that_never_tests_the_scenario_ends_stuck_naming_it(
    shout_project: Path, spawn_log: Path
) -> None:
    _, status = await _run(shout_project, _agent("lazy", stuck_after=2))
    assert status.state == "stuck", status.reason
    spec = f"openspec/changes/{CHANGE}/specs/cli/spec.md"
    assert status.reason == (
        f"conformance not met: Scenario *Shout twice* has no test that names it ({spec}:10);"
        " no progress in 2 iterations"
    )
    assert len(spawns(spawn_log)) == 3
    shown = _cli(shout_project, CHANGE)
    assert shown.returncode == 1
    assert "| cli/Shouting/Shout twice | ○ unlinked | — |" in shown.stdout
    assert "2/3 scenarios verified" in shown.stdout


async def test_the_gate_off_succeeds_on_tasks_and_checks_as_before(shout_project: Path) -> None:
    _, status = await _run(shout_project, _agent("lazy", conformance_require="off"))
    assert status.state == "succeeded"
    assert status.reason.startswith("every task is checked (4/4); verification passed (make test)")
    assert "scenarios verified" not in status.reason


def test_the_cli_refuses_an_unknown_change(shout_project: Path) -> None:
    shown = _cli(shout_project, "no-such-change")
    assert shown.returncode == 2 and "unknown change 'no-such-change'" in shown.stderr


def test_the_cli_before_any_run_shows_the_links_and_no_test_known_to_pass(
    shout_project: Path,
) -> None:
    (shout_project / "tests" / "test_shout.py").write_text(
        'def test_shout():\n    """Scenario: Shout once"""\n'
    )
    shown = _cli(shout_project, CHANGE, "--json")
    assert shown.returncode == 1
    data = json.loads(shown.stdout)
    assert data["run"] is None and data["summary"] == "0/3 scenarios verified"
    assert [r["state"] for r in data["rows"]] == ["not-run", "unlinked", "unlinked"]
    assert data["rows"][0]["test"] == "tests/test_shout.py::test_shout"
    assert "no verified run yet" in shown.stderr


async def test_the_demo_reviewer_asks_for_the_untested_scenario_and_the_run_closes_it(
    shout_project: Path, spawn_log: Path
) -> None:
    # The gate off, so tasks and checks alone would succeed: the reviewer reads the
    # conformance table, appends a task for the scenario no test names, the agent tests it, and
    # the next round approves.
    settings = _agent("reviewed", conformance_require="off", review_agent="demo")
    _, status = await _run(shout_project, settings)
    assert status.state == "succeeded", status.reason
    assert status.reason.endswith("; review approved"), status.reason
    assert status.reason.startswith("every task is checked (5/5)"), status.reason
    record = load_records(shout_project, CHANGE)[0]
    verdicts = [r["verdict"] for r in record["reviews"]]
    assert verdicts == ["rejected", "approved"], record["reviews"]
    # the model each round ran, as the reviewer reported it (no review model was set)
    assert [r["model"] for r in record["reviews"]] == ["ralph-demo-agent (not an AI)"] * 2
    [added] = record["reviews"][0]["tasksAdded"]
    assert "Shout twice" in added and "no test names it" in added, added
    tasks = (shout_project / "openspec" / "changes" / CHANGE / "tasks.md").read_text()
    assert "## Review" in tasks and "- [x] R.1 Scenario cli/Shouting/Shout twice" in tasks
    assert "def test_shout_twice" in (shout_project / "tests" / "test_shout.py").read_text()
    assert len(spawns(spawn_log)) == 2  # the reviewer is the demo agent, not the fake
