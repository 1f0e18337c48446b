"""Budgets every agent can honour: a cost estimated from tokens at list prices, tokens counted
the same way for every agent, and a budget that cannot be enforced refused before the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph_lsp.agents.base import ResultInfo
from ralph_lsp.loop.budget import LIST_PRICES, Budget, counted_tokens, must_report, plan, refusal
from ralph_lsp.settings import Settings, settings_from_dict


def result(usage: object, cost: float | None = None) -> ResultInfo:
    return ResultInfo(False, cost, None, usage, None, None)  # type: ignore[arg-type]


CODEX_USAGE = {"input_tokens": 2000, "cached_input_tokens": 1000, "output_tokens": 200}


def test_codex_cost_is_estimated_from_its_tokens_with_cached_input_cheaper() -> None:
    budget = Budget("codex", "gpt-5.5", LIST_PRICES)
    cost, estimated = budget.spawn_cost(result(CODEX_USAGE))
    # 1000 fresh × $5 + 1000 cached × $0.50 + 200 out × $30, per million
    assert estimated and cost == pytest.approx((5000 + 500 + 6000) / 1e6)


def test_a_reported_cost_is_never_replaced_by_an_estimate() -> None:
    budget = Budget("claude", None, LIST_PRICES)
    assert budget.spawn_cost(result({"input_tokens": 5}, cost=0.5)) == (0.5, False)
    assert Budget("codex", "gpt-5.5", LIST_PRICES).spawn_cost(None) == (None, False)


def test_gemini_prices_each_model_of_its_stats() -> None:
    stats = {
        "input_tokens": 3000, "output_tokens": 300, "cached": 0,
        "models": {
            "gemini-2.5-flash": {"input_tokens": 2000, "output_tokens": 200, "cached": 0},
            "gemini-3.1-pro-preview": {"input_tokens": 1000, "output_tokens": 100, "cached": 0},
        },
    }  # fmt: skip
    cost, estimated = Budget("gemini", "auto", LIST_PRICES).spawn_cost(result(stats))
    flash = (2000 * 0.30 + 200 * 2.50) / 1e6
    pro = (1000 * 2.00 + 100 * 12.00) / 1e6
    assert estimated and cost == pytest.approx(flash + pro)


def test_an_unpriced_model_in_the_stats_is_priced_as_the_configured_one() -> None:
    stats = {"models": {"gemini-9-ultra": {"input_tokens": 1000, "output_tokens": 0}}}
    cost, _ = Budget("gemini", "auto", LIST_PRICES).spawn_cost(result(stats))
    assert cost == pytest.approx(1000 * 2.00 / 1e6)  # auto: priced as the dearest route


def test_tokens_counted_for_max_tokens() -> None:
    claude = {"input": 10, "output": 5, "cacheRead": 1000, "cacheWrite": 100}
    codex = {"input": 1000, "output": 5, "cacheRead": 900, "cacheWrite": None}
    assert counted_tokens("claude", claude) == 1115  # cache apart: added
    assert counted_tokens("codex", codex) == 1005  # cached input is part of input
    assert counted_tokens("codex", None) is None


def test_model_prices_setting_overrides_and_adds(tmp_path: Path) -> None:
    raw = {"agent": "codex", "modelPrices": {"gpt-5.5": {"input": 1, "output": 2}}}
    settings, warnings = settings_from_dict(raw)
    assert warnings == []
    budget = plan(settings.replace(agent_args=("-m", "gpt-5.5")), {"HOME": str(tmp_path)}, None)
    assert budget.model == "gpt-5.5" and budget.price("gpt-5.5") == {"input": 1.0, "output": 2.0}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ([1], "an object of model name"),
        ({"m": {"input": 1}}, "'m' lacks output"),
        ({"m": {"input": 1, "output": 2, "cache": 3}}, "'m' has cache"),
        ({"m": {"input": -1, "output": 2}}, "no number ≥ 0"),
    ],
)
def test_a_bad_model_prices_setting_is_a_clear_warning(value: object, says: str) -> None:
    settings, warnings = settings_from_dict({"modelPrices": value})
    assert settings.model_prices == {}
    (warning,) = warnings
    assert warning.startswith("ralph.modelPrices: expected an object of model name") and says in (
        warning
    ), warning


def test_budgets_that_cannot_be_enforced_are_refused(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    # A custom agentCommand may print Claude's stream-json result with its cost: not refused at
    # start, but each iteration must report it (policy.Limits.must_report; test_policy).
    custom = Settings(agent="custom", agent_command=("my-agent",))
    assert refusal(custom.replace(max_cost_usd=1.0), env, None) is None
    assert must_report(custom.replace(max_cost_usd=1.0, max_tokens=10)) == ("cost", "tokens")
    assert must_report(Settings(agent="claude", max_cost_usd=1.0)) == ()
    unpriced = Settings(agent="codex", max_cost_usd=1.0, agent_args=("-m", "mystery"))
    why = str(refusal(unpriced, env, None))
    assert "'mystery' has no price" in why and "ralph.modelPrices" in why
    # enforceable: a priced default model, a reported cost, a token budget
    assert refusal(Settings(agent="codex", max_cost_usd=1.0), env, None) is None
    assert refusal(Settings(agent="gemini", max_cost_usd=1.0), env, None) is None
    assert refusal(Settings(agent="claude", max_cost_usd=1.0), env, None) is None
    assert refusal(Settings(agent="gemini", max_tokens=5), env, None) is None


def test_the_model_comes_from_the_agents_own_config(tmp_path: Path) -> None:
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text('model = "gpt-5.5"\n[profiles.x]\nmodel = "o9"\n')
    env = {"HOME": str(tmp_path)}
    assert plan(Settings(agent="codex"), env, None).model == "gpt-5.5"
    assert plan(Settings(agent="codex"), {"HOME": str(tmp_path / "none")}, None).model == (
        "gpt-6.1-sol"
    )
    gemini = tmp_path / ".gemini"
    gemini.mkdir()
    (gemini / "settings.json").write_text('{"model": {"name": "gemini-2.5-flash"}}')
    assert plan(Settings(agent="gemini"), env, None).model == "gemini-2.5-flash"
    assert plan(Settings(agent="gemini", agent_args=("-m", "x")), env, None).model == "x"
