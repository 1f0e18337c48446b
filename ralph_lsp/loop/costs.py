"""What a run's money bought (SPEC §3 "History"): tokens per iteration, the cost per verified
task, and the spend on iterations that made no progress. Pure; reads the plain dicts of history
records (which may come from an older version or be damaged) and never raises."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict


class TokensRecord(TypedDict):
    """An iteration's tokens, the same names whichever agent reported them."""

    input: int | None
    output: int | None
    cacheRead: int | None
    cacheWrite: int | None


# (our name, the names agents use for it): Claude Code's result usage, Codex's turn.completed
# usage, Gemini's result stats.
_TOKEN_NAMES = {
    "input": ("input_tokens",),
    "output": ("output_tokens",),
    "cacheRead": ("cache_read_input_tokens", "cached_input_tokens", "cached"),
    "cacheWrite": ("cache_creation_input_tokens", "cache_write_input_tokens"),
}


def _count(usage: Mapping[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        v = usage.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
            return int(v)
    return None


def tokens_of(usage: Any) -> TokensRecord | None:
    """Input, output and cache tokens from an agent's ``usage`` (None when it gave none)."""
    if not isinstance(usage, Mapping):
        return None
    record: TokensRecord = {
        "input": _count(usage, _TOKEN_NAMES["input"]),
        "output": _count(usage, _TOKEN_NAMES["output"]),
        "cacheRead": _count(usage, _TOKEN_NAMES["cacheRead"]),
        "cacheWrite": _count(usage, _TOKEN_NAMES["cacheWrite"]),
    }
    return record if any(v is not None for v in record.values()) else None


@dataclass(frozen=True)
class CostSummary:
    total: float | None  # None: no iteration reported a cost
    tasks: int  # tasks checked by the iterations
    per_task: float | None  # None: no cost, or no task checked
    no_progress: float  # spent on iterations that checked no task
    no_progress_iterations: int
    estimated: bool = False  # some cost was estimated from tokens at list prices
    # Tasks checked up to the last iteration whose verification passed (None: no verification
    # ran in the run, so no task was verified nor failed to be), and the cost of each.
    verified: int | None = None
    per_verified_task: float | None = None

    def text(self) -> str:
        """``$0.0067 · $0.0022 per verified task · $0.0000 on 0 iterations without progress``,
        and `` (estimate)`` after it when a cost was estimated; "" when nothing was spent (no cost
        reported, or a free agent such as the demo). Without any verification in the run, the
        cost is per task checked, said so (``per task, unverified``)."""
        if not self.total:
            return ""
        parts = [f"${self.total:.4f}"]
        if self.per_verified_task is not None:
            parts.append(f"${self.per_verified_task:.4f} per verified task")
        elif self.verified == 0:
            parts.append("no task verified")
        elif self.per_task is not None:
            parts.append(f"${self.per_task:.4f} per task, unverified")
        n = self.no_progress_iterations
        parts.append(
            f"${self.no_progress:.4f} on {n} iteration{'' if n == 1 else 's'} without progress"
        )
        return " · ".join(parts) + (" (estimate)" if self.estimated else "")


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def summarize(iterations: Iterable[Any]) -> CostSummary:
    """The cost summary of a run's ``iterations`` records."""
    total: float | None = None
    tasks = 0
    wasted = 0.0
    wasted_n = 0
    estimated = False
    verified: int | None = None
    for it in iterations:
        if not isinstance(it, Mapping):
            continue
        cost = _number(it.get("costUsd"))
        checked = int(_number(it.get("tasksChecked")) or 0)
        tasks += max(0, checked)
        passed = _verification_passed(it.get("verification"))
        if passed is not None:
            verified = tasks if passed else (verified or 0)
        if cost is not None:
            total = (total or 0.0) + cost
            estimated = estimated or it.get("costEstimated") is True
        if checked <= 0:
            wasted_n += 1
            wasted += cost or 0.0
    per_task = total / tasks if total is not None and tasks > 0 else None
    per_verified = total / verified if total is not None and verified else None
    return CostSummary(total, tasks, per_task, wasted, wasted_n, estimated, verified, per_verified)


def _verification_passed(checks: Any) -> bool | None:
    """Whether an iteration's verification passed (every command exited 0); None when none
    ran after it."""
    if not isinstance(checks, list) or not checks:
        return None
    return all(isinstance(c, Mapping) and c.get("exitCode") == 0 for c in checks)
