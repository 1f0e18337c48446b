"""What a review round decides, as pure functions (SPEC §13 "Review").

A round's verdict is ``approved`` (it appended nothing and did nothing else), ``rejected`` (it
appended unchecked tasks, and only that), ``refused`` (its edit, or a write elsewhere, was undone)
or ``failed`` (the reviewer did not end well: it exited non-zero, timed out or was stopped).
A run succeeds only on an approval; after ``maxRounds`` rounds that did not approve it ends
``exhausted``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Verdict = Literal["approved", "rejected", "refused", "failed"]


@dataclass(frozen=True)
class RoundRecord:
    """One round in the run's record and events."""

    round: int
    reviewer: str  # the preset, or the command's program
    model: str | None
    verdict: Verdict
    tasks_added: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()
    cost_usd: float | None = None
    exit_code: int | None = None
    started_at: str = ""
    ended_at: str = ""
    detail: str = ""  # why a round failed

    def to_json(self) -> dict[str, object]:
        return {
            "round": self.round,
            "reviewer": self.reviewer,
            "model": self.model,
            "verdict": self.verdict,
            "tasksAdded": list(self.tasks_added),
            "refusals": list(self.refusals),
            "costUsd": self.cost_usd,
            "exitCode": self.exit_code,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            **({"detail": self.detail} if self.detail else {}),
        }


def verdict_of(added: tuple[str, ...], refusals: tuple[str, ...], failure: str | None) -> Verdict:
    """A refusal wins over everything (its edit was undone), then a failure, then tasks."""
    if refusals:
        return "refused"
    if failure is not None:
        return "failed"
    return "rejected" if added else "approved"


def items(n: int) -> str:
    return f"{n} unmet item" if n == 1 else f"{n} unmet items"


def rounds_text(n: int) -> str:
    return f"{n} round" if n == 1 else f"{n} rounds"


@dataclass(frozen=True)
class Next:
    """What the run does after a round: ``end`` (a final reason, succeeded or exhausted), or
    go on (``work``: tasks were added for the loop; else review again at once)."""

    succeeded: bool = False
    exhausted: str | None = None
    work: bool = False
    said: list[str] = field(default_factory=list)


def after_round(record: RoundRecord, max_rounds: int) -> Next:
    """The run's next step after round ``record.round`` of at most ``max_rounds``."""
    if record.verdict == "approved":
        return Next(succeeded=True)
    if record.round >= max_rounds:
        if record.verdict == "rejected":
            why = f"review still finds {items(len(record.tasks_added))}"
        elif record.verdict == "refused":
            why = f"the reviewer's edit was refused ({record.refusals[0]})"
        else:
            why = f"the reviewer did not finish ({record.detail})"
        return Next(exhausted=f"{why} after {rounds_text(record.round)}")
    return Next(work=record.verdict == "rejected")
