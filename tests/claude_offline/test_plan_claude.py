"""The real Claude Code CLI as the planner (SPEC §14), offline against the scripted model, in its
sandbox (on, the default) and with the `claude` preset as shipped (`--permission-mode
acceptEdits`, nothing added): `ralph-lsp plan NAME --describe … --agent claude` on a git copy
of examples/toolbox. The first iteration's `Write`s draft the proposal, a delta spec, the design
and the tasks, one requirement without SHALL or MUST; the gate names that, the second prompt
states it, that iteration's `Read` and `Edit` fix it, and the run ends `planned`. The real
`openspec validate --strict` agrees, and nothing outside the change folder changed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.plan.conftest import _openspec_cli  # noqa: F401  (the real OpenSpec CLI, a fixture)
from tests.plan.test_plan_cli import PLANNED, outside_changes, toolbox  # noqa: F401

from .conftest import Change
from .scripted_plan import CAPABILITY, DRAFT, OPEN_QUESTION, WITH_SHALL, WITHOUT_SHALL
from .scripted_server import ScriptedModel
from .test_real_claude import ralph_run

NAME = "add-reverse"
DESCRIPTION = "Reverse a string with toolbox.reverse, keeping combining marks with their letter."

Tree = dict[str, tuple[int, int]]


def tree(root: Path, folder: Path) -> Tree:
    """Every file of the project (git's directory and ignored files too) but the change folder
    and the run's history, with its size and modification time."""
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in (folder, root / ".ralph")]
        for name in filenames:
            st = (here / name).lstat()
            out[str((here / name).relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def test_claude_plans_a_change_fixes_the_named_problem_and_ends_planned(
    claude_bin: Path,
    toolbox: Path,  # noqa: F811
    openspec_cli: str,
    tmp_path: Path,
) -> None:
    folder = toolbox / "openspec" / "changes" / NAME
    change = Change(root=toolbox, name=NAME, folder=folder, tasks=folder / "tasks.md")
    before = tree(toolbox, folder)
    with ScriptedModel() as server:
        run = ralph_run(
            claude_bin,
            server,
            change,
            tmp_path,
            agent_args=None,  # the preset as shipped
            verb=("plan", "--describe", DESCRIPTION),
        )
    replies = [r.reply for r in server.message_requests()]
    assert run.returncode == PLANNED, f"{run.stdout}{run.stderr}\nreplies: {replies}"
    assert run.last_line.startswith("planned: the change passes the gate"), run.stdout
    writes = [f"plan-write:{rel}" for rel, _ in DRAFT]
    assert replies == [*writes, "plan-drafted", "plan-read", "plan-fix", "plan-fixed"], (
        f"{replies}\n{run.stdout}"
    )

    # what the CLI wrote through its tools, in the change folder only
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert names == sorted([".openspec.yaml", *(rel for rel, _ in DRAFT)])
    spec = (folder / "specs" / CAPABILITY / "spec.md").read_text("utf-8")
    assert WITH_SHALL in spec and WITHOUT_SHALL not in spec
    for rel, content in DRAFT[:1] + DRAFT[2:]:
        assert (folder / rel).read_text("utf-8") == content, rel

    # the gate named the one problem, the second prompt stated it, the fix cleared it
    record = run.record
    assert (record["kind"], record["state"]) == ("plan", "planned")
    gates = record["gate"]
    (problem,) = gates[0]["problems"]
    assert "Reverse a string" in problem and "SHALL or MUST" in problem, problem
    assert gates[1]["problems"] == [] and len(gates) == 2
    (runs,) = (toolbox / ".ralph" / "runs").iterdir()
    prompts = [(runs / f"prompt-{n}.md").read_text("utf-8") for n in (1, 2)]
    assert "The change folder holds no artifact yet." in prompts[0]
    assert f"- {problem}" in prompts[1] and "holds no artifact" not in prompts[1]
    assert record["openQuestions"] == [OPEN_QUESTION]
    assert all(it["costUsd"] > 0 for it in record["iterations"]), record["iterations"]
    assert record.get("sandbox"), "the planner ran unsandboxed"

    real = validate_strict(openspec_cli, toolbox)
    assert real.returncode == 0, real.stdout + real.stderr
    assert outside_changes(toolbox, NAME) == []
    assert tree(toolbox, folder) == before


def validate_strict(cli: str, root: Path) -> subprocess.CompletedProcess[str]:
    """`openspec validate NAME --strict`, the real CLI, in the project."""
    return subprocess.run(
        [cli, "validate", NAME, "--strict"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
