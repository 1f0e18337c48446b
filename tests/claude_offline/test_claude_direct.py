"""The real Claude Code CLI, run directly (no ralph) against the scripted model server.

Proves the scripted server drives the real CLI as the `claude` preset runs it, and that the
recordings in tests/fixtures/claude_real/ still have the shape a live run has.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import BuildEnv, Change, MakeChange
from .harness import SCENARIOS, CliRun, load_fixture, ralph_like_prompt, run_claude, skeleton
from .scripted_server import ScriptedModel

# What the CLI shows for each service error (assistant `error`, result `api_error_status`,
# start of the text).
ERRORS = {
    "rate_limit": ("rate_limit", 429, "API Error: Request rejected (429)"),
    "overloaded": ("server_error", 529, "API Error: 529 Overloaded"),
    "auth": ("authentication_failed", 401, "Invalid API key"),
}


def _run(claude_bin: Path, env: dict[str, str], change: Change) -> CliRun:
    return run_claude(claude_bin, change.root, ralph_like_prompt(change.folder), env)


def _assert_matches_recording(run: CliRun, name: str) -> None:
    events, rc, stderr = load_fixture(name)
    assert run.returncode == rc, run.stdout + run.stderr
    assert skeleton(run.events) == skeleton(events), (
        f"the live CLI's output no longer has the shape of tests/fixtures/claude_real/{name}.jsonl "
        "(re-record with tests/claude_offline/record_fixtures.py and check the parser)"
    )
    assert run.stderr == stderr


def test_normal_run_checks_exactly_one_task(
    claude_bin: Path, scripted_model: ScriptedModel, claude_env: BuildEnv, make_change: MakeChange
) -> None:
    change = make_change(3)
    run = _run(claude_bin, claude_env(scripted_model), change)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr == ""
    lines = change.read_tasks().splitlines()
    assert "- [x] 1.1 Scripted task number 1" in lines
    assert (change.checked(), change.unchecked()) == (1, 2)

    reqs = scripted_model.message_requests()
    assert [r.reply for r in reqs] == ["read", "edit", "done"]
    assert [r.assistant_turns for r in reqs] == [0, 1, 2]
    assert all(r.stream for r in reqs), "every turn must be streamed"
    assert all(r.path == "/v1/messages?beta=true" for r in reqs)
    assert all(r.headers.get("x-api-key") == "sk-ant-offline-test" for r in reqs)
    others = [r for r in scripted_model.requests if r not in reqs]
    assert all(r.method == "HEAD" for r in others), others

    init = run.events[0]
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert init["permissionMode"] == "acceptEdits"
    assert init["cwd"] == str(change.root)
    result = run.result
    assert result["subtype"] == "success" and result["is_error"] is False
    assert result["num_turns"] == 3
    assert result["total_cost_usd"] > 0
    assert result["result"] == "Done."
    tool_uses = [
        b
        for e in run.of_type("assistant")
        for b in e["message"]["content"]
        if b["type"] == "tool_use"
    ]
    assert [(b["name"], b["input"]["file_path"]) for b in tool_uses] == [
        ("Read", str(change.tasks)),
        ("Edit", str(change.tasks)),
    ]
    _assert_matches_recording(run, "normal")


def test_each_spawn_checks_the_next_task(
    claude_bin: Path, scripted_model: ScriptedModel, claude_env: BuildEnv, make_change: MakeChange
) -> None:
    """Three fresh CLI processes check the three tasks in order; a fourth finds none left."""
    change = make_change(3)
    for n in (1, 2, 3):
        run = _run(claude_bin, claude_env(scripted_model), change)
        assert run.returncode == 0, run.stdout
        assert change.checked() == n
    scripted_model.clear()
    run = _run(claude_bin, claude_env(scripted_model), change)
    assert run.returncode == 0
    assert [r.reply for r in scripted_model.message_requests()] == ["read", "none-left"]
    assert change.unchecked() == 0


@pytest.mark.parametrize("name", ["rate_limit", "overloaded", "auth"])
def test_service_error_without_retries(
    name: str,
    claude_bin: Path,
    scripted_model: ScriptedModel,
    claude_env: BuildEnv,
    make_change: MakeChange,
) -> None:
    scripted_model.set_mode(SCENARIOS[name].mode, fail_count=1)
    change = make_change(3)
    run = _run(claude_bin, claude_env(scripted_model, retries=0), change)

    error, status, text = ERRORS[name]
    assert run.returncode == 1
    assert run.stderr == ""
    assert [e["type"] for e in run.events] == ["system", "assistant", "result"]
    assistant = run.events[1]
    assert assistant["error"] == error
    assert assistant["message"]["model"] == "<synthetic>"
    assert assistant["message"]["content"][0]["text"].startswith(text)
    result = run.result
    assert result["subtype"] == "success"  # not an error subtype: judge by is_error
    assert result["is_error"] is True
    assert result["api_error_status"] == status
    assert result["result"].startswith(text)
    assert change.checked() == 0
    assert len(scripted_model.message_requests()) == 1
    _assert_matches_recording(run, name)


@pytest.mark.parametrize("name", ["rate_limit_retry", "overloaded_retry"])
def test_service_error_retried_by_the_cli(
    name: str,
    claude_bin: Path,
    scripted_model: ScriptedModel,
    claude_env: BuildEnv,
    make_change: MakeChange,
) -> None:
    sc = SCENARIOS[name]
    scripted_model.set_mode(sc.mode, fail_count=sc.fail_count, retry_after=sc.retry_after)
    change = make_change(3)
    run = _run(claude_bin, claude_env(scripted_model, retries=sc.retries), change)

    assert run.returncode == 0
    retries = run.of_type("system", "api_retry")
    assert len(retries) == 1
    assert retries[0]["error_status"] == ERRORS[sc.mode][1]
    assert retries[0]["error"] == {"rate_limit": "rate_limit", "overloaded": "overloaded"}[sc.mode]
    assert retries[0]["max_retries"] == 10
    assert change.checked() == 1
    assert [r.status for r in scripted_model.message_requests()] == [
        ERRORS[sc.mode][1],
        200,
        200,
        200,
    ]
    _assert_matches_recording(run, name)


def test_bad_key_is_retried_when_retries_are_allowed(
    claude_bin: Path, scripted_model: ScriptedModel, claude_env: BuildEnv, make_change: MakeChange
) -> None:
    """With retries the CLI retries a 401 too (default 10 retries: about 3 minutes)."""
    scripted_model.set_mode("auth")
    change = make_change(3)
    run = _run(claude_bin, claude_env(scripted_model, retries=2), change)
    assert run.returncode == 1
    retries = run.of_type("system", "api_retry")
    assert [(r["attempt"], r["error_status"], r["error"]) for r in retries] == [
        (1, 401, "authentication_failed"),
        (2, 401, "authentication_failed"),
    ]
    assert run.events[-2]["error"] == "authentication_failed"
    assert len(scripted_model.message_requests()) == 3
    _assert_matches_recording(run, "auth_retry")


def test_broken_stream_is_resent_without_streaming(
    claude_bin: Path, scripted_model: ScriptedModel, claude_env: BuildEnv, make_change: MakeChange
) -> None:
    """A stream cut off after message_start: with retries 0 the CLI re-sends the turn as a
    plain (non-streaming) request, and the scripted server's JSON answer works too."""
    scripted_model.break_streams = 1
    change = make_change(3)
    run = _run(claude_bin, claude_env(scripted_model), change)
    assert run.returncode == 0, run.stdout
    reqs = scripted_model.message_requests()
    assert [(r.stream, r.reply) for r in reqs] == [
        (True, "read+broken"),
        (False, "read"),
        (True, "edit"),
        (True, "done"),
    ]
    assert change.checked() == 1


def test_no_credentials_at_all(
    claude_bin: Path, scripted_model: ScriptedModel, claude_env: BuildEnv, make_change: MakeChange
) -> None:
    """Without any key the CLI makes no request and says it is not logged in."""
    change = make_change(3)
    env = claude_env(scripted_model)
    del env["ANTHROPIC_API_KEY"]
    run = _run(claude_bin, env, change)
    assert run.returncode == 1
    assert scripted_model.requests == []
    assert run.events[0]["apiKeySource"] == "none"
    assert run.events[1]["error"] == "authentication_failed"
    assert run.result["is_error"] is True
    assert run.result["result"].startswith("Not logged in")
    _assert_matches_recording(run, "no_credentials")
