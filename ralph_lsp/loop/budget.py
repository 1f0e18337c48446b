"""Budgets every agent can honour (SPEC §3 limits): ``maxCostUsd`` and ``maxTokens``.

- Claude Code (and the demo agent) report a cost: it is used as reported (``costSource``
  ``reported``).
- Codex and Gemini CLI report tokens and no cost: the cost is **estimated** from the tokens at a
  model's list price (:data:`LIST_PRICES`, overridable in ``ralph.prices``, or the older
  ``ralph.modelPrices``), and every place that shows it says "estimate" (``estimated``). So is a
  Claude-style agent's that reports tokens and no cost, when its model has a price.
- A custom ``agentCommand`` (plain output) reports neither.

A budget that cannot be enforced (a cost budget for an agent that reports no cost and whose model
has no price, or any budget for an agent that reports nothing) is refused before the run starts,
never ignored (:func:`refusal`).

Tokens counted by ``maxTokens`` (:func:`counted_tokens`): every input token the model read, cached
or not, plus its output tokens, summed over the run's iterations. Codex and Gemini already count
cached input in their input tokens; Claude reports cache reads and writes apart, so they are added.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ralph_lsp.agents import cli_config
from ralph_lsp.agents.base import ResultInfo
from ralph_lsp.loop import policy
from ralph_lsp.runs.costs import TokensRecord, UsageRecord, tokens_of, usage_of_tokens
from ralph_lsp.settings import Settings

#: List prices in USD per million tokens (standard tier, short context: up to 272K input tokens
#: for OpenAI, 200K for Gemini Pro), as published on 2026-11-26 by OpenAI
#: (developers.openai.com/api/docs/pricing, and /api/docs/models/gpt-6.1-sol) and Google
#: (ai.google.dev/gemini-api/docs/pricing). Claude's: claude-opus-5-5 as Claude Code 2.1.330
#: itself priced it (its reported cost of 360 input and 40 output tokens: $0.00224), the 4.5
#: family as Anthropic lists it, cache reads at a tenth of the input price and 5-minute cache
#: writes at 1.25 times it. Longer prompts, priority tiers and batch are priced differently: this
#: is an estimate, and ``ralph.prices`` replaces or adds entries.
LIST_PRICES_DATE = "2026-11-26"
LIST_PRICES: dict[str, dict[str, float]] = {
    "claude-opus-5-5": {"input": 4.00, "cachedInput": 0.40, "cacheWrite": 5.00, "output": 20.00},
    "claude-opus-4-5": {"input": 5.00, "cachedInput": 0.50, "cacheWrite": 6.25, "output": 25.00},
    "claude-sonnet-4-5": {"input": 3.00, "cachedInput": 0.30, "cacheWrite": 3.75, "output": 15.00},
    "claude-haiku-4-5": {"input": 1.00, "cachedInput": 0.10, "cacheWrite": 1.25, "output": 5.00},
    # codex 0.169: its default model, and the one with plain tools (docs/guide/agents.md)
    "gpt-6.1-sol": {"input": 2.00, "cachedInput": 0.10, "output": 10.00},
    "gpt-5.5": {"input": 5.00, "cachedInput": 0.50, "output": 30.00},
    # gemini 0.61: the models its default ("auto") routes to, and its fixed-model defaults
    "gemini-3.1-pro-preview": {"input": 2.00, "cachedInput": 0.20, "output": 12.00},
    "gemini-3-flash-preview": {"input": 0.50, "cachedInput": 0.05, "output": 3.00},
    "gemini-2.5-pro": {"input": 1.25, "cachedInput": 0.125, "output": 10.00},
    "gemini-2.5-flash": {"input": 0.30, "cachedInput": 0.03, "output": 2.50},
}
#: Gemini's router names: priced as the dearest model each may pick (an estimate that errs high).
AUTO_MODELS = {
    "auto": "gemini-3.1-pro-preview",
    "auto-gemini-3": "gemini-3.1-pro-preview",
    "auto-gemini-2.5": "gemini-2.5-pro",
    # Claude Code's aliases: priced as the model each names in the table above
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-4-5",
    "haiku": "claude-haiku-4-5",
}
#: Agents whose output carries their cost, and those whose output carries only tokens.
REPORTS_COST = ("claude", "demo")
REPORTS_TOKENS = ("claude", "demo", "codex", "gemini")


def _agent_args(settings: Settings) -> list[str]:
    return list(settings.agent_command or settings.agent_args)


def preset_model(settings: Settings, env: Mapping[str, str], cwd: Path | None) -> str | None:
    """The model a Codex or Gemini spawn will use (None for the others)."""
    if settings.agent == "codex":
        return cli_config.codex_model(_agent_args(settings), env)
    if settings.agent == "gemini":
        return cli_config.gemini_model(_agent_args(settings), env, cwd)
    return None


@dataclass(frozen=True)
class Budget:
    """How one run prices and counts what its agent reports."""

    agent: str
    model: str | None = None  # Codex/Gemini: the model their tokens are priced at
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def price(self, model: str | None) -> Mapping[str, float] | None:
        name = AUTO_MODELS.get(model or "", model or "")
        return self.prices.get(model or "") or self.prices.get(name)

    def spawn_cost(
        self, res: ResultInfo | None, model: str | None = None
    ) -> tuple[float | None, bool]:
        """(cost, estimated) of one spawn: the agent's own cost, else an estimate from its
        tokens at the price of the model it ran (``model``: the one the run asked for, else
        what it reported, else the configured one), else (None, False)."""
        if res is None:
            return None, False
        if res.cost_usd is not None:  # a parser refuses a negative cost; never count one
            return (res.cost_usd, False) if res.cost_usd >= 0 else (None, False)
        if not isinstance(res.usage, Mapping):
            return None, False
        fallback = model or res.model or self.model
        per_model = _tokens_per_model(res.usage, fallback)
        total: float | None = None
        for name, tokens in per_model.items():
            price = self.price(name) or self.price(fallback)
            if price is None:
                continue
            usage = usage_of_tokens(tokens, self.agent)
            if usage is not None:
                total = (total or 0.0) + estimate(usage, price)
        return total, total is not None

    def counted_tokens(self, res: ResultInfo | None) -> int | None:
        return counted_tokens(self.agent, tokens_of(res.usage) if res else None)


def _tokens_per_model(usage: Mapping[str, Any], model: str | None) -> dict[str, TokensRecord]:
    """Gemini's ``stats.models`` gives each model's tokens (the router's own call included);
    otherwise all the tokens are the configured model's."""
    models = usage.get("models")
    if isinstance(models, Mapping):
        found = {str(m): t for m, u in models.items() if (t := tokens_of(u)) is not None}
        if found:
            return found
    tokens = tokens_of(usage)
    return {model or "": tokens} if tokens is not None else {}


def estimate(usage: UsageRecord, price: Mapping[str, float]) -> float:
    """USD for a receipt's tokens: fresh input at ``input``, cache reads at ``cachedInput`` and
    cache writes at ``cacheWrite`` (each the input price when the entry has none), output at
    ``output``."""
    cached_price = price.get("cachedInput", price["input"])
    write_price = price.get("cacheWrite", price["input"])
    usd = (
        (usage["inputTokens"] or 0) * price["input"]
        + (usage["cachedInputTokens"] or 0) * cached_price
        + (usage["cacheWriteTokens"] or 0) * write_price
        + (usage["outputTokens"] or 0) * price["output"]
    )
    return usd / 1_000_000


def counted_tokens(agent: str, tokens: TokensRecord | None) -> int | None:
    """What ``maxTokens`` counts of one spawn (see the module's docstring)."""
    if tokens is None or (tokens["input"] is None and tokens["output"] is None):
        return None
    total = (tokens["input"] or 0) + (tokens["output"] or 0)
    if agent not in ("codex", "gemini"):  # Claude: cache reads and writes are apart
        total += (tokens["cacheRead"] or 0) + (tokens["cacheWrite"] or 0)
    return total


def plan(settings: Settings, env: Mapping[str, str], cwd: Path | None) -> Budget:
    prices = {**LIST_PRICES, **settings.model_prices, **settings.prices}
    return Budget(settings.agent, preset_model(settings, env, cwd), prices)


def must_report(settings: Settings) -> tuple[str, ...]:
    """The budgets a custom ``agentCommand`` must feed from its own output (Claude's stream-json
    ``result``, which the plain parser reads): known only once it ran, so checked after each
    iteration (``policy.Limits.must_report``) instead of refused at start."""
    if settings.agent != "custom":
        return ()
    wanted = (("cost", settings.max_cost_usd), ("tokens", settings.max_tokens))
    return tuple(name for name, limit in wanted if limit is not None)


def limits(settings: Settings, max_iterations: int, *, escalating: bool) -> policy.Limits:
    """A run's limits from its settings; ``escalating``: with its models' escalation (SPEC §15),
    which a planning run has none of."""
    s = settings
    base = policy.Limits(
        max_iterations, s.stuck_after, s.max_cost_usd, s.max_tokens, must_report=must_report(s)
    )
    if not escalating:
        return base
    return replace(base, escalation=s.escalation, escalate_after=s.escalate_after)


def refusal(settings: Settings, env: Mapping[str, str], cwd: Path | None) -> str | None:
    """Why a budget of ``settings`` cannot be enforced, or None when each can (a custom agent's
    are checked as it runs: :func:`must_report`)."""
    agent = settings.agent
    if agent == "custom":
        return None
    reports = "reports neither a cost nor tokens (its output is read as plain text)"
    if settings.max_tokens is not None and agent not in REPORTS_TOKENS:
        return f"maxTokens cannot be enforced: the {agent} agent {reports}; remove the budget"
    if settings.max_cost_usd is None or agent in REPORTS_COST:
        return None
    if agent not in REPORTS_TOKENS:
        return f"maxCostUsd cannot be enforced: the {agent} agent {reports}; remove the budget"
    budget = plan(settings, env, cwd)
    # the models the run will ask for (SPEC §15), else the one the agent is configured with
    models: list[str | None] = [*settings.escalation] or [
        settings.models.get("apply") or budget.model
    ]
    missing = [m for m in models if budget.price(m) is None]
    if missing:
        unpriced = missing[0]
        return (
            f"maxCostUsd cannot be enforced: {agent} reports no cost, only tokens, and its model"
            f" {unpriced!r} has no price to estimate the cost from. Give its price in"
            " ralph.prices (or ralph.modelPrices; CLI: --model-prices"
            f' \'{{"{unpriced}": {{"input": 2.0, "output": 10.0}}\', USD per million tokens), or'
            " use maxTokens instead"
        )
    return None


def refusal_at(settings: Settings, root: Path) -> str | None:
    """:func:`refusal` for a run in ``root``, with the agent's environment."""
    return refusal(settings, {**os.environ, **settings.env}, root)
