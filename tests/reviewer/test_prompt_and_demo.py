"""The reviewer's prompt (SPEC §13: context, not history) and the demo agent as a reviewer, run
as the real program it is: one task per scenario the conformance table does not show verified,
nothing when every one is."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ralph_lsp.agents import PACKAGE_PARENT, RUN_DEMO_AGENT
from ralph_lsp.reviewer.edit_check import check_edit
from ralph_lsp.reviewer.prompt import Check, ReviewContext, build_review_prompt
from tests.conftest import EXAMPLE

CHANGE = "add-greeting-cli"
TABLE = """| scenario | state | test |
|---|---|---|
| greeting/Greeting command line/One name | verified | tests/test_cli.py::test_one |
| greeting/Greeting command line/Several names | failing | tests/test_cli.py::test_several |
| greeting/Greeting command line/No name | not-run | tests/test_cli.py::test_none |
| greeting/Shouting/Shout | unlinked | — |
"""
ALL_VERIFIED = "| scenario | state | test |\n|---|---|---|\n| g/R/One name | verified | t::a |\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "hello"
    shutil.copytree(EXAMPLE, root)
    return root


def context(project: Path, conformance: str | None, diff: str = "") -> ReviewContext:
    folder = project / "openspec" / "changes" / CHANGE
    return ReviewContext(
        change=CHANGE,
        root=project,
        folder=folder,
        task_files=(folder / "tasks.md",),
        diff=diff,
        base="commit 1234567890ab",
        checks=(Check("make test", True), Check("ruff check", False, "ruff check exited 1")),
        conformance=conformance,
    )


def test_the_prompt_holds_the_change_the_diff_the_checks_and_the_table(project: Path) -> None:
    diff = "diff --git a/hello/cli.py b/hello/cli.py\n+print('hi')\n```\n"
    prompt = build_review_prompt(context(project, TABLE, diff))
    assert prompt.splitlines()[0].startswith(
        f'You are the reviewer of the OpenSpec change "{CHANGE}"'
    )
    assert "Role: reviewer" in prompt
    assert f"Tasks file: {project}/openspec/changes/{CHANGE}/tasks.md" in prompt
    assert "## proposal.md" in prompt and "## specs/greeting/spec.md" in prompt
    assert "#### Scenario: Shout" in prompt
    assert (
        "- `make test`: passed" in prompt
        and "- `ruff check`: failed (ruff check exited 1)" in prompt
    )
    assert "## Conformance\n\n| scenario | state | test |" in prompt
    assert "From commit 1234567890ab:" in prompt and "````diff\n" in prompt  # fence outruns ```
    # context, not history: same inputs, same bytes; no round, no earlier verdict
    assert prompt == build_review_prompt(context(project, TABLE, diff))
    lowered = prompt.lower()
    assert "round" not in lowered and "again" not in lowered and "previous" not in lowered


def test_no_table_and_no_diff_are_said_as_they_are(project: Path) -> None:
    prompt = build_review_prompt(context(project, None))
    assert "## Conformance" not in prompt
    assert "No file changed since commit 1234567890ab." in prompt


def demo(prompt: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", RUN_DEMO_AGENT, PACKAGE_PARENT, "-p", prompt]
    return subprocess.run(
        [*argv, "--output-format", "stream-json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_demo_reviewer_appends_one_task_per_scenario_not_verified(project: Path) -> None:
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("[ ]", "[x]"))
    before = tasks.read_bytes()
    done = demo(build_review_prompt(context(project, TABLE)), project)
    assert done.returncode == 0, done.stderr
    found = check_edit(before, tasks.read_bytes())
    assert found.refusals == ()  # what the demo writes is what the host lets stand
    assert found.added == (
        "- [ ] R.1 Scenario greeting/Greeting command line/Several names is failing:"
        " specs/greeting/spec.md:10, test tests/test_cli.py::test_several",
        "- [ ] R.2 Scenario greeting/Greeting command line/No name is not-run:"
        " specs/greeting/spec.md:14, test tests/test_cli.py::test_none",
        "- [ ] R.3 Scenario greeting/Shouting/Shout is unlinked: specs/greeting/spec.md:21,"
        " no test names it",
    )
    assert tasks.read_text().count("## Review") == 1
    # a second review of the same table numbers on, under the same heading
    tasks.write_text(tasks.read_text().replace("[ ]", "[x]"))
    demo(build_review_prompt(context(project, TABLE)), project)
    assert tasks.read_text().count("## Review") == 1 and "- [ ] R.4 Scenario" in tasks.read_text()


@pytest.mark.parametrize("table", [ALL_VERIFIED, None])
def test_the_demo_reviewer_approves_when_every_scenario_is_verified(
    project: Path, table: str | None
) -> None:
    tasks = project / "openspec" / "changes" / CHANGE / "tasks.md"
    before = tasks.read_bytes()
    done = demo(build_review_prompt(context(project, table)), project)
    assert done.returncode == 0, done.stderr
    assert tasks.read_bytes() == before
    assert "approved, nothing written" in done.stdout
