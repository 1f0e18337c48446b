"""Receipts (SPEC §15): what each iteration ran, read, wrote, cost and achieved, and the run's
totals, as the record keeps them and as ``ralph-lsp history --receipts`` shows them.

An iteration's receipt is fields of its history record: ``model`` and ``modelReason``, ``usage``
(``inputTokens``, ``cachedInputTokens``, ``cacheWriteTokens``, ``outputTokens``), ``costUsd`` with
``costSource`` (``reported`` or ``estimated``; null with no cost), ``tasks`` (the tasks it
checked), ``verification`` and ``endReason``. Readers take plain dicts, which may come from an
older version or be damaged, and never raise. An agent that reported nothing shows nothing: a
missing figure is a dash, never ``$0.0000`` or 0 tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from ralph_lsp.runs.costs import CostSummary, UsageRecord, summarize, usd

if TYPE_CHECKING:
    from ralph_lsp.openspec.tasks import TasksDoc


class ReceiptRecord(TypedDict):
    """A spawn's receipt (SPEC §15; read back by ``runs/receipts.py``)."""

    model: str | None  # as the agent reported it, else as the run asked, else as configured
    modelReason: str | None  # ralph.models.apply, or the escalation step and why
    usage: UsageRecord | None  # its tokens, cached apart, whichever agent
    agentUsage: dict[str, Any] | None  # the agent's own usage, as it reported it
    costSource: str | None  # "reported", "estimated", or None with no cost
    tasks: list[str]  # the tasks it checked
    endReason: str  # why its process ended


#: The most task labels one receipt lists (a run that checks hundreds at once keeps a count).
MAX_TASKS = 50
USAGE_KEYS = ("inputTokens", "cachedInputTokens", "cacheWriteTokens", "outputTokens")


def checked_tasks(before: TasksDoc, after: TasksDoc) -> list[str]:
    """The tasks an iteration checked: done in ``after`` and not in ``before``, by label (the
    task's id, else the start of its text), in file order."""
    was_done = {t.label for t in before.tasks if t.done}
    found: list[str] = []
    for task in after.tasks:
        if task.done and task.label not in was_done and task.label not in found:
            found.append(task.label)
            if len(found) >= MAX_TASKS:
                break
    return found


def cost_source(cost: float | None, estimated: bool) -> str | None:
    if cost is None:
        return None
    return "estimated" if estimated else "reported"


# -- reading receipts back -------------------------------------------------------------------


def _count(v: Any) -> int | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    return int(v) if ok else None


def _usd(v: Any) -> float | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    return float(v) if ok else None


def usage_of(it: Mapping[str, Any]) -> dict[str, int | None] | None:
    """An iteration's receipt tokens, or None when it has none (an older record, or an agent
    that reported none)."""
    usage = it.get("usage")
    if not isinstance(usage, Mapping) or not any(k in usage for k in USAGE_KEYS):
        return None
    found = {k: _count(usage.get(k)) for k in USAGE_KEYS}
    return found if any(v is not None for v in found.values()) else None


def _tokens_text(usage: Mapping[str, int | None] | None) -> str:
    if usage is None:
        return "tokens —"

    def n(key: str) -> str:
        v = usage.get(key)
        return "—" if v is None else f"{v:,}"

    return (
        f"in {n('inputTokens')} · cached {n('cachedInputTokens')}"
        f" · cache write {n('cacheWriteTokens')} · out {n('outputTokens')}"
    )


def _verification_text(checks: Any) -> str:
    if not isinstance(checks, list) or not checks:
        return "no verification ran"
    failed = [c for c in checks if not (isinstance(c, Mapping) and c.get("exitCode") == 0)]
    if not failed:
        return "verified"
    first = failed[0] if isinstance(failed[0], Mapping) else {}
    return f"verification failed ({str(first.get('command') or '?')[:80]})"


def _cost_text(it: Mapping[str, Any]) -> str:
    cost = _usd(it.get("costUsd"))
    if cost is None:
        return "cost —"
    source = it.get("costSource")
    if source not in ("reported", "estimated"):
        source = "estimated" if it.get("costEstimated") is True else "reported"
    return f"{usd(cost)} {source}"


def receipt_line(it: Mapping[str, Any]) -> str:
    """One iteration's receipt: ``#2 claude-haiku-4-5 (escalation 1/2) · in 120 · cached 0 · …
    · $0.0022 reported · tasks 1.1, 1.2 · verified · exited 0``."""
    model = it.get("model") if isinstance(it.get("model"), str) else None
    why = it.get("modelReason") if isinstance(it.get("modelReason"), str) else None
    head = f"#{it.get('n')} {model or 'model —'}" + (f" ({why})" if why else "")
    tasks = [t for t in (it.get("tasks") or []) if isinstance(t, str)]
    checked = _count(it.get("tasksChecked")) or 0
    tasks_text = (
        "tasks " + ", ".join(tasks)
        if tasks
        else (f"{checked} task(s)" if checked else "no task checked")
    )
    end = it.get("endReason") if isinstance(it.get("endReason"), str) else None
    if end is None:
        code = it.get("exitCode")
        end = "exit —" if code is None else ("exited 0" if code == 0 else f"exit {code}")
    parts = [head, _tokens_text(usage_of(it)), _cost_text(it), tasks_text]
    parts += [_verification_text(it.get("verification")), end]
    return " · ".join(parts)


def costs_json(s: CostSummary) -> dict[str, Any]:
    """The run record's ``costs`` (SPEC §15): the total, cost per verified task, the spend on
    iterations without progress, and whether some figure is an estimate. Costs are null when no
    iteration reported or estimated one."""
    return {
        "totalUsd": s.total,
        "perVerifiedTaskUsd": s.per_verified_task,
        "verifiedTasks": s.verified,
        "tasksChecked": s.tasks,
        "noProgressUsd": s.no_progress if s.total is not None else None,
        "noProgressIterations": s.no_progress_iterations,
        "estimated": s.estimated,
        "reviewUsd": s.review,
    }


def review_line(rnd: Mapping[str, Any]) -> str:
    """A review round's receipt: ``review 1 · demo · claude-haiku-4-5 · rejected · $0.0040``."""
    cost = _usd(rnd.get("costUsd"))
    parts = [
        f"review {rnd.get('round', '?')}",
        str(rnd.get("reviewer") or "?"),
        str(rnd.get("model") or "model —"),
        str(rnd.get("verdict") or "?"),
        "cost —" if cost is None else usd(cost),
    ]
    return " · ".join(parts)


def receipts_text(
    iterations: Sequence[Mapping[str, Any]], reviews: Sequence[Mapping[str, Any]] = ()
) -> list[str]:
    """``history --receipts``: one line per iteration, one per review round, then the total
    (the reviews' part said) and cost per verified task (or why there is none)."""
    lines = [receipt_line(it) for it in iterations]
    lines += [review_line(r) for r in reviews if isinstance(r, Mapping)]
    s = summarize(iterations, reviews)
    total = "—" if s.total is None else usd(s.total) + (" (estimate)" if s.estimated else "")
    if s.review:
        total += f" (review {usd(s.review)})"
    if s.per_verified_task is not None:
        per = f"{usd(s.per_verified_task)} per verified task"
    elif s.total is None:
        per = "no cost reported"
    elif s.verified == 0:
        per = "no task verified"
    elif s.verified is None:
        per = "no verification ran"
    else:
        per = "no task checked"
    wasted = (
        f" · {usd(s.no_progress)} on {s.no_progress_iterations} iteration(s) without progress"
        if s.total is not None
        else ""
    )
    lines.append(f"total {total} · {per}{wasted}")
    return lines


#: An iteration's receipt fields, as ``history --receipts --json`` gives them.
RECEIPT_FIELDS = (
    "n",
    "model",
    "modelReason",
    "usage",
    "costUsd",
    "costSource",
    "tasksChecked",
    "tasks",
    "endReason",
)


def receipt_json(it: Mapping[str, Any]) -> dict[str, Any]:
    """One iteration's receipt as JSON: its fields (null where the record has none), the
    verification as passed/failed/null, the tokens as the record keeps them."""
    found = {k: it.get(k) for k in RECEIPT_FIELDS}
    found["usage"] = usage_of(it)
    found["costUsd"] = _usd(it.get("costUsd"))
    if found["costUsd"] is not None and found["costSource"] not in ("reported", "estimated"):
        found["costSource"] = "estimated" if it.get("costEstimated") is True else "reported"
    elif found["costUsd"] is None:
        found["costSource"] = None
    checks = it.get("verification")
    found["verification"] = (
        None
        if not isinstance(checks, list) or not checks
        else ("passed" if _verification_text(checks) == "verified" else "failed")
    )
    return found


def receipts_json(record: Mapping[str, Any]) -> dict[str, Any]:
    """A run's receipts and its totals (``costs``, as the run record has them)."""
    its = [it for it in record.get("iterations") or [] if isinstance(it, Mapping)]
    reviews = [r for r in record.get("reviews") or [] if isinstance(r, Mapping)]
    return {
        "runId": record.get("runId"),
        "state": record.get("state"),
        "receipts": [receipt_json(it) for it in its],
        "reviews": reviews,
        "costs": costs_json(summarize(its, reviews)),
    }


def combined_costs(parts: Sequence[Any]) -> dict[str, Any]:
    """Several runs' ``costs`` as one (a queue's summary): the totals added, the cost per
    verified task over every verified task."""
    found = [p for p in parts if isinstance(p, Mapping)]
    totals = [t for p in found if (t := _usd(p.get("totalUsd"))) is not None]
    total = sum(totals) if totals else None
    verified = sum(_count(p.get("verifiedTasks")) or 0 for p in found)
    idle = [t for p in found if (t := _usd(p.get("noProgressUsd"))) is not None]
    reviews = [t for p in found if (t := _usd(p.get("reviewUsd"))) is not None]
    return {
        "totalUsd": round(total, 6) if total is not None else None,
        "perVerifiedTaskUsd": round(total / verified, 6)
        if total is not None and verified
        else None,
        "verifiedTasks": verified
        if any(p.get("verifiedTasks") is not None for p in found)
        else None,
        "tasksChecked": sum(_count(p.get("tasksChecked")) or 0 for p in found),
        "noProgressUsd": round(sum(idle), 6) if idle else None,
        "noProgressIterations": sum(_count(p.get("noProgressIterations")) or 0 for p in found),
        "estimated": any(p.get("estimated") is True for p in found),
        "reviewUsd": round(sum(reviews), 6) if reviews else None,
    }


def costs_text(costs: Any) -> str:
    """A ``costs`` object in one line (``$0.2200 · $0.1100 per verified task · $0.0200 on 2
    iterations without progress``); "" when no cost was reported (never ``$0.0000``), or nothing
    was spent (a free agent such as the demo), as the run's end line says it."""
    if not isinstance(costs, Mapping) or not _usd(costs.get("totalUsd")):
        return ""
    total = _usd(costs.get("totalUsd")) or 0.0
    review = _usd(costs.get("reviewUsd"))
    parts = [usd(total) + (f" (review {usd(review)})" if review else "")]
    per = _usd(costs.get("perVerifiedTaskUsd"))
    if per is not None:
        parts.append(f"{usd(per)} per verified task")
    elif costs.get("verifiedTasks") == 0:
        parts.append("no task verified")
    n = _count(costs.get("noProgressIterations")) or 0
    idle = _usd(costs.get("noProgressUsd")) or 0.0
    parts.append(f"{usd(idle)} on {n} iteration{'' if n == 1 else 's'} without progress")
    return " · ".join(parts) + (" (estimate)" if costs.get("estimated") is True else "")
