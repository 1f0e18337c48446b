"""The flood path: a read's lines go through the parser at once and reach renderers whole, in
order, with the raw output kept; the batch parse means what the line-by-line parse means."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ralph_lsp.agents.base import AgentEvent, LogLine, LogLines, Stream, feed_lines
from ralph_lsp.agents.claude import ClaudeParser
from ralph_lsp.agents.plain import PlainParser
from ralph_lsp.loop.engine import Engine, EngineEvent, LogEvent
from ralph_lsp.runs.history import history_root
from ralph_lsp.settings import Settings
from tests.engine.conftest import CHANGE


def expand(events: list[AgentEvent]) -> list[AgentEvent]:
    """``LogLines`` as the ``LogLine`` s it stands for."""
    out: list[AgentEvent] = []
    for ev in events:
        if isinstance(ev, LogLines):
            out.extend(LogLine(text, ev.kind) for text in ev.texts)
        else:
            out.append(ev)
    return out


CLAUDE_LINES = [
    json.dumps({"type": "system", "subtype": "init", "session_id": "s", "model": "m"}),
    json.dumps(
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Checking the task\nnow"},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                ]
            },
        }
    ),
    json.dumps(
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
        }
    ),
    json.dumps({"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": 0.5}),
    '  {"type": "result", "is_error": true, "result": "Invalid API key"}  ',
]
ODD_LINES = [
    "",
    " ",
    "   \t ",
    "plain text",
    "trailing space   ",
    "  leading space",
    "{not json}",
    '{"type": "other"}',
    "[1, 2, 3]",
    "\ufeff" + CLAUDE_LINES[0],
    "\x1b[31mred\x1b[0m text",
    "tab\tinside",
    "carriage\rreturn",
    "bell\x07",
    "wide ✓ ünïcode ↗",
    "bidi \u202e override",
    "line\u2028separator",
    "x" * 5000,
    "y" * 3999 + " ",
    "lone \ud800 surrogate",
    "}",
    "{",
]
lines_strategy = st.lists(
    st.one_of(
        st.sampled_from(CLAUDE_LINES + ODD_LINES),
        st.text(max_size=40),
        st.text(alphabet="ab {}\t\x1b[m", max_size=12),
        st.from_regex(r"flood-line [0-9]{1,6} of an agent", fullmatch=True),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(lines_strategy, max_size=6), stream=st.sampled_from(["stdout", "stderr"]))
def test_plain_batches_mean_what_single_lines_mean(
    batches: list[list[str]], stream: Stream
) -> None:
    one, many = PlainParser("/w"), PlainParser("/w")
    expected: list[AgentEvent] = []
    got: list[AgentEvent] = []
    for batch in batches:
        for line in batch:
            expected.extend(one.feed(stream, line))
        got.extend(feed_lines(many, stream, batch))
    assert expand(got) == expected
    assert many.finish(0) == one.finish(0)


def test_a_plain_flood_is_one_event_per_read() -> None:
    lines = [f"flood-line {i} of an agent printing as fast as it can" for i in range(1000)]
    events = PlainParser().feed_many("stdout", lines)
    assert events == [LogLines(tuple(lines), "raw")]
    mixed = [*lines[:3], "", "\x1b[1mbold\x1b[0m", CLAUDE_LINES[3], *lines[3:6]]
    events = PlainParser().feed_many("stdout", mixed)
    assert events[0] == LogLines(tuple(lines[:3]), "raw")
    assert events[1] == LogLine("bold", "raw")
    assert events[-1] == LogLines(tuple(lines[3:6]), "raw")


def test_parsers_without_feed_many_are_fed_line_by_line() -> None:
    one, many = ClaudeParser("/w"), ClaudeParser("/w")
    expected = [ev for line in CLAUDE_LINES + ODD_LINES for ev in one.feed("stdout", line)]
    assert not hasattr(many, "feed_many")
    assert feed_lines(many, "stdout", CLAUDE_LINES + ODD_LINES) == expected


def flood_agent(lines: int) -> list[str]:
    code = (
        "import sys\n"
        "n = int(sys.argv[1])\n"
        "sys.stdout.writelines('line %d of the flood\\n' % i for i in range(n))\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('the end on stderr\\n')\n"
    )
    return [sys.executable, "-c", code, str(lines)]


async def test_a_flood_reaches_the_renderer_whole_in_order_with_the_raw_log(project: Path) -> None:
    events: list[EngineEvent] = []
    engine = Engine(events.append)
    n = 100_000
    settings = dataclasses.replace(
        Settings(), agent="custom", agent_command=tuple(flood_agent(n)), max_iterations=1
    )
    await engine.start(project, CHANGE, settings)
    status = await asyncio.wait_for(engine.wait(project, CHANGE), 60)
    assert status.state == "exhausted"
    logs = [e for e in events if isinstance(e, LogEvent)]
    agent = [line for e in logs if e.level == "info" for line in e.text.split("\n")]
    flood = [line for line in agent if line.startswith("line ")]
    assert flood == [f"line {i} of the flood" for i in range(n)]
    assert next(e.text for e in logs if e.level == "warning") == "the end on stderr"
    # Events stay bounded: the batch limits plus at most one read's lines.
    assert max(len(e.text) for e in logs) < 8_000 + 64 * 1024 + 4_100
    folder = history_root(project) / "runs" / status.run_id
    record = json.loads((folder / "record.json").read_text())
    assert record["iterations"][0]["exitCode"] == 0
    raw = (folder / "iteration-1.log").read_text()
    assert raw.count("\n") == n + 1 and raw.endswith("the end on stderr\n")
