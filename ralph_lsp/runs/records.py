"""What a run writes in its record (SPEC §3 "History"): the record's types, field by field.

``history.RunHistory`` saves a record of these types as ``record.json``; ``reporting`` fills it.
Records read back stay plain dicts (``record_schema`` fits them to these types), since a record
on disk may come from an older version or be damaged.
"""

from __future__ import annotations

from typing import Any, TypedDict

from ralph_lsp.runs.receipts import ReceiptRecord


class RefusalRecord(TypedDict):
    """A refused tool call in an iteration's history (``refusals``): the agent's own
    permissions' (``agents.base.Refusal``) or the sandbox's."""

    tool: str
    input: str
    rule: str


class VerificationRecord(TypedDict):
    """One verification command's result in an iteration's history (SPEC §3)."""

    command: str
    exitCode: int | None
    durationMs: int
    outputTail: str


class TransitionRecord(TypedDict):
    state: str
    at: str
    reason: str | None


class SpawnRecord(ReceiptRecord):
    """What every spawn of the agent records, counted or not."""

    startedAt: str
    endedAt: str
    exitCode: int | None
    costUsd: float | None
    costEstimated: bool  # costUsd is an estimate from the tokens at a list price
    numTurns: int | None
    verification: list[VerificationRecord] | None  # None: it did not run after this spawn
    conformance: dict[str, Any] | None  # the conformance table after it (SPEC §13)
    refusals: list[RefusalRecord]


class IterationRecord(SpawnRecord):
    """A counted iteration; ``checkpoint`` and ``filesChanged`` are null outside git (§8)."""

    n: int
    tasksChecked: int
    checkpoint: str | None
    filesChanged: list[str] | None


class RateLimitedRecord(SpawnRecord):
    """A spawn that did not count (rate limited): it has no number of its own."""

    beforeIteration: int


class GuidanceRecord(TypedDict):
    text: str
    at: str
    deliveredIn: int | None


class BlockedRecord(TypedDict):
    id: str | None
    line: int  # 1-based
    text: str
    reason: str


class OwnerRecord(TypedDict):
    pid: int
    startedAt: str | None


class RunRecord(TypedDict):
    runId: str
    change: str
    root: str
    startedAt: str
    endedAt: str | None
    state: str
    reason: str | None
    owner: OwnerRecord
    transitions: list[TransitionRecord]
    iterations: list[IterationRecord]
    rateLimited: list[RateLimitedRecord]
    rawOutputDropped: list[int]  # iterations whose raw output was removed for the run's cap
    worktree: dict[str, Any] | None
    sandbox: dict[str, Any] | None  # what the run's sandbox granted (SPEC §10); None: off
    guidance: list[GuidanceRecord]
    story: str | None
    blocked: list[BlockedRecord]
    progress: dict[str, int]  # completed, total, maxIterations as the run last saw them
    conformance: dict[str, Any] | None  # the last verification's table (SPEC §13)
    costs: dict[str, Any]  # SPEC §15: total, per verified task, without progress (receipts)
