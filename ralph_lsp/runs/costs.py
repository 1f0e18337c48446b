"""What a run's money bought (SPEC §3 "History"): tokens per iteration, the cost per verified
task, and the spend on iterations that made no progress. Pure; reads the plain dicts of history
records (which may come from an older version or be damaged) and never raises."""

from __future__ import annotations

import math
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


class UsageRecord(TypedDict):
    """An iteration's receipt tokens (SPEC §15), the cached part apart whichever agent reported
    them: ``inputTokens`` read fresh, ``cachedInputTokens`` read from the prompt cache,
    ``cacheWriteTokens`` written to it, ``outputTokens``."""

    inputTokens: int | None
    cachedInputTokens: int | None
    cacheWriteTokens: int | None
    outputTokens: int | None


#: Agents whose input tokens count their cached part (Codex's turn.completed, Gemini's stats);
#: Claude Code's stream-json reports cache reads and writes beside its input tokens.
CACHED_IN_INPUT = ("codex", "gemini")


def usage_record(usage: Any, agent: str) -> UsageRecord | None:
    """The receipt's tokens from an agent's own ``usage`` (None when it reported none)."""
    return usage_of_tokens(tokens_of(usage), agent)


def usage_of_tokens(tokens: TokensRecord | None, agent: str) -> UsageRecord | None:
    if tokens is None:
        return None
    fresh = tokens["input"]
    if agent in CACHED_IN_INPUT and fresh is not None:  # their input counts its cached part
        fresh = max(0, fresh - (tokens["cacheRead"] or 0) - (tokens["cacheWrite"] or 0))
    return {
        "inputTokens": fresh,
        "cachedInputTokens": tokens["cacheRead"],
        "cacheWriteTokens": tokens["cacheWrite"],
        "outputTokens": tokens["output"],
    }


def usd(value: float) -> str:
    """``$0.0022``: four decimals, but a real cost too small for them keeps two significant
    digits (``$0.000039``), so a cost that was reported never reads as ``$0.0000``."""
    if 0 < value < 0.00005:
        return f"${value:.{min(12, 1 - math.floor(math.log10(value)))}f}"
    return f"${value:.4f}"


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
    review: float | None = None  # of the total, what the review rounds cost (SPEC §13)

    def text(self) -> str:
        """``$0.0067 · $0.0022 per verified task · $0.0000 on 0 iterations without progress``,
        and `` (estimate)`` after it when a cost was estimated; "" when nothing was spent (no cost
        reported, or a free agent such as the demo). Without any verification in the run, the
        cost is per task checked, said so (``per task, unverified``)."""
        if not self.total:
            return ""
        parts = [usd(self.total) + (f" (review {usd(self.review)})" if self.review else "")]
        if self.per_verified_task is not None:
            parts.append(f"{usd(self.per_verified_task)} per verified task")
        elif self.verified == 0:
            parts.append("no task verified")
        elif self.per_task is not None:
            parts.append(f"{usd(self.per_task)} per task, unverified")
        n = self.no_progress_iterations
        parts.append(
            f"{usd(self.no_progress)} on {n} iteration{'' if n == 1 else 's'} without progress"
        )
        return " · ".join(parts) + (" (estimate)" if self.estimated else "")


def _number(v: Any) -> float | None:
    """A finite number of 0 or more (a damaged record's NaN, infinity or negative is none)."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    return float(v) if ok else None


class CostTally:
    """:func:`summarize` kept up to date one iteration at a time (a running record adds each
    iteration as it ends instead of reading its whole list back)."""

    def __init__(self) -> None:
        self.total: float | None = None
        self.tasks = 0
        self.wasted = 0.0
        self.wasted_n = 0
        self.estimated = False
        self.verified: int | None = None
        self.review: float | None = None

    def add(self, it: Any) -> None:
        if not isinstance(it, Mapping):
            return
        cost = _number(it.get("costUsd"))
        checked = int(_number(it.get("tasksChecked")) or 0)
        self.tasks += checked
        passed = _verification_passed(it.get("verification"))
        if passed is not None:
            self.verified = self.tasks if passed else (self.verified or 0)
        if cost is not None:
            self.total = (self.total or 0.0) + cost
            self.estimated = self.estimated or (
                it.get("costEstimated") is True or it.get("costSource") == "estimated"
            )
        if checked <= 0:
            self.wasted_n += 1
            self.wasted += cost or 0.0

    def add_review(self, round_record: Any) -> None:
        """A review round (the record's ``reviews``): its cost is part of what the run's
        verified tasks cost, though it checks no task and is no iteration."""
        if not isinstance(round_record, Mapping):
            return
        cost = _number(round_record.get("costUsd"))
        if cost is not None:
            self.total = (self.total or 0.0) + cost
            self.review = (self.review or 0.0) + cost

    def summary(self) -> CostSummary:
        total, tasks, verified = self.total, self.tasks, self.verified
        per_task = total / tasks if total is not None and tasks > 0 else None
        per_verified = total / verified if total is not None and verified else None
        return CostSummary(
            total, tasks, per_task, self.wasted, self.wasted_n, self.estimated, verified,
            per_verified, self.review,
        )  # fmt: skip


def summarize(iterations: Iterable[Any], reviews: Iterable[Any] = ()) -> CostSummary:
    """The cost summary of a run's ``iterations`` and ``reviews`` records."""
    tally = CostTally()
    for it in iterations:
        tally.add(it)
    for rnd in reviews:
        tally.add_review(rnd)
    return tally.summary()


def record_summary(record: Mapping[str, Any]) -> CostSummary:
    """The cost summary of a run record: its iterations and its review rounds."""
    its, reviews = record.get("iterations"), record.get("reviews")
    return summarize(
        its if isinstance(its, list) else [], reviews if isinstance(reviews, list) else []
    )


def _verification_passed(checks: Any) -> bool | None:
    """Whether an iteration's verification passed (every command exited 0); None when none
    ran after it."""
    if not isinstance(checks, list) or not checks:
        return None
    return all(isinstance(c, Mapping) and c.get("exitCode") == 0 for c in checks)
