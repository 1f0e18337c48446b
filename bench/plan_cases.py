"""Planning (SPEC §14): the gate against `openspec validate NAME --strict` on the same
50-requirement draft, and what a planning iteration costs beyond its agent."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import openspec
from bench.common import REPO, bench_env, median, rnd, scratch
from bench.report import Results

NAME = "add-fifty"
REQUIREMENTS = 50
AGENT = shutil.which("true") or "/bin/true"  # an agent that does nothing, at once


def draft(root: Path, requirements: int = REQUIREMENTS, tasks: bool = True) -> Path:
    """A copy of examples/toolbox with a valid change of ``requirements`` ADDED requirements."""
    shutil.copytree(REPO / "examples" / "toolbox", root)
    folder = root / "openspec" / "changes" / NAME
    (folder / "specs" / "fifty").mkdir(parents=True)
    (folder / ".openspec.yaml").write_text("schema: spec-driven\ncreated: 2026-12-01\n")
    (folder / "proposal.md").write_text(
        "## Why\nA draft of fifty requirements, as a planning agent writes one, to time the gate."
        "\n\n## What Changes\n- Fifty behaviours.\n"
    )
    body = ["## ADDED Requirements", ""]
    for n in range(1, requirements + 1):
        body += [
            f"### Requirement: Behaviour {n}",
            f"The system SHALL provide behaviour {n} whenever it is asked for.",
            "",
            f"#### Scenario: Behaviour {n} asked for",
            f"- **WHEN** behaviour {n} is asked for",
            f"- **THEN** behaviour {n} is provided",
            "",
        ]
    (folder / "specs" / "fifty" / "spec.md").write_text("\n".join(body))
    if tasks:
        (folder / "tasks.md").write_text("## 1. Fifty\n- [ ] 1.1 Build the fifty behaviours\n")
    (folder / "design.md").write_text("## Context\nA bench draft.\n")
    return folder


@contextlib.contextmanager
def _agent_time(spans: list[float]) -> Iterator[None]:
    """Each agent's own time inside the run: from ``AgentProcess.start`` being called to its
    ``wait`` returning (the watchdog, the pipes, the program), appended to ``spans`` in ms."""
    from ralph_lsp.proc.process import AgentProcess

    start, wait = AgentProcess.start, AgentProcess.wait
    began: list[float] = []

    async def timed_start(spec: Any, *args: Any, **kwargs: Any) -> AgentProcess:
        began.append(time.perf_counter())
        return await start(spec, *args, **kwargs)

    async def timed_wait(self: AgentProcess) -> int:
        code = await wait(self)
        if began:
            spans.append((time.perf_counter() - began.pop()) * 1000)
        return code

    AgentProcess.start = timed_start  # type: ignore[assignment,method-assign]
    AgentProcess.wait = timed_wait  # type: ignore[method-assign]
    try:
        yield
    finally:
        AgentProcess.start, AgentProcess.wait = start, wait  # type: ignore[method-assign]


def gate_vs_openspec(results: Results, reps: int) -> None:
    """The gate in process (as a planning run calls it) over `openspec validate NAME --strict`."""
    from ralph_lsp.openspec.planning import gate

    try:
        theirs_argv = openspec.command()
    except openspec.Unavailable as exc:
        results.skip(("plan_gate_vs_openspec",), str(exc))
        return
    env = bench_env(**openspec.ENV, OPENSPEC_NO_UPDATE_CHECK="1", CI="1")
    ours: list[float] = []
    theirs: list[float] = []
    with scratch("plan-gate") as tmp:
        root = tmp / "toolbox"
        folder = draft(root)
        argv = [*theirs_argv, "validate", NAME, "--strict"]
        for _ in range(reps + 1):  # the first of each warms the caches, and is left out
            t0 = time.perf_counter()
            verdict = gate(root, folder)
            ours.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            out = subprocess.run(argv, cwd=root, env=env, capture_output=True, timeout=300)
            theirs.append((time.perf_counter() - t0) * 1000)
    if not verdict.passed or out.returncode != 0:
        results.notes.append(f"plan_gate_vs_openspec: the draft did not pass: {verdict.problems}")
    results.put("plan_gate_vs_openspec", round(median(ours[1:]) / median(theirs[1:]), 4), reps)
    results.details["plan_gate_vs_openspec"] = {
        "requirements": REQUIREMENTS,
        "gate_ms_median": rnd(median(ours[1:]), 3),
        "openspec_validate_strict_ms_median": rnd(median(theirs[1:])),
        "both_pass": verdict.passed and out.returncode == 0,
    }


async def iteration_overhead(results: Results, iterations: int) -> None:
    """A planning run of ``iterations`` spawns of an agent that does nothing (`true`), sandbox
    off (the work tree's snapshot included) on the 50-requirement draft without a task file
    (so the gate validates it all and the run goes on): each iteration's wall time, from its
    start event to its end event, less its agent's own time (``_agent_time``)."""
    from ralph_lsp.loop.engine import Engine
    from ralph_lsp.runs.events import IterationEvent
    from ralph_lsp.runs.request import RunRequest
    from ralph_lsp.settings import settings_from_dict

    marks: dict[int, float] = {}
    walls: list[float] = []
    spawn: list[float] = []

    def on_event(event: object) -> None:
        if isinstance(event, IterationEvent):
            if event.phase == "start":
                marks[event.n] = time.perf_counter()
            elif event.n in marks:
                walls.append((time.perf_counter() - marks[event.n]) * 1000)

    settings, _ = settings_from_dict(
        {
            "agentCommand": [AGENT],
            "maxIterations": iterations,
            "stuckAfter": iterations + 1,
            "sandbox": "off",
            "checkpoints": False,
        }
    )
    with scratch("plan-iter") as tmp:
        root = tmp / "toolbox"
        draft(root, tasks=False)
        engine = Engine(on_event)
        with _agent_time(spawn):
            await engine.start(root, NAME, settings, RunRequest(plan="Fifty behaviours."))
            status = await engine.wait(root, NAME)
    # per iteration: its wall time less its agent's own (the first iteration warms up)
    overhead = median([w - a for w, a in zip(walls[1:], spawn[1:], strict=False)])
    results.put("plan_iteration_overhead_ms", rnd(overhead), len(walls) - 1)
    results.details["plan_iteration_overhead_ms"] = {
        "iteration_wall_ms_median": rnd(median(walls[1:])),
        "agent_ms_median": rnd(median(spawn[1:])),
        "iterations": len(walls),
        "run_ended": f"{status.state}: {status.reason}"[:200],
    }
