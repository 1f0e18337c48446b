"""The states of a run (SPEC §3), on their own: what the CLI's exit codes, the client's mirror
and the history read, importable without the rest of the loop (``ralph-lsp changes`` stays
fast)."""

from __future__ import annotations

from enum import Enum

__all__ = ["PLAN_KIND", "RunState"]

#: The ``kind`` of a planning run's status and record (SPEC §14); any other run's is "run".
PLAN_KIND = "plan"


class RunState(str, Enum):
    """The state of a run; its value is the word clients and the history see."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    STUCK = "stuck"
    EXHAUSTED = "exhausted"
    FAILED = "failed"
    STOPPED = "stopped"
    # A planning run's change passed the gate (SPEC §14): it waits for a person's approval.
    PLANNED = "planned"
    # The runner hosting the run died without ending it (SIGKILL, a reboot): set by whoever
    # next finds it gone (SPEC §9).
    INTERRUPTED = "interrupted"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def final(self) -> bool:
        return self is not RunState.RUNNING
