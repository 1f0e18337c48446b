"""A planning run (SPEC §14): an agent drafts a change, the gate judges it after every iteration,
and the run ends ``planned`` for a person to approve; nothing is implemented.

:class:`PlanRun` is a :class:`~ralph_lsp.loop.run.Run` with its own loop: the same spawn
(presets, stream-json, costs, refusals, history, events, stop, guidance, limits and budgets),
a planning prompt (``plan_prompt``) in place of the run's, and the gate
(``openspec.planning.gate``, in process) in place of tasks.md and verification. Its sandbox
writes only the change folder; with the sandbox off, a snapshot of the work tree around each
iteration (``confinement``) fails the run naming whatever else changed. :func:`create_change`
makes the change folder as ``openspec new change`` does.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ralph_lsp.loop import budget, confinement, policy, sandboxing, spawn_facts
from ralph_lsp.loop.plan_prompt import build_plan_prompt
from ralph_lsp.loop.run import Run, _initial_backoff
from ralph_lsp.openspec.planning import GateResult, change_name_error, gate, open_questions
from ralph_lsp.openspec.task_files import schema_name
from ralph_lsp.openspec.tasks_fast import parse_tasks
from ralph_lsp.runs.events import IterationEvent
from ralph_lsp.runs.states import PLAN_KIND, RunState
from ralph_lsp.runs.status import EngineError, now_iso
from ralph_lsp.settings import model_for

KIND = PLAN_KIND
MAX_REASON_PROBLEMS = 3


def create_change(root: Path, name: str) -> Path:
    """``openspec/changes/NAME/`` with its ``.openspec.yaml`` (``schema`` and ``created``, as
    ``openspec new change`` writes it); refused (``EngineError``, nothing written) for an
    invalid name or a change that exists."""
    why = change_name_error(name)
    if why is not None:
        raise EngineError(f"{why}: {name!r} is not a change name")
    folder = root / "openspec" / "changes" / name
    if folder.exists() or folder.is_symlink():
        raise EngineError(
            f"change {name!r} exists already ({folder}); plan it again with --revise TEXT,"
            " or choose another name"
        )
    schema = schema_name(root, folder)
    folder.mkdir(parents=True)
    created = datetime.date.today().isoformat()  # the CLI's local date
    (folder / ".openspec.yaml").write_text(f"schema: {schema}\ncreated: {created}\n", "utf-8")
    return folder


class PlanRun(Run):
    """One planning run of a change; ``description`` is what the person asked for."""

    description = ""

    def __init__(self, *args: Any, description: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.description = description
        self.status.kind = KIND
        self.gates: list[dict[str, Any]] = []  # each iteration's gate problems

    def record(self) -> dict[str, Any]:
        out = super().record()
        out["kind"] = KIND
        out["description"] = self.description
        out["gate"] = self.gates
        out["openQuestions"] = list(self.status.questions)
        return out

    def _gate(self) -> GateResult:
        return gate(self.change.root, self.change.folder)

    async def _loop(self) -> tuple[RunState, str]:
        self.sandbox = await sandboxing.RunSandbox.open(
            self.settings, self.work.root, self.change.root, self.log, self.change.folder
        )
        if self.sandbox is not None:
            self.update(sandbox=self.sandbox.to_json())
        self.log(f"planning {self.change.name}: only {self.change.folder} is written")
        verdict = self._gate()
        counters = policy.Counters(backoff=_initial_backoff())
        limits = budget.limits(self.settings, self.status.max_iterations, escalating=False)
        self.update(reason="planning", transition=True)
        while True:
            if self.stop_event.is_set():
                return RunState.STOPPED, "stopped by the user"
            end = policy.before_spawn(counters, limits, 0, 1)
            if end is not None:
                return end.state, _plan_reason(end, verdict)
            verdict, decision = await self._plan_iteration(verdict, counters, limits)
            if isinstance(decision, policy.End):
                return decision.state, decision.reason
            if isinstance(decision, policy.Wait):
                await self._wait(decision)
            counters = decision.counters

    # Long: one planning spawn read top to bottom: prompt, spawn, confinement, gate, record.
    async def _plan_iteration(
        self, before: GateResult, counters: policy.Counters, limits: policy.Limits
    ) -> tuple[GateResult, policy.Decision]:
        n = counters.counted + 1
        plan_model = model_for(self.settings, "plan")  # SPEC §15: the planning phase's model
        self.choice = policy.ModelChoice(plan_model, "ralph.models.plan" if plan_model else None)
        pending = [g for g in self.guidance if g.delivered_in is None]
        for g in pending:
            g.delivered_in = n
        prompt = build_plan_prompt(
            self.change, self.description, before.problems, [g.text for g in pending]
        )
        self.update(iteration=n, reason=f"planning iteration {n}", phase="agent", transition=True)
        self.log(
            f"▶ planning iteration {n}/{self.status.max_iterations}"
            f" · {len(before.problems)} problem(s) in the draft"
            + (f" · guidance: {len(pending)}" if pending else "")
        )
        started, t0 = now_iso(), time.monotonic()
        self.emit(IterationEvent(*self.key, "start", n, None, started))
        shot = None if self.sandbox is not None else self._snapshot()
        outcome = await self._iterate(n, prompt)
        outside = [] if shot is None else confinement.changed(shot, self._snapshot())
        verdict = await asyncio.to_thread(self._gate)
        progress = verdict.problems != before.problems
        none = parse_tasks("")  # a planning iteration checks no task: the gate is its progress
        result = spawn_facts.facts(
            outcome, 0, none, self.budget, self.stop_event.is_set(), self.choice.model
        )
        # the policy's progress is a task checked: here, a draft whose problems changed
        result = replace(result, completed_before=-1 if progress else 0, completed=0, total=1)
        decision = policy.after_iteration(result, counters, limits, time.time())
        counts = not isinstance(decision, policy.Wait)
        if not counts or result.start_error is not None or policy.failed_start(result):
            for g in pending:
                g.delivered_in = None
        self._record_spawn(n, started, outcome, result, counts, [], (none, none))
        if counts:
            self.iterations.last()["tasksChecked"] = 0
            self.gates.append({"n": n, "problems": list(verdict.problems)})
            self.tell_iteration_end(n, pending)
        cost = policy.add_cost(counters.cost_usd, result.cost_usd)
        self.update(cost_usd=cost, total=_task_total(self.change.folder))
        self.log(
            f"◀ planning iteration {n} ended · exit {outcome.exit_code}"
            f" · {len(verdict.problems)} problem(s) · {time.monotonic() - t0:.1f}s"
        )
        return verdict, self._decide(decision, verdict, outside, counts and not result.stopped)

    def _decide(
        self, decision: policy.Decision, verdict: GateResult, outside: list[str], counted: bool
    ) -> policy.Decision:
        if outside:
            return policy.End(RunState.FAILED, confinement.describe(outside))
        if not self.change.folder.is_dir():
            return policy.End(
                RunState.FAILED, f"the change folder {self.change.folder} was removed"
            )
        if isinstance(decision, policy.End) and decision.state is not RunState.SUCCEEDED:
            return policy.End(decision.state, _plan_reason(decision, verdict))
        if verdict.passed and counted:
            return policy.End(RunState.PLANNED, self._planned_reason())
        return decision

    def _planned_reason(self) -> str:
        questions = open_questions(self.change.folder)
        self.status.questions = tuple(questions)
        reason = (
            f"the change passes the gate (openspec validate {self.change.name} --strict, an"
            f" unchecked task, a scenario for every requirement); approve it with"
            f" `ralph-lsp run {self.change.name}`"
        )
        if questions:
            listed = "; ".join(questions)
            reason += f"; {len(questions)} open question(s) in design.md: {listed}"
        return reason

    def _snapshot(self) -> confinement.Snapshot:
        return confinement.snapshot(self.change.root, self.change.folder)


def _task_total(folder: Path) -> int:
    try:
        return parse_tasks((folder / "tasks.md").read_text("utf-8", "replace")).total
    except OSError:
        return 0


def _plan_reason(end: policy.End, verdict: GateResult) -> str:
    """A limit's reason told of a draft rather than of tasks, with the gate's problems left."""
    reason = end.reason
    if end.state is RunState.EXHAUSTED:  # "… and 1 of 1 tasks remain" / "…; 1 tasks remain"
        cut = " and " if "(maxIterations)" in reason else ";"
        reason = reason.split(cut, 1)[0]
    elif end.state is RunState.STUCK:
        reason = reason.replace("no task checked in", "the draft did not change its problems in")
    else:
        return reason
    if not verdict.problems:
        return reason
    shown = "; ".join(verdict.problems[:MAX_REASON_PROBLEMS])
    more = len(verdict.problems) - MAX_REASON_PROBLEMS
    tail = f" (and {more} more)" if more > 0 else ""
    return f"{reason}; the draft still fails the gate: {shown}{tail}"
