"""The `claude` preset's output parser, fed what the real CLI printed (tests/fixtures/claude_real/).

No CLI needed: these run from the recordings alone.
"""

from __future__ import annotations

import json

import pytest

from ralph_lsp.agents import Activity, AgentEvent, AgentProblem, LogLine, ResultInfo, make_parser

from .harness import FIXTURES, PROJECT_PLACEHOLDER, SCENARIOS


def _parse(name: str) -> list[AgentEvent]:
    parser = make_parser("claude", PROJECT_PLACEHOLDER)
    events: list[AgentEvent] = []
    for line in (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        events += parser.feed("stdout", line)
    for line in (FIXTURES / f"{name}.stderr").read_text(encoding="utf-8").splitlines():
        events += parser.feed("stderr", line)
    rc = int((FIXTURES / f"{name}.rc").read_text(encoding="utf-8").strip())
    return events + parser.finish(rc)


def _of(events: list[AgentEvent], cls: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, cls)]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_no_raw_json_and_one_result(name: str) -> None:
    events = _parse(name)
    lines = _of(events, LogLine)
    assert not [ln for ln in lines if ln.kind == "raw"], "a real stream-json line was not parsed"
    assert len(_of(events, ResultInfo)) == 1


def test_success_is_read_fully() -> None:
    events = _parse("normal")
    (result,) = _of(events, ResultInfo)
    assert result.is_error is False
    assert result.num_turns == 3
    assert result.cost_usd is not None and result.cost_usd > 0
    assert isinstance(result.duration_ms, int)
    assert result.usage is not None and result.usage["output_tokens"] > 0
    assert result.text == "Done."
    assert _of(events, AgentProblem) == []
    assert len(_of(events, Activity)) == 2
    texts = [(ln.kind, ln.text) for ln in _of(events, LogLine)]
    assert ("text", "I'll read the task list first.") in texts
    assert ("tool", "→ Read openspec/changes/demo/tasks.md") in texts
    assert ("tool", "→ Edit openspec/changes/demo/tasks.md") in texts
    assert ("text", "Done.") in texts
    summaries = [t for k, t in texts if k == "summary"]
    assert len(summaries) == 1 and "3 turns" in summaries[0] and "$" in summaries[0]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("rate_limit", "rate_limit"),
        ("overloaded", "rate_limit"),
        ("auth", "auth"),
        ("auth_retry", "auth"),
        ("no_credentials", "auth"),
    ],
)
def test_service_errors_are_classified(name: str, kind: str) -> None:
    events = _parse(name)
    problems = _of(events, AgentProblem)
    assert [p.kind for p in problems] == [kind]
    (result,) = _of(events, ResultInfo)
    assert result.is_error is True
    assert _of(events, Activity) == []


@pytest.mark.parametrize("name", ["rate_limit_retry", "overloaded_retry"])
def test_a_retry_the_cli_recovers_from_is_no_problem(name: str) -> None:
    events = _parse(name)
    assert _of(events, AgentProblem) == []
    (result,) = _of(events, ResultInfo)
    assert result.is_error is False
    assert any("retry" in ln.text.lower() for ln in _of(events, LogLine))


def test_result_event_does_not_start_with_its_type() -> None:
    """The real CLI (2.1.330) writes the result's keys in no fixed order: `type` is not first.
    (A reader that looks for a `{"type":"result"` prefix would miss it.)"""
    line = (FIXTURES / "normal.jsonl").read_text(encoding="utf-8").splitlines()[-1]
    assert json.loads(line)["type"] == "result"
    assert not line.startswith('{"type"')
