"""What one spawn of the agent produced, as the run's policy and its receipt read it (SPEC §3,
§15): the facts of the spawn priced at the model it ran, and the receipt fields of its record.

The run (``run.Run``) gathers an :class:`~ralph_lsp.loop.iteration.IterationOutcome` and the
tasks before and after; :func:`facts` turns them into the policy's
:class:`~ralph_lsp.loop.policy.IterationResult`, and :func:`receipt` into the receipt's fields
(``runs/receipts.py`` reads them back).
"""

from __future__ import annotations

from ralph_lsp.loop import budget, policy
from ralph_lsp.loop.iteration import IterationOutcome
from ralph_lsp.openspec.tasks import TasksDoc
from ralph_lsp.runs.costs import usage_record
from ralph_lsp.runs.receipts import ReceiptRecord, checked_tasks, cost_source


def facts(
    out: IterationOutcome,
    completed_before: int,
    after: TasksDoc,
    plan: budget.Budget,
    stopped: bool,
    model: str | None = None,
) -> policy.IterationResult:
    """The facts of one spawn, as the run policy reads them (its cost priced by ``plan`` at
    ``model``, the model the run asked for, when the agent reported no cost)."""
    res = out.result
    cost, estimated = plan.spawn_cost(res, model)
    return policy.IterationResult(
        completed_before=completed_before,
        completed=after.completed,
        total=after.total,
        exit_code=out.exit_code,
        start_error=str(out.start_error) if out.start_error is not None else None,
        printed=out.printed,
        activity=out.activity,
        timed_out=out.timed_out,
        stopped=out.stopped or stopped,
        problems=tuple(out.problems),
        last_error=out.last_error,
        cost_usd=cost,
        cost_estimated=estimated,
        tokens=plan.counted_tokens(res),
    )


def receipt(
    out: IterationOutcome,
    result: policy.IterationResult,
    choice: policy.ModelChoice,
    plan: budget.Budget,
    docs: tuple[TasksDoc, TasksDoc],
    timeout: float | None,
) -> ReceiptRecord:
    """The receipt fields of a spawn's record: the model it ran (as the agent reported it, else
    as the run asked, else as configured) and why, its tokens, its cost's source, the tasks it
    checked (``docs``: tasks.md before and after) and why it ended."""
    res = out.result
    return {
        "model": (res.model if res else None) or choice.model or plan.model,
        "modelReason": choice.reason,
        "usage": usage_record(res.usage, plan.agent) if res else None,
        "agentUsage": res.usage if res else None,
        "costSource": cost_source(result.cost_usd, result.cost_estimated),
        "tasks": checked_tasks(*docs),
        "endReason": end_reason(out, timeout),
    }


def end_reason(out: IterationOutcome, timeout: float | None) -> str:
    """Why the agent's process ended, in a few words."""
    if out.start_error is not None:
        return f"could not start: {out.start_error}"
    if out.stopped:
        return "stopped by the user"
    if out.timed_out:
        return f"timed out after {timeout:g}s" if timeout else "timed out"
    if out.finished_lingering:
        return "every task checked; stopped after finishGraceSeconds"
    limited = next((p for p in out.problems if p.kind == "rate_limit"), None)
    if limited is not None:
        return f"rate limited: {limited.message[:120]}"
    if out.exit_code is None:
        return "ended without an exit code"
    return "exited 0" if out.exit_code == 0 else f"exit {out.exit_code}"
