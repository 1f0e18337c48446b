"""Property tests: no parser raises on any input, and every LogLine is clean and bounded.

Both the public ``feed`` (which has a last-resort guard) and the unguarded internals are
exercised, so the guard is not what makes these pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralph_lsp.agents import PRESETS, make_parser
from ralph_lsp.agents.base import MAX_LINE_CHARS, AgentEvent, AgentProblem, LogLine, ResultInfo
from ralph_lsp.agents.claude import ClaudeParser
from ralph_lsp.agents.codex import CodexParser
from ralph_lsp.agents.gemini import GeminiParser

PARSED_AGENTS = list(PRESETS)
_BAD_CHARS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\x1b\ud800-\udfff]")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
# Values likely to be wrong for any field: wrong types, odd numbers, control characters.
weird = st.one_of(
    json_values,
    st.sampled_from(
        [5, -1, 0, 1e308, True, "", "\x1b[31m", "429", "Not logged in", [], {}, [{"type": 5}]]
    ),
)
TYPES = [
    "system",
    "assistant",
    "user",
    "result",
    "stream_event",
    "thread.started",
    "turn.started",
    "item.started",
    "item.updated",
    "item.completed",
    "turn.completed",
    "turn.failed",
    "error",
    "init",
    "message",
    "tool_use",
    "tool_result",
    "unknown",
]
KEYS = [
    "subtype",
    "message",
    "content",
    "error",
    "is_error",
    "result",
    "num_turns",
    "duration_ms",
    "total_cost_usd",
    "usage",
    "errors",
    "permission_denials",
    "api_error_status",
    "attempt",
    "max_retries",
    "retry_delay_ms",
    "error_status",
    "cwd",
    "model",
    "item",
    "role",
    "delta",
    "tool_name",
    "tool_id",
    "parameters",
    "status",
    "stats",
    "severity",
    "output",
    "text",
    "command",
    "exit_code",
    "changes",
    "id",
    "name",
    "input",
    "type",
]
block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "x"])},
    optional={
        k: weird for k in ["text", "name", "id", "input", "content", "is_error", "tool_use_id"]
    },
)
shaped = st.builds(
    lambda t, fields, msg: {"type": t, **fields, **({"message": msg} if msg is not None else {})},
    st.sampled_from(TYPES),
    st.dictionaries(st.sampled_from(KEYS), weird, max_size=6),
    st.one_of(
        st.none(),
        weird,
        st.fixed_dictionaries(
            {}, optional={"content": st.lists(block, max_size=3) | weird, "model": weird}
        ),
    ),
)


def check_events(events: list[AgentEvent]) -> None:
    assert isinstance(events, list)
    for ev in events:
        if isinstance(ev, LogLine):
            assert isinstance(ev.text, str)
            assert not _BAD_CHARS.search(ev.text), repr(ev.text)
            assert len(ev.text) <= MAX_LINE_CHARS + 60
        elif isinstance(ev, AgentProblem):
            assert ev.kind in ("auth", "rate_limit", "fatal") and isinstance(ev.message, str)
            assert ev.retry_at is None or isinstance(ev.retry_at, float)
        elif isinstance(ev, ResultInfo):
            assert isinstance(ev.is_error, bool)
            assert ev.num_turns is None or isinstance(ev.num_turns, int)
            assert ev.cost_usd is None or isinstance(ev.cost_usd, float)
            assert ev.usage is None or isinstance(ev.usage, dict)


def feed_all(agent: str, lines: list[tuple[str, str]], code: int | None) -> None:
    parser = make_parser(agent)
    for stream, line in lines:
        check_events(parser.feed(stream, line))  # type: ignore[arg-type]
    check_events(parser.finish(code))


lines_strategy = st.lists(
    st.tuples(st.sampled_from(["stdout", "stderr"]), st.text(max_size=200)), max_size=8
)
codes = st.one_of(st.none(), st.integers(min_value=-300, max_value=300))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(lines=lines_strategy, code=codes)
def test_arbitrary_text(lines: list[tuple[str, str]], code: int | None) -> None:
    for agent in PARSED_AGENTS:
        feed_all(agent, lines, code)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(json_values, max_size=5), code=codes)
def test_arbitrary_json_values(values: list[Any], code: int | None) -> None:
    lines = [("stdout", json.dumps(v)) for v in values]
    for agent in PARSED_AGENTS:
        feed_all(agent, lines, code)


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(objs=st.lists(shaped, min_size=1, max_size=6), code=codes)
def test_schema_shaped_objects_with_wrong_types(
    objs: list[dict[str, Any]], code: int | None
) -> None:
    lines = [("stdout", json.dumps(o)) for o in objs]
    for agent in PARSED_AGENTS:
        feed_all(agent, lines, code)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(objs=st.lists(shaped, min_size=1, max_size=6), text=st.text(max_size=100))
def test_unguarded_internals(objs: list[dict[str, Any]], text: str) -> None:
    """The parsing code itself copes, without the last-resort guard in ``feed``."""
    internals: list[tuple[Callable[[str], list[AgentEvent]], Callable[[str], list[AgentEvent]]]]
    claude, codex, gemini = ClaudeParser(), CodexParser(), GeminiParser()
    internals = [
        (claude.feed_stdout, claude.feed_stderr),
        (codex.feed_stdout, codex.feed_stderr),
        (gemini.feed_stdout, gemini.feed_stderr),
    ]
    for out, err in internals:
        for o in objs:
            check_events(out(json.dumps(o)))
        check_events(out(text))
        check_events(err(text))
    for o in objs:
        check_events(claude.handle(o))


def test_specific_nasty_inputs() -> None:
    nasty = [
        '{"type": "result", "message": 5}',
        '{"type": "assistant", "message": 5}',
        '{"type": "assistant", "message": {"content": "not a list"}}',
        '{"type": "assistant", "message": {"content": [5, null, "x", {"type": 7}]}}',
        '{"type": "result", "num_turns": 1e999}',
        '{"type": "result", "total_cost_usd": NaN, "duration_ms": Infinity}',
        '{"type": "result", "num_turns": ' + "9" * 5000 + "}",
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' * 50_000 + "1" + "}" * 50_000,
        "{" + "\x00" * 10 + "}",
        "\ufffd" * 100_000,
        "\x1b[" * 10_000,
        '{"type": "system", "subtype": "api_retry", "attempt": "2", "retry_delay_ms": 1e400}',
        '{"type": "item.completed",'
        ' "item": {"type": "command_execution", "command": "\'unclosed"}}',
        '{"type": "item.completed", "item": {"type": "file_change", "changes": [1, {"path": 5}]}}',
        '{"type": "message", "role": "assistant", "delta": true, "content": "'
        + "z" * 40_000
        + '"}',
    ]
    for agent in PARSED_AGENTS:
        for stream in ("stdout", "stderr"):
            feed_all(agent, [(stream, line) for line in nasty], 1)


def test_the_guard_shows_a_line_its_parser_failed_on_as_it_came(monkeypatch: Any) -> None:
    """What the last-resort guard gives when a parser's own code does raise: the line itself,
    cleaned, as stderr or raw output by the stream it came on, for every preset's parser."""

    def broken(self: object, *args: object) -> list[AgentEvent]:
        raise RuntimeError("parser bug")

    for cls in (ClaudeParser, CodexParser, GeminiParser):
        monkeypatch.setattr(cls, "feed_stdout", broken)
        monkeypatch.setattr(cls, "feed_stderr", broken)
    for agent in PRESETS:
        parser = make_parser(agent)
        assert parser.feed("stdout", "out\x1b[31m line") == [LogLine("out line", "raw")], agent
        assert parser.feed("stderr", "err line") == [LogLine("err line", "stderr")], agent
        assert parser.finish(0) == [], agent
