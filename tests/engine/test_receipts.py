"""Receipts, a model per phase and escalation (SPEC §15), through real runs: the engine spawns
real fake agents (a ``claude`` on PATH that is a real script, a custom command, replays of the
real CLIs' recorded output) and the record is read back from disk."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.loop.budget import LIST_PRICES
from ralph_lsp.loop.engine import Engine
from ralph_lsp.runs.history import load_records
from ralph_lsp.runs.receipts import receipt_line, receipts_text
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings
from tests.engine.conftest import CHANGE, fake, spawns
from tests.engine.test_engine import CODEX_ARGV, RECORDED, Recorder, preset_binary
from tests.tags import scratch

TWO_STORIES = "# Tasks\n\n## 1. One\n- [ ] 1.1 first\n\n## 2. Two\n- [ ] 2.1 second\n"


async def run_to_end(project: Path, settings: Settings, **kw: Any) -> tuple[Any, dict[str, Any]]:
    engine = Engine(Recorder())
    await engine.start(project, CHANGE, settings, RunRequest(**kw))
    status = await asyncio.wait_for(engine.wait(project, CHANGE), 60)
    return status, load_records(project, CHANGE)[0]


def fake_claude(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``claude`` on PATH: the model-dependent fake agent (tests/fake_agents/modeled.py)."""
    bin_dir.mkdir(exist_ok=True)
    python, script = fake("modeled.py")
    (bin_dir / "claude").write_text(f'#!/bin/sh\nexec "{python}" "{script}" "$@"\n')
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


#: the example project's `make test` fails until its CLI is written: these runs check no code
NO_CHECKS = {"verify_when": "off"}


def two_stories(project: Path) -> None:
    (project / "openspec/changes" / CHANGE / "tasks.md").write_text(TWO_STORIES)


def models_of(spawn_log: Path) -> list[str]:
    out = []
    for s in spawns(spawn_log):
        argv = list(s["argv"])  # type: ignore[call-overload]
        out.append(argv[argv.index("--model") + 1] if "--model" in argv else "-")
    return out


async def test_escalation_moves_a_stuck_story_to_the_next_model_and_the_next_story_starts_low(
    project: Path, spawn_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("FAKE_ABLE_MODELS", "large")  # the small model never checks a task
    monkeypatch.setenv("FAKE_PRICES", "small=0.01,large=0.10")
    two_stories(project)
    settings = Settings(
        agent="claude", escalation=("small", "large"), escalate_after=2, **NO_CHECKS
    )
    status, record = await run_to_end(project, settings)
    assert status.state == "succeeded"
    # what each spawn got on its command line: two failures on small, then large; story 2
    # starts again at small
    assert models_of(spawn_log) == ["small", "small", "large", "small", "small", "large"]
    its = record["iterations"]
    assert [it["model"] for it in its] == ["small", "small", "large"] * 2
    assert its[0]["modelReason"] == "escalation 1/2: story 1 starts at the first model"
    assert its[2]["modelReason"] == (
        "escalation 2/2: story 1 made no progress in 2 iterations with small"
    )
    assert its[3]["modelReason"] == "escalation 1/2: story 2 starts at the first model"
    assert [it["tasks"] for it in its] == [[], [], ["1.1"], [], [], ["2.1"]]
    assert [it["costSource"] for it in its] == ["reported"] * 6
    costs = record["costs"]
    assert costs["totalUsd"] == pytest.approx(0.24)
    assert costs["noProgressUsd"] == pytest.approx(0.04)
    assert costs["noProgressIterations"] == 4
    # the prompt never mentions the model, the attempt or the escalation
    for s in spawns(spawn_log):
        prompt = str(s["prompt"]).replace(str(project), "").lower()
        assert "small" not in prompt and "large" not in prompt
        assert "escalat" not in prompt and "model" not in prompt and "attempt" not in prompt


async def test_escalation_is_tried_before_stuck_and_stuck_counts_on_the_last_model(
    project: Path, spawn_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("FAKE_ABLE_MODELS", "nobody")
    settings = Settings(
        agent="claude", escalation=("a", "b", "c"), escalate_after=2, stuck_after=2, **NO_CHECKS
    )
    status, record = await run_to_end(project, settings)
    assert status.state == "stuck"
    assert models_of(spawn_log) == ["a", "a", "b", "b", "c", "c"]
    assert record["iterations"][-1]["modelReason"].startswith("escalation 3/3: story 1")


async def test_the_apply_model_goes_to_the_presets_model_flag(
    project: Path, spawn_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("FAKE_PRICES", "claude-sonnet-4-5=0.02")
    two_stories(project)
    settings = Settings(
        agent="claude", models={"apply": "claude-sonnet-4-5", "plan": "p"}, **NO_CHECKS
    )
    status, record = await run_to_end(project, settings)
    assert status.state == "succeeded"
    assert models_of(spawn_log) == ["claude-sonnet-4-5"] * 2
    first = record["iterations"][0]
    assert (first["model"], first["modelReason"]) == ("claude-sonnet-4-5", "ralph.models.apply")


async def test_a_review_rounds_cost_is_part_of_the_total_and_of_each_verified_tasks(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake claude reviews too: every task checked, it appends nothing (an approval) and
    reports its own model's price (no spawn log: the reviewer's sandbox keeps the work tree
    read-only). The record, the end line's text and ``history --receipts``
    count the round's cost with the iterations'."""
    fake_claude(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("FAKE_PRICES", "worker=0.02,judge=0.01")
    two_stories(project)
    settings = Settings(
        agent="claude",
        models={"apply": "worker"},
        review_agent="claude",
        review_model="judge",
        verify_commands=("true",),
        conformance_require="off",  # the example's tests name scenarios this fake never runs
    )
    status, record = await run_to_end(project, settings)
    assert status.state == "succeeded", status.reason
    assert status.reason.endswith("review approved")
    assert [r["costUsd"] for r in record["reviews"]] == [pytest.approx(0.01)]
    assert [r["model"] for r in record["reviews"]] == ["judge"]
    costs = record["costs"]
    assert costs["totalUsd"] == pytest.approx(0.05) and costs["reviewUsd"] == pytest.approx(0.01)
    assert costs["perVerifiedTaskUsd"] == pytest.approx(0.025)
    lines = receipts_text(record["iterations"], record["reviews"])
    assert lines[2].startswith("review 1 · claude · judge · approved · $0.0100")
    assert lines[-1].startswith("total $0.0500 (review $0.0100) · $0.0250 per verified task")


def test_a_cost_too_small_for_four_decimals_is_never_zero() -> None:
    line = receipt_line({"n": 1, "model": "m", "costUsd": 3.9e-05, "costSource": "reported"})
    assert "· $0.000039 reported ·" in line


async def test_a_custom_commands_model_placeholder_and_the_error_without_a_model(
    project: Path, spawn_log: Path
) -> None:
    command = (*fake("modeled.py"), "--model", "{model}", "-p", "{prompt}")
    settings = Settings(agent="custom", agent_command=command, models={"apply": "m-1"})
    status, record = await run_to_end(project, settings, max_iterations=1)
    assert models_of(spawn_log) == ["m-1"]
    assert record["iterations"][0]["model"] == "m-1"
    status, _ = await run_to_end(project, settings.replace(models={}), max_iterations=1)
    assert status.state == "failed"
    assert "agentCommand uses {model}, but no model is set" in status.reason
    assert len(spawns(spawn_log)) == 1  # nothing was spawned the second time


async def test_a_cost_estimated_from_tokens_at_the_built_in_and_the_set_prices(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an agent that reports tokens and no cost: priced at the model it ran
    fake_claude(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("FAKE_TOKENS", "1000,20000,3000,500")
    settings = Settings(agent="claude", models={"apply": "claude-haiku-4-5"})
    _, record = await run_to_end(project, settings, max_iterations=1)
    it = record["iterations"][0]
    p = LIST_PRICES["claude-haiku-4-5"]
    expected = (1000 * p["input"] + 20000 * p["cachedInput"] + 3000 * p["cacheWrite"]
                + 500 * p["output"]) / 1e6  # fmt: skip
    assert it["costSource"] == "estimated" and it["costUsd"] == pytest.approx(expected)
    assert it["usage"] == {
        "inputTokens": 1000, "cachedInputTokens": 20000, "cacheWriteTokens": 3000,
        "outputTokens": 500,
    }  # fmt: skip
    assert "estimated" in receipt_line(it) and "cached 20,000" in receipt_line(it)
    assert record["costs"]["estimated"] is True
    # ralph.prices wins over the built-in table
    own = {"claude-haiku-4-5": {"input": 1.0, "output": 0.0, "cachedInput": 0.0, "cacheWrite": 0.0}}
    _, record = await run_to_end(project, settings.replace(prices=own), max_iterations=1)
    assert record["iterations"][0]["costUsd"] == pytest.approx(1000 / 1e6)
    # a model with no price: no cost at all, shown as a dash, never $0.0000
    _, record = await run_to_end(
        project, settings.replace(models={"apply": "mystery"}), max_iterations=1
    )
    it = record["iterations"][0]
    assert it["costUsd"] is None and it["costSource"] is None
    assert "cost —" in receipt_line(it) and "$0.0000" not in "\n".join(receipts_text([it]))


async def test_receipts_from_the_real_claude_clis_recorded_output(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    recorded = scratch(project) / "claude_normal"  # the replay reads it inside the sandbox
    recorded.with_suffix(".stdout").write_bytes(
        (RECORDED / "claude_real/normal.jsonl").read_bytes()
    )
    recorded.with_suffix(".stderr").write_bytes(b"")
    preset_binary(bin_dir, "claude", "true", "$2", recorded, 0)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    _, record = await run_to_end(project, Settings(agent="claude"), max_iterations=1)
    it = record["iterations"][0]
    assert it["model"] == "claude-opus-5-5"  # from the result's modelUsage
    assert it["usage"] == {
        "inputTokens": 360, "cachedInputTokens": 0, "cacheWriteTokens": 0, "outputTokens": 40,
    }  # fmt: skip
    assert (it["costUsd"], it["costSource"]) == (pytest.approx(0.00224), "reported")
    assert it["endReason"] == "exited 0" and it["tasks"] == []
    # the built-in price of claude-opus-5-5 gives what the CLI itself reported
    p = LIST_PRICES["claude-opus-5-5"]
    assert (360 * p["input"] + 40 * p["output"]) / 1e6 == pytest.approx(0.00224)


async def test_receipts_from_the_real_codex_clis_recorded_output(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    preset_binary(bin_dir, "codex", CODEX_ARGV, "$5", RECORDED / "codex_real/refusals", 0)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    settings = Settings(agent="codex", models={"apply": "gpt-5.5"})
    _, record = await run_to_end(project, settings, max_iterations=1)
    it = record["iterations"][0]
    # Codex reports no model and no cost: the model the run asked for, the cost estimated at
    # its price from turn.completed's tokens (4000 input, none cached, 400 output)
    assert it["model"] == "gpt-5.5"
    assert it["usage"] == {
        "inputTokens": 4000, "cachedInputTokens": 0, "cacheWriteTokens": 0, "outputTokens": 400,
    }  # fmt: skip
    p = LIST_PRICES["gpt-5.5"]
    assert it["costSource"] == "estimated"
    assert it["costUsd"] == pytest.approx((4000 * p["input"] + 400 * p["output"]) / 1e6)


FOUR_TASKS = (
    "# Tasks\n\n## 1. One\n- [ ] 1.1 a\n- [ ] 1.2 b\n\n## 2. Two\n- [ ] 2.1 c\n- [ ] 2.2 d\n"
)
# fails the first time it runs, passes after
FLAKY_CHECK = """import pathlib, sys
mark = pathlib.Path(__file__).with_name("checked-once")
if not mark.exists():
    mark.write_text("x")
    print("1 failed: test_greeting")
    sys.exit(1)
print("4 passed")
"""


async def test_every_prompt_of_a_run_starts_with_the_same_fixed_part(
    project: Path, spawn_log: Path
) -> None:
    # SPEC §15 "a prompt that caches": guidance in the first prompt, a failing check in the
    # second, neither after; the fixed part is byte-identical and most of every prompt.
    from ralph_lsp.loop.prompt import fixed_part
    from ralph_lsp.openspec.workspace import Change

    (project / "openspec/changes" / CHANGE / "tasks.md").write_text(FOUR_TASKS)
    check = scratch(project) / "check.py"
    check.write_text(FLAKY_CHECK)
    command = f"{sys.executable} {check}"
    settings = Settings(
        agent="custom",
        agent_command=tuple(fake("check_one.py", "-p", "{prompt}")),
        verify_commands=(command,),
        verify_when="each",
        # the check writes no JUnit report: the conformance gate (SPEC §13) is another test's
        conformance_require="off",
    )
    status, record = await run_to_end(project, settings, guidance=["prefer small functions"])
    assert status.state == "succeeded", status.reason
    prompts = [str(s["prompt"]) for s in spawns(spawn_log)]
    assert len(prompts) == 4 and len(record["iterations"]) == 4
    assert "prefer small functions" in prompts[0]
    assert "currently fails" in prompts[1] and "1 failed: test_greeting" in prompts[1]
    assert all("currently fails" not in p and "Guidance" not in p for p in prompts[2:])
    fixed = fixed_part(Change(project, CHANGE), [command])
    for p in prompts:
        assert p.startswith(fixed)
        assert len(fixed) / len(p) >= 0.6, (len(fixed), len(p))
    # what changes comes after it: the story in scope, the failing check, the guidance
    assert all(p.index("## Scope") >= len(fixed) for p in prompts)
    assert prompts[0].index("## Guidance") > prompts[0].index("## Scope")
    assert prompts[1].index("## Verification state") > prompts[1].index("## Scope")


# Gemini CLI 0.61's stream-json end, in the shape the real CLI prints (no recording of a
# successful real run exists here: it cannot reach its service; the field names are the CLI's)
GEMINI_RESULT = (
    '{"type":"init","timestamp":"2026-11-22T04:35:48.259Z","session_id":"s","model":"auto"}\n'
    '{"type":"result","timestamp":"2026-11-22T04:35:50.001Z","status":"success","stats":'
    '{"total_tokens":2600,"input_tokens":2400,"output_tokens":200,"cached":1000,'
    '"duration_ms":1742,"tool_calls":1,"models":{"gemini-2.5-flash":{"total_tokens":2600,'
    '"input_tokens":2400,"output_tokens":200,"cached":1000}}}}\n'
)


async def test_receipts_from_the_gemini_clis_stream_json(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = scratch(project) / "gemini_result"
    recorded.with_suffix(".stdout").write_text(GEMINI_RESULT)
    recorded.with_suffix(".stderr").write_bytes(b"")
    gemini_argv = '[ "$1" = -p ] && [ "$4" = stream-json ]'
    preset_binary(tmp_path / "bin", "gemini", gemini_argv, "$2", recorded, 0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    _, record = await run_to_end(project, Settings(agent="gemini"), max_iterations=1)
    it = record["iterations"][0]
    assert it["model"] == "gemini-2.5-flash"  # the model its router picked, from stats.models
    # Gemini's input counts its cached part: the receipt keeps them apart
    assert it["usage"] == {
        "inputTokens": 1400, "cachedInputTokens": 1000, "cacheWriteTokens": None,
        "outputTokens": 200,
    }  # fmt: skip
    p = LIST_PRICES["gemini-2.5-flash"]
    expected = (1400 * p["input"] + 1000 * p["cachedInput"] + 200 * p["output"]) / 1e6
    assert it["costSource"] == "estimated" and it["costUsd"] == pytest.approx(expected)
    assert "cache write — " in receipt_line(it)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"models": {"apply": "x", "deploy": "y"}}, "ralph.models: expected an object"),
        ({"models": {"apply": "--dangerously-skip-permissions"}}, "ralph.models: expected"),
        ({"models": ["x"]}, "ralph.models: expected an object"),
        ({"escalation": "haiku,opus"}, "ralph.escalation: expected a list of model names"),
        ({"escalation": ["a", "a"]}, "each once"),
        ({"escalation": ["a", " b"]}, "ralph.escalation: expected a list of model names"),
        ({"escalateAfter": 0}, "ralph.escalateAfter: expected a whole number of at least 1"),
        ({"prices": {"m": {"input": 1, "output": -1}}}, "holds a price that is no number"),
        ({"prices": {"m": {"input": 1, "output": 1, "cacheRead": 1}}}, "has cacheRead"),
    ],
)
def test_a_bad_economics_setting_is_one_clear_warning_and_its_default(
    raw: dict[str, Any], says: str
) -> None:
    from ralph_lsp.settings import model_for, settings_from_dict

    settings, warnings = settings_from_dict(raw)
    (warning,) = warnings
    assert says in warning, warning
    key = next(iter(raw))
    assert getattr(settings, {"escalateAfter": "escalate_after"}.get(key, key)) == getattr(
        Settings(), {"escalateAfter": "escalate_after"}.get(key, key)
    )
    assert model_for(settings, "apply") is None


def test_model_for_names_each_phases_model() -> None:
    from ralph_lsp.settings import model_for

    s = Settings(models={"plan": "p", "apply": "a"}, escalation=("s", "l"))
    assert (model_for(s, "plan"), model_for(s, "apply"), model_for(s, "review")) == ("p", "a", None)
    with pytest.raises(ValueError, match="unknown phase 'deploy'"):
        model_for(s, "deploy")


def test_a_cost_budget_needs_a_price_for_every_model_the_run_will_ask_for() -> None:
    from ralph_lsp.loop.budget import refusal

    env = {"HOME": "/nonexistent"}
    codex = Settings(agent="codex", max_cost_usd=1.0)
    assert refusal(codex, env, None) is None  # its default model has a price
    ladder = codex.replace(escalation=("gpt-6.1-sol", "mystery-model"))
    why = str(refusal(ladder, env, None))
    assert "'mystery-model' has no price" in why and "ralph.prices" in why
    priced = {"mystery-model": {"input": 1.0, "output": 2.0}}
    assert refusal(ladder.replace(prices=priced), env, None) is None
    assert "'other' has no price" in str(
        refusal(codex.replace(models={"apply": "other"}), env, None)
    )
