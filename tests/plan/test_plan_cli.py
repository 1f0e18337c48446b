"""`ralph-lsp plan` (SPEC §14), run as a real process on git copies of examples/toolbox: the demo
planner's change passes the real `openspec validate --strict`, a planner fixes what the gate's
prompt names, a hostile planner changes nothing outside its folder, the refusals write nothing,
and `run NAME` after `planned` implements the approved change."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import ralph
from tests.tags import FAKE_AGENTS

REPO = Path(__file__).resolve().parents[2]
TOOLBOX = REPO / "examples" / "toolbox"
PLANNED = 7
DESCRIPTION = (
    "Reverse a string with toolbox.reverse. Keep combining marks with their base letter."
    " Should emoji be kept whole?"
)


def git(root: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


@pytest.fixture
def toolbox(tmp_path: Path) -> Path:
    root = tmp_path / "toolbox"
    shutil.copytree(TOOLBOX, root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


def fake(script: str) -> str:
    return f"{sys.executable} {FAKE_AGENTS / script}"


def record_of(root: Path, change: str) -> dict[str, object]:
    (folder,) = (root / ".ralph" / "runs").iterdir()
    data = json.loads((folder / "record.json").read_text("utf-8"))
    assert data["change"] == change
    return dict(data)


def outside_changes(root: Path, change: str) -> list[str]:
    """`git status` lines for anything but the change's folder (and the history)."""
    lines = git(root, "status", "--porcelain", "--untracked-files=all").splitlines()
    return [line for line in lines if f"openspec/changes/{change}/" not in line]


def test_the_demo_plan_passes_the_real_strict_validation(toolbox: Path, openspec_cli: str) -> None:
    out = ralph("plan", "add-reverse", "--describe", DESCRIPTION, "--agent", "demo", cwd=toolbox)
    assert out.returncode == PLANNED, out.stderr + out.stdout
    folder = toolbox / "openspec" / "changes" / "add-reverse"
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert names == [
        ".openspec.yaml",
        "design.md",
        "proposal.md",
        "specs/reverse/spec.md",
        "tasks.md",
    ]
    assert (folder / ".openspec.yaml").read_text().startswith("schema: spec-driven\ncreated: ")
    real = subprocess.run(
        [openspec_cli, "validate", "add-reverse", "--strict"],
        cwd=toolbox,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert real.returncode == 0, real.stdout + real.stderr
    record = record_of(toolbox, "add-reverse")
    assert record["kind"] == "plan" and record["state"] == "planned"
    assert record["description"] == DESCRIPTION
    # the description's question is the open question, in the reason too
    assert record["openQuestions"] == ["Should emoji be kept whole?"]
    assert "Should emoji be kept whole?" in str(record["reason"])
    assert outside_changes(toolbox, "add-reverse") == []
    (row,) = json.loads(ralph("runs", "--json", cwd=toolbox).stdout)["runs"]
    assert (row["change"], row["state"], row["kind"]) == ("add-reverse", "planned", "plan")


def test_a_second_draft_fixes_exactly_what_the_prompt_names(
    toolbox: Path,
) -> None:
    out = ralph(
        "plan",
        "add-widget",
        "--describe",
        "Make widgets.",
        "--agent-command",
        fake("plan_two_drafts.py"),
        cwd=toolbox,
    )
    assert out.returncode == PLANNED, out.stderr + out.stdout
    (run,) = (toolbox / ".ralph" / "runs").iterdir()  # each iteration's prompt, as it was sent
    prompts = [(run / f"prompt-{n}.md").read_text("utf-8") for n in (1, 2)]
    assert not (run / "prompt-3.md").exists()
    record = record_of(toolbox, "add-widget")
    gates = record["gate"]
    assert isinstance(gates, list) and len(prompts) == len(gates) == 2
    first = gates[0]["problems"]
    assert any("SHALL or MUST" in p for p in first)
    assert any("at least one scenario" in p for p in first)  # the CLI's words
    assert any('"Name a widget" has no scenario' in p for p in first)  # the gate's own rule
    assert any("no unchecked task" in p for p in first)
    # the second prompt states the first draft's problems as the change's current state
    assert "The change folder holds no artifact yet." in prompts[0]
    for problem in first:
        assert f"- {problem}" in prompts[1]
    assert "attempt" not in prompts[1].lower() and "previous" not in prompts[1].lower()
    assert gates[1]["problems"] == []


def test_a_hostile_planner_changes_nothing_outside_its_folder(toolbox: Path) -> None:
    config = (toolbox / ".git" / "config").read_text()
    out = ralph(
        "plan",
        "add-evil",
        "--describe",
        "Be evil.",
        "--agent-command",
        fake("plan_hostile.py"),
        cwd=toolbox,
    )
    assert out.returncode == PLANNED, out.stderr + out.stdout
    assert "refused" in out.stdout
    assert (toolbox / ".git" / "config").read_text() == config
    assert not (toolbox / "toolbox" / "evil.py").exists() and not (toolbox / "EVIL.md").exists()
    assert outside_changes(toolbox, "add-evil") == []


@pytest.mark.unsandboxed("with the sandbox off, the snapshot of the work tree is the guard")
def test_unsandboxed_a_hostile_planner_fails_the_run_naming_the_paths(toolbox: Path) -> None:
    out = ralph(
        "plan",
        "add-evil",
        "--describe",
        "Be evil.",
        "--agent-command",
        fake("plan_hostile.py"),
        cwd=toolbox,
    )
    assert out.returncode == 1, out.stderr + out.stdout
    record = record_of(toolbox, "add-evil")
    assert record["state"] == "failed"
    reason = str(record["reason"])
    assert "outside the change folder" in reason
    for path in ("EVIL.md", "toolbox/evil.py", "toolbox/__init__.py", ".git/config"):
        assert path in reason


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["add_thing", "--describe", "x"], "cannot contain underscores"),
        (["AddThing", "--describe", "x"], "must be lowercase"),
        (["add--thing", "--describe", "x"], "consecutive hyphens"),
        (["add-slugify", "--describe", "x"], "exists already"),
        (["add-new", "--revise", "x"], "no change 'add-new' to revise"),
        (["add-new"], "--describe TEXT"),
        (["add-new", "--describe", "  "], "description is empty"),
    ],
)
def test_refusals_exit_2_and_write_nothing(toolbox: Path, args: list[str], says: str) -> None:
    before = git(toolbox, "status", "--porcelain", "--untracked-files=all")
    out = ralph("plan", *args, "--agent", "demo", cwd=toolbox)
    assert out.returncode == 2 and says in out.stderr, out.stderr
    assert git(toolbox, "status", "--porcelain", "--untracked-files=all") == before
    assert not (toolbox / ".ralph").exists()


def test_from_file_plans_a_queue_and_refuses_a_bad_section(toolbox: Path, tmp_path: Path) -> None:
    plans = tmp_path / "plans.md"
    plans.write_text("## add-reverse\nReverse a string.\n\n## add-shout\nShout a string.\n")
    out = ralph("plan", "--from", str(plans), "--parallel", "2", "--agent", "demo", cwd=toolbox)
    assert out.returncode == PLANNED, out.stderr + out.stdout
    assert "add-reverse: planned" in out.stdout and "add-shout: planned" in out.stdout
    bad = tmp_path / "bad.md"
    bad.write_text("## add-more\nMore.\n\n## Bad Name\nNo.\n")
    out = ralph("plan", "--from", str(bad), "--agent", "demo", cwd=toolbox)
    assert out.returncode == 2 and "must be lowercase" in out.stderr
    assert not (toolbox / "openspec" / "changes" / "add-more").exists()


def test_revise_plans_again_with_the_text_as_guidance(toolbox: Path) -> None:
    first = ralph("plan", "add-reverse", "--describe", DESCRIPTION, "--agent", "demo", cwd=toolbox)
    assert first.returncode == PLANNED
    design = toolbox / "openspec" / "changes" / "add-reverse" / "design.md"
    assert "- Should emoji be kept whole?" in design.read_text()
    out = ralph(
        "plan", "add-reverse", "--revise", "Keep emoji whole.", "--agent", "demo", cwd=toolbox
    )
    assert out.returncode == PLANNED, out.stderr + out.stdout
    text = design.read_text()
    assert "As the operator directed: Keep emoji whole." in text and "- None." in text


def test_run_after_planned_implements_the_approved_change(toolbox: Path) -> None:
    planned = ralph(
        "plan", "add-reverse", "--describe", DESCRIPTION, "--agent", "demo", cwd=toolbox
    )
    assert planned.returncode == PLANNED
    out = ralph("run", "add-reverse", "--agent", "demo", cwd=toolbox, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    tasks = (toolbox / "openspec" / "changes" / "add-reverse" / "tasks.md").read_text()
    assert "- [ ]" not in tasks and tasks.count("- [x]") == 3
    assert "succeeded: every task is checked (3/3)" in out.stdout


@pytest.mark.parametrize(
    ("limit", "code", "says"),
    [
        (["--stuck-after", "2"], 3, "stuck: the draft did not change its problems in 2 iterations"),
        (["--max-iterations", "1"], 4, "exhausted: 1 iteration ran (maxIterations)"),
    ],
)
def test_a_planner_that_drafts_nothing_ends_stuck_or_exhausted_naming_the_problems(
    toolbox: Path, limit: list[str], code: int, says: str
) -> None:
    idle = f"{sys.executable} -c pass"
    out = ralph(
        "plan", "add-idle", "--describe", "Idle.", "--agent-command", idle, *limit, cwd=toolbox
    )
    assert out.returncode == code, out.stderr + out.stdout
    record = record_of(toolbox, "add-idle")
    reason = str(record["reason"])
    assert f"{record['state']}: {reason}".startswith(says), reason
    assert "; the draft still fails the gate: " in reason and "no unchecked task" in reason
