"""Submitting a Ray job: a head whose job agent has not registered yet ("No available agent to
submit job", seen on a freshly started cluster) is asked again for a while; any other refusal
is said at once, naming Ray's reason."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ralph_lsp.remote import ray_runs
from ralph_lsp.runs.status import EngineError


class Head:
    """Answers ``submit_job`` with the given outcomes in turn (an exception is raised)."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[dict[str, Any]] = []

    def submit_job(self, **submit: Any) -> str:
        self.calls.append(submit)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return str(outcome)


def test_a_head_not_ready_yet_is_asked_again_until_it_takes_the_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ray_runs, "SUBMIT_PATIENCE_SECONDS", 5.0)
    not_ready = RuntimeError(f"{ray_runs.NOT_READY}, please try again later.")
    head = Head(not_ready, not_ready, "raysubmit_1")
    job = asyncio.run(ray_runs.submit_job(head, {"entrypoint": "true"}))
    assert job == "raysubmit_1"
    assert len(head.calls) == 3 and all(c == {"entrypoint": "true"} for c in head.calls)


def test_any_other_refusal_is_said_at_once() -> None:
    head = Head(RuntimeError("Job with submission_id ralph-r-1 already exists"), "never")
    with pytest.raises(EngineError, match="Ray refused the job: Job with submission_id"):
        asyncio.run(ray_runs.submit_job(head, {"entrypoint": "true"}))
    assert len(head.calls) == 1


def test_a_head_that_never_gets_ready_is_given_up_on_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ray_runs, "SUBMIT_PATIENCE_SECONDS", 1.0)
    head = Head(*[RuntimeError(ray_runs.NOT_READY)] * 10)
    with pytest.raises(EngineError, match=ray_runs.NOT_READY):
        asyncio.run(ray_runs.submit_job(head, {"entrypoint": "true"}))
    assert 1 < len(head.calls) < 10
