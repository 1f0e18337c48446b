"""The Codex, Gemini and custom (plain) parsers."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.agents.base import Activity, LogLine, Refusal
from ralph_lsp.agents.codex import CodexParser
from ralph_lsp.agents.gemini import GeminiParser
from ralph_lsp.agents.plain import PlainParser

from .helpers import activity_count, lines_of, logs, problems, results, run_parser, shared_file


def jl(*objs: dict[str, Any]) -> list[str]:
    return [json.dumps(o) for o in objs]


# --- Codex -----------------------------------------------------------------------------


def test_codex_recorded_unreachable_run() -> None:
    events = run_parser(
        CodexParser(),
        stdout=lines_of(shared_file("recorded", "codex_json.stdout")),
        stderr=lines_of(shared_file("recorded", "codex_json.stderr")),
        exit_code=None,  # it waits for the network forever: the engine times it out
    )
    # Codex gives up its quick retries, then waits for the network as long as it takes: said
    # once (a transient reconnect is no problem), never as a failure of the agent
    (offline,) = problems(events)
    assert offline.kind == "offline"
    assert offline.message == (
        "Reconnecting... waiting for network (Connection failed: error sending request)"
    )
    assert results(events) == []
    info = logs(events, "info")
    assert info[0] == "Codex session started"
    assert sum(t.startswith("Reconnecting...") for t in info) == 6
    assert any(t.startswith("Falling back from WebSockets") for t in info)
    assert len(logs(events, "stderr")) == 9  # every stderr line is shown


def test_codex_behind_the_sandboxs_proxy_a_dead_server_is_unreachable() -> None:
    # Inside ralph's sandbox the egress proxy answers for a server that is not there (SPEC §10).
    said = (
        "unexpected status 502 Bad Gateway: ralph-lsp proxy: cannot reach 127.0.0.1:42885:"
        " [Errno 111] Connect call failed ('127.0.0.1', 42885)"
    )
    stdout = jl({"type": "turn.failed", "error": {"message": said}})
    (problem,) = problems(run_parser(CodexParser(), stdout=stdout, stderr=[], exit_code=1))
    assert problem.kind == "fatal" and problem.message.startswith("cannot reach the model API")


def test_codex_recorded_outside_a_git_repository_is_fatal_with_the_way_out() -> None:
    stderr = lines_of(Path(__file__).resolve().parents[1] / "fixtures/codex_real/not_a_repo.stderr")
    events = run_parser(CodexParser(), stdout=[], stderr=stderr, exit_code=1)
    assert logs(events, "stderr") == stderr
    (problem,) = problems(events)
    assert problem.kind == "fatal"
    assert "git repository" in problem.message and "git init" in problem.message
    assert "--skip-git-repo-check" in problem.message and "ralph.agentCommand" in problem.message


def test_codex_recorded_sandbox_and_approval_refusals() -> None:
    """Real codex 0.169 output (workspace-write): a command the sandbox stops (stdout JSON, the
    command's own "Read-only file system"), a patch outside the project and an escalation the
    approval policy rejects (stderr only: Codex emits no JSON event for those two)."""
    folder = Path(__file__).resolve().parents[1] / "fixtures/codex_real"
    events = run_parser(
        CodexParser(),
        stdout=lines_of(folder / "refusals.stdout"),
        stderr=lines_of(folder / "refusals.stderr"),
        exit_code=0,
    )
    refused = [e for e in events if isinstance(e, Refusal)]
    assert [r.to_json() for r in refused] == [
        {"tool": "Edit", "input": "", "rule": "Edit"},  # stderr is fed first here
        {"tool": "Bash", "input": "", "rule": "Bash"},
        {"tool": "Bash", "input": "echo x > /opt/ralph-probe.txt",
         "rule": "Bash(echo x > /opt/ralph-probe.txt)"},
    ]  # fmt: skip
    assert problems(events) == []  # a refusal is no failure of the agent


def test_codex_ordinary_failed_command_is_no_refusal() -> None:
    item = {
        "id": "i",
        "type": "command_execution",
        "command": "/bin/bash -lc 'make test'",
        "aggregated_output": "make: *** [test] Error 2\n",
        "exit_code": 2,
        "status": "failed",
    }
    events = run_parser(CodexParser(), stdout=jl({"type": "item.completed", "item": item}))
    assert not any(isinstance(e, Refusal) for e in events)


def test_codex_successful_turn() -> None:
    events = run_parser(
        CodexParser(cwd="/w/p"),
        stdout=jl(
            {"type": "thread.started", "thread_id": "t"},
            {"type": "turn.started"},
            {"type": "item.completed", "item": {"id": "i0", "type": "reasoning", "text": "hmm"}},
            {
                "type": "item.started",
                "item": {
                    "id": "i1",
                    "type": "command_execution",
                    "command": "bash -lc 'pytest -q'",
                    "status": "in_progress",
                },
            },
            {
                "type": "item.completed",
                "item": {
                    "id": "i1",
                    "type": "command_execution",
                    "command": "bash -lc 'pytest -q'",
                    "aggregated_output": "1 failed",
                    "exit_code": 1,
                    "status": "failed",
                },
            },
            {
                "type": "item.completed",
                "item": {
                    "id": "i2",
                    "type": "file_change",
                    "changes": [
                        {"path": "/w/p/openspec/changes/c/tasks.md", "kind": "update"},
                        {"path": "/w/p/src/new.py", "kind": "add"},
                    ],
                    "status": "completed",
                },
            },
            {
                "type": "item.completed",
                "item": {"id": "i3", "type": "agent_message", "text": "Done.\nAll good."},
            },
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 1200, "cached_input_tokens": 0, "output_tokens": 56},
            },
        ),
    )
    assert problems(events) == []
    assert activity_count(events) == 2
    assert logs(events, "command") == ["$ pytest -q", "  exit code 1"]
    assert logs(events, "tool") == ["→ update openspec/changes/c/tasks.md", "→ add src/new.py"]
    assert logs(events, "text") == ["Done.", "All good."]
    (result,) = results(events)
    assert not result.is_error and result.cost_usd is None and result.text == "Done.\nAll good."
    assert result.usage == {"input_tokens": 1200, "cached_input_tokens": 0, "output_tokens": 56}
    (summary,) = logs(events, "summary")
    assert summary.startswith("iteration summary: ") and "1,200 input / 56 output tokens" in summary


def test_codex_command_without_start_is_still_shown() -> None:
    events = CodexParser().feed(
        "stdout",
        json.dumps(
            {
                "type": "item.completed",
                "item": {
                    "id": "x",
                    "type": "command_execution",
                    "command": ["ls", "-la"],
                    "exit_code": 0,
                },
            }
        ),
    )
    assert isinstance(events[0], Activity) and logs(events) == ["$ ls -la"]


@pytest.mark.parametrize(
    ("obj", "kind"),
    [
        (
            {"type": "error", "message": "unexpected status 401 Unauthorized: Missing bearer"},
            "auth",
        ),
        (
            {
                "type": "turn.failed",
                "error": {"message": "exceeded retry limit, last status: 401 Unauthorized"},
            },
            "auth",
        ),
        ({"type": "error", "message": "Not logged in. Run codex login."}, "auth"),
        (
            {
                "type": "turn.failed",
                "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"},
            },
            "rate_limit",
        ),
        (
            {
                "type": "error",
                "message": "You've hit your usage limit. Upgrade to Pro"
                " or try again in 2 hours 5 minutes.",
            },
            "rate_limit",
        ),
        (
            {"type": "error", "message": "Rate limit reached for gpt-5 in organization org-x"},
            "rate_limit",
        ),
    ],
)
def test_codex_failures(obj: dict[str, Any], kind: str) -> None:
    events = CodexParser().feed("stdout", json.dumps(obj))
    assert [p.kind for p in problems(events)] == [kind]


def test_codex_usage_limit_reset_time() -> None:
    before = time.time()
    events = CodexParser().feed(
        "stdout",
        json.dumps(
            {
                "type": "error",
                "message": "You've hit your usage limit. Try again in 2 hours 5 minutes.",
            }
        ),
    )
    (problem,) = problems(events)
    assert problem.retry_at is not None
    assert before + 7500 - 5 <= problem.retry_at <= time.time() + 7500 + 5


def test_codex_transient_retries_are_not_problems() -> None:
    p = CodexParser()
    events = p.feed(
        "stdout",
        json.dumps(
            {
                "type": "error",
                "message": "Reconnecting... 1/5 (unexpected status 429 Too Many Requests)",
            }
        ),
    )
    events += p.feed("stderr", "2026-01-01T00:00:00Z ERROR codex: 429 Too Many Requests, retrying")
    assert problems(events) == []
    assert logs(events, "info") == ["Reconnecting... 1/5 (unexpected status 429 Too Many Requests)"]
    # ...but a 401 while reconnecting is already an auth failure.
    events = p.feed(
        "stdout",
        json.dumps(
            {"type": "error", "message": "Reconnecting... 2/5 (unexpected status 401 Unauthorized)"}
        ),
    )
    assert [x.kind for x in problems(events)] == ["auth"]


def test_codex_turn_failed_gives_error_result() -> None:
    events = CodexParser().feed(
        "stdout", json.dumps({"type": "turn.failed", "error": {"message": "stream disconnected"}})
    )
    (result,) = results(events)
    assert result.is_error and result.text == "stream disconnected"
    assert "turn failed: stream disconnected" in logs(events, "stderr")


# --- Gemini ----------------------------------------------------------------------------


def test_gemini_recorded_no_auth() -> None:
    stderr = lines_of(shared_file("recorded", "gemini_noauth.stderr"))
    events = run_parser(
        GeminiParser(),
        stdout=lines_of(shared_file("recorded", "gemini_noauth.stdout")),
        stderr=stderr,
        exit_code=41,
    )
    assert logs(events, "stderr") == stderr
    assert [p.kind for p in problems(events)] == [
        "auth"
    ]  # once, though stderr and exit code 41 both tell


GEMINI_REAL = Path(__file__).resolve().parents[1] / "fixtures" / "gemini_real"


def test_gemini_recorded_untrusted_folder_is_fatal_with_the_way_out() -> None:
    stderr = lines_of(GEMINI_REAL / "untrusted.stderr")
    events = run_parser(GeminiParser(), stdout=[], stderr=stderr, exit_code=55)
    # Gemini's own words reach the user too, without its colour codes
    assert logs(events, "stderr") == [
        line.replace("\x1b[31m", "").replace("\x1b[0m", "") for line in stderr
    ]
    assert "\x1b[31m" in stderr[-1]
    (problem,) = problems(events)  # once, though stderr and exit code 55 both tell
    assert problem.kind == "fatal"
    assert "does not trust this folder" in problem.message
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in problem.message
    assert "ralph.env" in problem.message and "--env" in problem.message


def test_gemini_exit_55_alone_is_fatal_but_not_after_a_result() -> None:
    assert [p.kind for p in problems(GeminiParser().finish(55))] == ["fatal"]
    parser = GeminiParser()
    parser.feed("stdout", json.dumps({"type": "result", "status": "success", "stats": {}}))
    assert problems(parser.finish(55)) == []


def test_gemini_exit_41_alone_is_auth() -> None:
    assert [p.kind for p in problems(GeminiParser().finish(41))] == ["auth"]


@pytest.mark.parametrize("code", [42, 52])
def test_gemini_refused_input_or_config_is_fatal(code: int) -> None:
    assert [p.kind for p in problems(GeminiParser().finish(code))] == ["fatal"]


def test_gemini_stream() -> None:
    events = run_parser(
        GeminiParser(cwd="/w/p"),
        stdout=jl(
            {"type": "init", "session_id": "s", "model": "gemini-2.5-pro"},
            {"type": "message", "role": "user", "content": "the prompt"},
            {"type": "message", "role": "assistant", "content": "I'll read ", "delta": True},
            {
                "type": "message",
                "role": "assistant",
                "content": "the tasks.\nThen I",
                "delta": True,
            },
            {"type": "message", "role": "assistant", "content": " edit.", "delta": True},
            {
                "type": "tool_use",
                "tool_name": "read_file",
                "tool_id": "r1",
                "parameters": {"absolute_path": "/w/p/openspec/changes/c/tasks.md"},
            },
            {"type": "tool_result", "tool_id": "r1", "status": "success", "output": "..."},
            {
                "type": "tool_use",
                "tool_name": "replace",
                "tool_id": "r2",
                "parameters": {"file_path": "/w/p/a.py"},
            },
            {
                "type": "tool_result",
                "tool_id": "r2",
                "status": "error",
                "output": "",
                "error": {"type": "x", "message": "old_string not found"},
            },
            {
                "type": "tool_use",
                "tool_name": "run_shell_command",
                "tool_id": "r3",
                "parameters": {"command": "pytest -q"},
            },
            {"type": "error", "severity": "warning", "message": "Loop detected"},
            {"type": "message", "role": "assistant", "content": "All done", "delta": True},
            {
                "type": "result",
                "status": "success",
                "stats": {
                    "total_tokens": 300,
                    "input_tokens": 200,
                    "output_tokens": 100,
                    "duration_ms": 4200,
                    "tool_calls": 3,
                },
            },
        ),
    )
    assert logs(events, "info") == [
        "agent started: Gemini CLI, model gemini-2.5-pro",
        "warning: Loop detected",
    ]
    assert logs(events, "text") == ["I'll read the tasks.", "Then I edit.", "All done"]
    assert logs(events, "tool") == [
        "→ read_file openspec/changes/c/tasks.md",
        "→ replace a.py",
        "✗ replace: old_string not found",
    ]
    assert logs(events, "command") == ["$ pytest -q"]
    assert activity_count(events) == 3
    (result,) = results(events)
    assert not result.is_error and result.duration_ms == 4200 and result.usage is not None
    assert logs(events, "summary") == [
        "iteration summary: 4.2s · 3 tool calls · 200 input / 100 output tokens"
    ]
    assert problems(events) == []


def test_gemini_pending_text_is_flushed_at_the_end() -> None:
    p = GeminiParser()
    assert (
        p.feed(
            "stdout",
            json.dumps({"type": "message", "role": "assistant", "content": "half", "delta": True}),
        )
        == []
    )
    assert p.finish(0) == [LogLine("half", "text")]


@pytest.mark.parametrize(
    ("obj", "kind"),
    [
        (
            {
                "type": "error",
                "severity": "error",
                "message": "[API Error: 429 RESOURCE_EXHAUSTED. Please retry in 23.5s.]",
            },
            "rate_limit",
        ),
        (
            {
                "type": "result",
                "status": "error",
                "error": {"type": "FatalError", "message": "Quota exceeded for quota metric"},
            },
            "rate_limit",
        ),
        (
            {
                "type": "error",
                "severity": "error",
                "message": "API key not valid. Please pass a valid API key.",
            },
            "auth",
        ),
    ],
)
def test_gemini_failures(obj: dict[str, Any], kind: str) -> None:
    events = GeminiParser().feed("stdout", json.dumps(obj))
    assert [p.kind for p in problems(events)] == [kind]


def test_gemini_quota_retry_time() -> None:
    before = time.time()
    (problem,) = problems(GeminiParser().feed("stderr", "Your quota will reset after 2h30m5s."))
    assert problem.kind == "rate_limit" and problem.retry_at is not None
    assert before + 9005 - 5 <= problem.retry_at <= time.time() + 9005 + 5


# --- custom (plain) --------------------------------------------------------------------


def test_plain_lines_are_raw_and_claude_lines_are_claude() -> None:
    events = run_parser(
        PlainParser(),
        stdout=[
            "starting my agent",
            "",
            '{"type": "weird"}',
            *lines_of(shared_file("recorded", "run1.stdout")),
        ],
        exit_code=1,
    )
    assert logs(events, "raw") == ["starting my agent", '{"type": "weird"}']
    assert [p.kind for p in problems(events)] == ["auth"]
    assert len(results(events)) == 1


def test_plain_wrapper_around_claude_keeps_stderr_detection() -> None:
    # Claude's stderr, then (the pipes are read in no set order) its first stream-json event.
    lines = lines_of(shared_file("recorded", "bypass.stderr"))
    init = '{"type": "system", "subtype": "init", "cwd": "/p", "model": "m", "tools": []}'
    events = run_parser(PlainParser(), stdout=[init], stderr=lines, exit_code=1)
    assert logs(events, "stderr") == lines and [p.kind for p in problems(events)] == ["fatal"]
    # Once the agent is known to be Claude, its stderr is read as Claude's at once.
    parser = PlainParser()
    parser.feed("stdout", init)
    assert [p.kind for p in problems(parser.feed("stderr", lines[0]))] == ["fatal"]


def test_plain_agent_stderr_is_never_read_with_claude_patterns() -> None:
    # A custom agent that is not Claude: a failing test printing these must not end the run.
    lines = [
        "FAILED test_login: authentication failed",
        "error: unknown option '--frobnicate'",
        "Claude AI usage limit reached|1700000000",
        "Invalid API key",
    ]
    events = run_parser(PlainParser(), stdout=["ran the tests"], stderr=lines, exit_code=1)
    assert logs(events, "stderr") == lines
    assert problems(events) == []


def test_plain_success_sample_keeps_tools_and_summary() -> None:
    events = run_parser(PlainParser(), stdout=lines_of(shared_file("claude_stream_sample.jsonl")))
    assert activity_count(events) == 4 and logs(events, "summary") == [
        "iteration summary: 38.4s · 5 turns · $0.1873"
    ]
