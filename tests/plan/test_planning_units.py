"""Planning's parts on their own (SPEC §14): the planning sandbox profile, the prompt (context,
not history), the unsandboxed snapshot, the demo planner, and the gate and the change-name rule
against the real OpenSpec CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ralph_lsp.demo.planner import write_plan
from ralph_lsp.loop import confinement
from ralph_lsp.loop.plan_prompt import build_plan_prompt
from ralph_lsp.openspec.planning import change_name_error, gate, open_questions
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.sandbox import bwrap
from ralph_lsp.sandbox.policy import Grants, build_policy
from tests.plan.test_plan_cli import TOOLBOX, git

SPEC = """# widget Specification

## Purpose
Widgets.

## Requirements
### Requirement: Make a widget
The system SHALL make widgets.

#### Scenario: One
- **WHEN** asked
- **THEN** made
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "toolbox"
    shutil.copytree(TOOLBOX, root)
    (root / "openspec" / "specs" / "widget").mkdir(parents=True)
    (root / "openspec" / "specs" / "widget" / "spec.md").write_text(SPEC)
    (root / "openspec" / "config.yaml").write_text("schema: spec-driven\ncontext: Python 3.10.\n")
    (root / "openspec" / "changes" / "add-thing").mkdir()
    return root


def test_the_planning_policy_writes_only_the_change_folder(project: Path, tmp_path: Path) -> None:
    folder = project / "openspec" / "changes" / "add-thing"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (tmp_path / "private").mkdir()
    policy = build_policy(
        project,
        tmp_path / "private",
        home=None,
        preset="demo",
        env={},
        grants=Grants(allow_write=[str(tmp_path / "extra")], confine_to=folder),
    )
    assert policy.writable == (folder, tmp_path / "private")
    assert policy.read_only_first == (project,)
    argv = bwrap.argv(policy, "/bin/bwrap", project)
    shown, bound = argv.index(str(project)), argv.index(str(folder))
    assert argv[shown - 1] == "--ro-bind" and argv[bound - 1] == "--bind" and shown < bound
    assert str(project / ".git") not in argv[: argv.index("--chdir")]  # git's directory too
    ordinary = build_policy(project, tmp_path / "private", home=None, preset="demo", env={})
    assert ordinary.writable[0] == project and ordinary.read_only_first == ()


def test_the_prompt_is_context_and_the_state_of_the_change(project: Path) -> None:
    change = Change(project, "add-thing")
    problems = ['error: thing/spec.md: ADDED "X" must contain SHALL or MUST']
    prompt = build_plan_prompt(change, "Make things.", problems, ["Keep it small."])
    for part in (
        f"Planning change folder: {change.folder}",
        "## Description\nMake things.",
        "## Project context\nPython 3.10.",
        "- widget: Make a widget",
        "- `proposal.md`: ## Why (50 to 1000 characters)",
        "- `specs/<capability>/spec.md`:",
        "- `design.md`:",
        "- `tasks.md`:",
        "The change folder holds no artifact yet.",
        f"- {problems[0]}",
        "## Guidance\nDirection from the operator for this plan; follow it:\n- Keep it small.",
    ):
        assert part in prompt, part
    assert build_plan_prompt(change, "Make things.", problems, ["Keep it small."]) == prompt
    for word in ("iteration", "attempt", "previous", "last time"):
        assert word not in prompt.lower()
    passing = build_plan_prompt(change, "Make things.", [])
    assert "It passes the gate." in passing and "## Guidance" not in passing


def test_the_snapshot_names_what_changed_outside_the_folder(project: Path) -> None:
    git(project, "init", "-q")
    folder = project / "openspec" / "changes" / "add-thing"
    before = confinement.snapshot(project, folder)
    (folder / "proposal.md").write_text("inside: fine\n")
    (project / ".ralph").mkdir()
    (project / ".ralph" / "record.json").write_text("{}")  # the run's own history
    (project / ".git" / "index").write_bytes(b"refreshed by an editor's git status")
    assert confinement.changed(before, confinement.snapshot(project, folder)) == []
    with open(project / ".git" / "config", "a") as f:
        f.write("[core]\n\thooksPath = /tmp/x\n")
    (project / "toolbox" / "__init__.py").unlink()
    (project / "new.py").write_text("x\n")
    changed = confinement.changed(before, confinement.snapshot(project, folder))
    assert changed == [".git/config", "new.py", "toolbox/__init__.py"]
    assert "outside the change folder" in confinement.describe(changed)


def test_the_demo_planner_writes_the_same_bytes_from_the_same_description(
    project: Path, tmp_path: Path
) -> None:
    folder = project / "openspec" / "changes" / "add-thing"
    said: list[str] = []
    write_plan(folder, "Make things. Name them. Should names be unique?", "", said.append)
    first = {p.name: p.read_bytes() for p in folder.rglob("*.md")}
    assert said == [
        "Wrote proposal.md",
        "Wrote specs/thing/spec.md",
        "Wrote design.md",
        "Wrote tasks.md",
    ]
    said.clear()
    write_plan(folder, "Make things. Name them. Should names be unique?", "", said.append)
    assert said == [] and {p.name: p.read_bytes() for p in folder.rglob("*.md")} == first
    assert open_questions(folder) == ["Should names be unique?"]
    assert gate(project, folder).passed
    write_plan(folder, "Make things. Name them. Should names be unique?", "- Yes.", said.append)
    assert open_questions(folder) == []  # answered by the guidance


SHALL_MISSING = "## ADDED Requirements\n\n### Requirement: X\nIt makes x.\n\n" + (
    "#### Scenario: S\n- **WHEN** a\n- **THEN** b\n"
)
NO_SCENARIO = "## ADDED Requirements\n\n### Requirement: X\nThe system SHALL make x.\n"
VALID = "## ADDED Requirements\n\n### Requirement: X\nThe system SHALL make x.\n\n" + (
    "#### Scenario: S\n- **WHEN** a\n- **THEN** b\n"
)
SHORT_WHY = "## Why\nShort.\n\n## What Changes\n- x\n"
WHY = "## Why\nThings are made by hand everywhere; one function that makes them saves work.\n\n"


@pytest.mark.parametrize(
    ("proposal", "spec"),
    [
        (WHY + "## What Changes\n- x\n", VALID),
        (WHY + "## What Changes\n- x\n", SHALL_MISSING),
        (WHY + "## What Changes\n- x\n", NO_SCENARIO),
        (SHORT_WHY, VALID),
        (WHY + "## What Changes\n- x\n", None),
    ],
)
def test_the_gate_agrees_with_openspec_validate_strict(
    project: Path,
    openspec_cli: str,
    proposal: str,
    spec: str | None,
) -> None:
    folder = project / "openspec" / "changes" / "add-thing"
    (folder / "proposal.md").write_text(proposal)
    (folder / "tasks.md").write_text("## 1. X\n- [ ] 1.1 Make x\n")
    if spec is not None:
        (folder / "specs" / "thing").mkdir(parents=True)
        (folder / "specs" / "thing" / "spec.md").write_text(spec)
    real = subprocess.run(
        [openspec_cli, "validate", "add-thing", "--strict"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENSPEC_TELEMETRY": "0", "NO_COLOR": "1"},
    )
    assert gate(project, folder).passed == (real.returncode == 0), real.stdout + real.stderr


@pytest.mark.parametrize(
    "name", ["Add-Thing", "add thing", "add_thing", "-add", "add-", "add--thing", "add.thing"]
)
def test_a_change_name_is_refused_in_the_clis_words(
    tmp_path: Path,
    openspec_cli: str,
    name: str,
) -> None:
    (tmp_path / "openspec" / "changes").mkdir(parents=True)
    real = subprocess.run(
        [openspec_cli, "new", "change", "--", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENSPEC_TELEMETRY": "0", "NO_COLOR": "1"},
    )
    ours = change_name_error(name)
    assert real.returncode != 0 and ours is not None
    assert ours in real.stdout + real.stderr
    assert change_name_error("add-thing-2") is None
