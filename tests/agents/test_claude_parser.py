"""The Claude Code stream-json parser against real recorded outputs and the schema's samples."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ralph_lsp.agents.base import Activity, AgentEvent, LogLine, Refusal, ResultInfo
from ralph_lsp.agents.claude import ClaudeParser

from .helpers import (
    CLAUDE_REAL,
    activity_count,
    lines_of,
    logs,
    problems,
    results,
    run_parser,
    shared_file,
)


def feed_objects(
    objs: list[dict[str, Any]], parser: ClaudeParser | None = None
) -> list[AgentEvent]:
    p = parser or ClaudeParser()
    return run_parser(p, stdout=[json.dumps(o) for o in objs], exit_code=1)


def synthetic_error(text: str, error: str | None, status: int | None) -> list[dict[str, Any]]:
    """The three events the real CLI prints for a service error (notes: real-claude-offline)."""
    assistant: dict[str, Any] = {
        "type": "assistant",
        "message": {
            "model": "<synthetic>",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
        },
    }
    if error is not None:
        assistant["error"] = error
    return [
        {"type": "system", "subtype": "init", "cwd": "/p", "model": "m"},
        assistant,
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "api_error_status": status,
            "result": text,
            "num_turns": 1,
            "duration_ms": 120,
            "total_cost_usd": 0,
        },
    ]


# --- recorded real outputs (shared/fixtures/recorded) -----------------------------------


def test_not_logged_in_gives_exactly_one_auth_problem() -> None:
    events = run_parser(
        ClaudeParser(), stdout=lines_of(shared_file("recorded", "run1.stdout")), exit_code=1
    )
    found = problems(events)
    assert [p.kind for p in found] == ["auth"]
    assert "Not logged in" in found[0].message
    (result,) = results(events)
    assert result.is_error is True  # subtype says "success": judge by is_error
    assert result.num_turns == 1 and result.duration_ms == 133 and result.cost_usd == 0
    assert "Not logged in · Please run /login" in logs(events, "text")
    assert activity_count(events) == 0
    info = logs(events, "info")
    assert info and "claude-opus-4-8" in info[0] and len(info[0]) < 200


def test_unreachable_service_is_an_offline_notice_then_an_error_result() -> None:
    events = run_parser(
        ClaudeParser(),
        stdout=lines_of(shared_file("recorded", "run7_unreachable_full.stdout")),
        exit_code=1,
    )
    # retries with no HTTP answer: said once, from the second on (the first may be a blip),
    # and not as a failure (the engine shows it; Claude gives up by itself after ~3 minutes)
    (offline,) = problems(events)
    assert offline.kind == "offline"
    assert offline.message == "Claude Code gets no answer from its API (retry 2 of 10)"
    retries = [t for t in logs(events, "info") if t.startswith("API retry")]
    assert len(retries) == 10
    assert retries[0] == "API retry 1/10 in 0.6s: unknown"
    (result,) = results(events)
    assert (
        result.is_error and result.text == "API Error: Unable to connect to API (ConnectionRefused)"
    )
    (summary,) = logs(events, "summary")
    assert summary.startswith("iteration summary: 2m53s · 1 turn · $0.0000")
    assert "Unable to connect" in summary


@pytest.mark.parametrize(
    ("retries", "offline"),
    [
        ([(1, None)], False),  # one retry without an answer: a blip
        ([(1, 529), (2, 529), (3, 529)], False),  # the API answers (overloaded): not offline
        ([(1, None), (2, None), (3, None)], True),
    ],
)
def test_retries_without_an_http_answer_are_offline(
    retries: list[tuple[int, int | None]], offline: bool
) -> None:
    lines = [
        json.dumps(
            {
                "type": "system",
                "subtype": "api_retry",
                "attempt": attempt,
                "max_retries": 10,
                "retry_delay_ms": 500,
                "error_status": status,
                "error": "unknown" if status is None else "server_error",
            }
        )
        for attempt, status in retries
    ]
    kinds = [p.kind for p in problems(run_parser(ClaudeParser(), stdout=lines))]
    assert kinds == (["offline"] if offline else [])


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("bypass.stderr", "cannot be used with root/sudo privileges"),
        ("run2_noverbose.stderr", "requires --verbose"),
    ],
)
def test_refused_flags_on_stderr_are_shown_and_fatal(name: str, needle: str) -> None:
    lines = lines_of(shared_file("recorded", name))
    events = run_parser(ClaudeParser(), stderr=lines, exit_code=1)
    assert logs(events, "stderr") == lines  # stderr is never dropped
    (problem,) = problems(events)
    assert problem.kind == "fatal" and needle in problem.message


# --- schema-true samples (shared/fixtures/*.jsonl) -------------------------------------


def test_success_sample_lines_and_result() -> None:
    events = run_parser(ClaudeParser(), stdout=lines_of(shared_file("claude_stream_sample.jsonl")))
    assert problems(events) == []
    assert activity_count(events) == 4
    tool_lines = [e for e in events if isinstance(e, LogLine) and e.kind in ("tool", "command")]
    assert [(e.kind, e.text) for e in tool_lines] == [
        ("tool", "→ Read openspec/changes/add-discount-codes/tasks.md"),
        ("tool", "→ Edit shop/discounts.py"),
        ("command", "$ python -m pytest -q tests/test_discounts.py"),
        ("tool", "→ Edit openspec/changes/add-discount-codes/tasks.md"),
    ]
    assert logs(events, "text")[0] == "I'll start by reading the change's task list."
    (result,) = results(events)
    assert result == ResultInfo(
        is_error=False,
        cost_usd=0.187314,
        num_turns=5,
        usage=result.usage,
        duration_ms=38412,
        text=result.text,
        model="claude-opus-4-8",  # the result's modelUsage names it (SPEC §15 receipts)
    )
    assert result.usage is not None and result.usage["output_tokens"] == 420
    assert logs(events, "summary") == ["iteration summary: 38.4s · 5 turns · $0.1873"]
    # Each tool call's Activity comes right before its line.
    idx = next(i for i, e in enumerate(events) if isinstance(e, Activity))
    assert isinstance(events[idx + 1], LogLine)


def test_max_turns_sample_is_an_error_result_without_problem() -> None:
    events = run_parser(
        ClaudeParser(), stdout=lines_of(shared_file("claude_stream_sample_max_turns.jsonl"))
    )
    assert problems(events) == []
    (result,) = results(events)
    assert result.is_error and result.num_turns == 2 and result.cost_usd == 0.071002
    assert result.text == "Reached maximum number of turns (2)"
    assert "Reached maximum number of turns (2)" in logs(events, "info")
    assert logs(events, "summary") == [
        "iteration summary: 15.0s · 2 turns · $0.0710 · error_max_turns"
    ]


def test_partial_messages_are_ignored_and_text_shown_once() -> None:
    events = run_parser(
        ClaudeParser(), stdout=lines_of(shared_file("claude_stream_sample_partial.jsonl"))
    )
    assert logs(events, "text") == ["All 2 tasks are already complete."]
    assert len(results(events)) == 1 and problems(events) == []


# --- real CLI recorded offline in this repository (tests/fixtures/claude_real) ---------

REAL_EXPECTED: dict[str, tuple[list[str], bool | None, int]] = {
    # name: (problem kinds, result is_error, tool calls)
    "normal": ([], False, 2),
    "auth": (["auth"], True, 0),
    "auth_retry": (["auth"], True, 0),
    "rate_limit": (["rate_limit"], True, 0),
    "overloaded": (["rate_limit"], True, 0),
    "rate_limit_retry": ([], False, 2),
    "overloaded_retry": ([], False, 2),
}


@pytest.mark.parametrize("name", sorted(REAL_EXPECTED))
def test_real_recordings(name: str) -> None:
    stdout = CLAUDE_REAL / f"{name}.jsonl"
    if not stdout.is_file():
        pytest.skip(f"no real recording {stdout.name} in tests/fixtures/claude_real")
    stderr = CLAUDE_REAL / f"{name}.stderr"
    rc_file = CLAUDE_REAL / f"{name}.rc"
    rc = int(rc_file.read_text().strip()) if rc_file.is_file() else None
    events = run_parser(
        ClaudeParser(),
        stdout=lines_of(stdout),
        stderr=lines_of(stderr) if stderr.is_file() else [],
        exit_code=rc,
    )
    kinds, is_error, tools = REAL_EXPECTED[name]
    assert [p.kind for p in problems(events)] == kinds
    (result,) = results(events)
    assert result.is_error is is_error
    assert activity_count(events) == tools
    if name == "normal":
        assert "→ Edit openspec/changes/demo/tasks.md" in logs(events, "tool")
        assert logs(events, "summary")[0].startswith("iteration summary: 0.4s · 3 turns · $0.0022")


def test_every_real_recording_parses() -> None:
    files = sorted(CLAUDE_REAL.glob("*.jsonl")) if CLAUDE_REAL.is_dir() else []
    if not files:
        pytest.skip("no real recordings in tests/fixtures/claude_real")
    for path in files:
        events = run_parser(ClaudeParser(), stdout=lines_of(path))
        assert len(results(events)) == 1, path.name
        assert not logs(events, "raw"), path.name


# --- failure classification ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error", "status", "kind"),
    [
        ("API Error: Request rejected (429) · rate limited", "rate_limit", 429, "rate_limit"),
        (
            "API Error: 529 Overloaded. This is a server-side issue",
            "server_error",
            529,
            "rate_limit",
        ),
        ("Invalid API key · Fix external API key", "authentication_failed", 401, "auth"),
        ("Not logged in · Please run /login", "authentication_failed", None, "auth"),
        ("Credit balance is too low", "billing_error", 400, "fatal"),
    ],
)
def test_service_errors_from_the_notes_table(
    text: str, error: str, status: int | None, kind: str
) -> None:
    events = feed_objects(synthetic_error(text, error, status))
    assert [p.kind for p in problems(events)] == [kind]


def test_result_alone_classifies_by_status_and_text() -> None:
    # Without the assistant event (e.g. a CLI version that omits it) the result still tells.
    for status, text, kind in [
        (429, "API Error: Request rejected (429)", "rate_limit"),
        (401, "Invalid API key", "auth"),
        (None, "Invalid API key · Please run /login", "auth"),
        (529, "API Error: 529 Overloaded.", "rate_limit"),
    ]:
        events = feed_objects(synthetic_error(text, None, status)[2:])
        assert [p.kind for p in problems(events)] == [kind], text


def test_server_error_that_is_not_overload_is_no_problem() -> None:
    events = feed_objects(
        synthetic_error(
            "API Error: Unable to connect to API (ConnectionRefused)", "server_error", None
        )
    )
    assert problems(events) == []


def test_usage_limit_with_epoch_gives_retry_at() -> None:
    text = "Claude AI usage limit reached|4102444800"  # 2100-01-01, far enough ahead
    events = feed_objects(synthetic_error(text, None, None))
    found = problems(events)
    assert [p.kind for p in found] == ["rate_limit"]
    assert found[0].retry_at is None  # more than 31 days ahead: not believed


def test_usage_limit_epoch_near_future(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    soon = int(time.time()) + 3600
    # Not marked as an error at all (old CLIs): the bar form is still recognised.
    objs: list[dict[str, Any]] = [
        {
            "type": "assistant",
            "message": {
                "model": "claude",
                "content": [{"type": "text", "text": f"Claude AI usage limit reached|{soon}"}],
            },
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": f"Claude AI usage limit reached|{soon}",
        },
    ]
    found = problems(feed_objects(objs))
    assert [p.kind for p in found] == ["rate_limit"]
    assert found[0].retry_at == soon


def test_usage_limit_with_clock_and_zone() -> None:
    text = "You've hit your limit · resets 3pm (Europe/Paris)"
    found = problems(feed_objects(synthetic_error(text, None, None)))
    assert [p.kind for p in found] == ["rate_limit"]
    assert found[0].retry_at is not None


def test_usage_limit_text_without_time_has_no_retry_at() -> None:
    found = problems(
        feed_objects(synthetic_error("Claude usage limit reached.", "rate_limit", 429))
    )
    assert [(p.kind, p.retry_at) for p in found] == [("rate_limit", None)]


def test_the_agent_talking_about_limits_is_not_a_problem() -> None:
    objs: list[dict[str, Any]] = [
        {
            "type": "assistant",
            "message": {
                "model": "claude-x",
                "content": [
                    {
                        "type": "text",
                        "text": "I added a rate limit (429) handler;"
                        " the usage limit resets at 3pm.",
                    }
                ],
            },
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "Not logged in users now get a 401.",
        },
    ]
    assert problems(feed_objects(objs)) == []


def test_api_retry_line_and_early_auth() -> None:
    p = ClaudeParser()
    events = p.feed(
        "stdout",
        json.dumps(
            {
                "type": "system",
                "subtype": "api_retry",
                "attempt": 2,
                "max_retries": 10,
                "retry_delay_ms": 1200,
                "error_status": 429,
                "error": "rate_limit",
            }
        ),
    )
    assert logs(events) == ["API retry 2/10 in 1.2s: 429 rate_limit"] and problems(events) == []
    events = p.feed(
        "stdout",
        json.dumps(
            {
                "type": "system",
                "subtype": "api_retry",
                "attempt": 1,
                "max_retries": 10,
                "retry_delay_ms": 600,
                "error_status": 401,
                "error": "authentication_failed",
            }
        ),
    )
    assert [x.kind for x in problems(events)] == ["auth"]


def test_problems_are_not_repeated_but_a_later_reset_time_is_added() -> None:
    p = ClaudeParser()
    first = p.feed("stderr", "Claude usage limit reached.")
    second = p.feed("stderr", "Claude usage limit reached.")
    import time

    third = p.feed("stderr", f"Claude AI usage limit reached|{int(time.time()) + 600}")
    fourth = p.feed("stderr", f"Claude AI usage limit reached|{int(time.time()) + 900}")
    assert len(problems(first)) == 1 and problems(second) == []
    assert len(problems(third)) == 1 and problems(third)[0].retry_at is not None
    assert problems(fourth) == []


@pytest.mark.parametrize(
    "line",
    [
        "error: unknown option '--frobnicate'",
        "Error: Input must be provided either through stdin or as a prompt argument"
        " when using --print",
    ],
)
def test_other_startup_refusals_are_fatal(line: str) -> None:
    events = ClaudeParser().feed("stderr", line)
    assert logs(events, "stderr") == [line] and [x.kind for x in problems(events)] == ["fatal"]


def test_plain_stderr_is_shown_and_not_a_problem() -> None:
    events = ClaudeParser().feed("stderr", "\x1b[33mwarning\x1b[0m: something")
    assert events == [LogLine("warning: something", "stderr")]


# --- formatting ------------------------------------------------------------------------


def tool_use(name: str, inp: Any, tool_id: str = "t1") -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {"content": [{"type": "tool_use", "id": tool_id, "name": name, "input": inp}]},
    }


@pytest.mark.parametrize(
    ("name", "inp", "expected"),
    [
        (
            "Edit",
            {"file_path": "/w/p/openspec/changes/c/tasks.md"},
            ("tool", "→ Edit openspec/changes/c/tasks.md"),
        ),
        ("Write", {"file_path": "/elsewhere/x.py"}, ("tool", "→ Write /elsewhere/x.py")),
        ("Read", {"file_path": "/w/pother/x.py"}, ("tool", "→ Read /w/pother/x.py")),
        ("NotebookEdit", {"notebook_path": "/w/p/n.ipynb"}, ("tool", "→ NotebookEdit n.ipynb")),
        ("Bash", {"command": "pytest -q\necho done"}, ("command", "$ pytest -q …")),
        ("Grep", {"pattern": "def main", "path": "/w/p"}, ("tool", "→ Grep def main")),
        ("Glob", {"pattern": "**/*.py"}, ("tool", "→ Glob **/*.py")),
        ("TodoWrite", {"todos": []}, ("tool", "→ TodoWrite")),
        ("mcp__x__y", "not a dict", ("tool", "→ mcp__x__y")),
    ],
)
def test_tool_lines(name: str, inp: Any, expected: tuple[str, str]) -> None:
    p = ClaudeParser()
    p.feed("stdout", json.dumps({"type": "system", "subtype": "init", "cwd": "/w/p/"}))
    events = p.feed("stdout", json.dumps(tool_use(name, inp)))
    assert isinstance(events[0], Activity)
    line = events[1]
    assert isinstance(line, LogLine) and (line.kind, line.text) == expected


def test_failed_tool_result_is_a_short_line() -> None:
    p = ClaudeParser()
    p.feed("stdout", json.dumps(tool_use("Edit", {"file_path": "/x"}, "abc")))
    events = p.feed(
        "stdout",
        json.dumps(
            {
                "type": "user",
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "abc",
                            "is_error": True,
                            "content": "<tool_use_error>File has not been read yet."
                            " Read it first before writing to it.</tool_use_error>",
                        },
                        {"type": "tool_result", "tool_use_id": "zzz", "content": "fine"},
                    ]
                },
            }
        ),
    )
    assert logs(events) == [
        "✗ Edit: File has not been read yet. Read it first before writing to it."
    ]


def test_text_thinking_and_unknowns() -> None:
    p = ClaudeParser()
    events = p.feed(
        "stdout",
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {"type": "thinking", "thinking": "secret musings"},
                        {"type": "text", "text": "line one\n\nline two"},
                        {"type": "image"},
                    ]
                },
            }
        ),
    )
    assert events == [LogLine("line one", "text"), LogLine("line two", "text")]
    assert p.feed("stdout", json.dumps({"type": "brand_new", "x": 1})) == []
    assert p.feed("stdout", json.dumps({"type": "system", "subtype": "compact_boundary"})) == []
    assert p.feed("stdout", "") == []
    assert p.feed("stdout", "plain words") == [LogLine("plain words", "raw")]
    assert p.feed("stdout", "[1, 2]") == [LogLine("[1, 2]", "raw")]
    assert p.feed("stdout", '\ufeff{"type": "user"}') == []
    assert p.feed("stdout", '{"broken": ') == [LogLine('{"broken":', "raw")]


def test_permission_denials_are_refusals_with_what_was_asked() -> None:
    events = feed_objects(
        [
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "num_turns": 2,
                "permission_denials": [
                    {
                        "tool_name": "Bash",
                        "tool_use_id": "t1",
                        "tool_input": {"command": "make build"},
                    },
                    {
                        "tool_name": "Edit",
                        "tool_use_id": "t2",
                        "tool_input": {"file_path": "/p/a.py"},
                    },
                    {"tool_name": "WebFetch"},
                ],
            }
        ]
    )
    refusals = [e for e in events if isinstance(e, Refusal)]
    assert refusals == [
        Refusal("Bash", "make build"),
        Refusal("Edit", "/p/a.py"),
        Refusal("WebFetch"),
    ]
    assert [r.rule for r in refusals] == ["Bash(make build)", "Edit(/p/a.py)", "WebFetch"]


def test_a_refused_tool_result_is_one_refusal_not_two() -> None:
    # Headless Claude Code answers a refused call with an error tool result, then lists it again
    # in the result's permission_denials: one refusal.
    use = {"type": "tool_use", "id": "t9", "name": "Bash", "input": {"command": "make test"}}
    refused = {
        "type": "tool_result",
        "tool_use_id": "t9",
        "is_error": True,
        "content": "Claude requested permissions to use Bash, but you haven't granted it yet.",
    }
    events = feed_objects(
        [
            {"type": "assistant", "message": {"content": [use]}},
            {"type": "user", "message": {"content": [refused]}},
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "permission_denials": [
                    {
                        "tool_name": "Bash",
                        "tool_use_id": "t9",
                        "tool_input": {"command": "make test"},
                    }
                ],
            },
        ]
    )
    assert [e for e in events if isinstance(e, Refusal)] == [Refusal("Bash", "make test")]


def test_a_refused_tool_result_counts_even_without_a_result() -> None:
    # Claude Code 2.1 (seen with the real CLI offline) words it "This command requires approval".
    use = {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "rm -rf build"}}
    refused = {
        "type": "tool_result",
        "tool_use_id": "t3",
        "is_error": True,
        "content": "This command requires approval",
    }
    events = feed_objects(
        [
            {"type": "assistant", "message": {"content": [use]}},
            {"type": "user", "message": {"content": [refused]}},
        ]
    )
    assert [e for e in events if isinstance(e, Refusal)] == [Refusal("Bash", "rm -rf build")]


def test_result_with_wrong_types_still_gives_a_result() -> None:
    events = feed_objects(
        [
            {
                "type": "result",
                "is_error": "yes",
                "subtype": 5,
                "total_cost_usd": "0.1",
                "num_turns": True,
                "duration_ms": 12.7,
                "usage": [1],
            }
        ]
    )
    (result,) = results(events)
    assert result == ResultInfo(
        is_error=False, cost_usd=None, num_turns=None, usage=None, duration_ms=13, text=None
    )


def test_the_demo_agent_init_line() -> None:
    events = ClaudeParser().feed(
        "stdout",
        json.dumps(
            {
                "type": "system",
                "subtype": "init",
                "cwd": "/w",
                "model": "ralph-demo-agent (not an AI)",
            }
        ),
    )
    assert logs(events) == ["agent started: model ralph-demo-agent (not an AI), cwd /w"]
