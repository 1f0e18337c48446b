"""A command's flags read as settings, each checked as its setting is (a usage error names the
flag)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ralph_lsp.cli.common import CliError
from ralph_lsp.sandbox.domains import base_url_entries
from ralph_lsp.settings import (
    Settings,
    check_setting,
    settings_from_dict,
)


def settings_from_args(args: argparse.Namespace) -> Settings:
    import shlex

    raw: dict[str, Any] = {}
    if getattr(args, "agent", None):
        raw["agent"] = args.agent
    if getattr(args, "agent_command", None):
        try:
            argv = shlex.split(args.agent_command)
        except ValueError as exc:
            raise CliError(f"--agent-command: {exc}") from exc
        if not argv:
            raise CliError("--agent-command is empty")
        raw["agentCommand"] = argv
        raw.setdefault("agent", "custom")
    if getattr(args, "agent_args", None) is not None:
        try:
            raw["agentArgs"] = shlex.split(args.agent_args)
        except ValueError as exc:
            raise CliError(f"--agent-args: {exc}") from exc
    for attr, key in _FLAG_SETTINGS:
        value = getattr(args, attr, None)
        if value is not None:
            raw[key] = _checked(attr, key, value)
    if getattr(args, "model_prices", None) is not None:
        try:
            prices = json.loads(args.model_prices)
        except ValueError as exc:
            raise CliError(f"--model-prices: not JSON ({exc})") from None
        raw["modelPrices"] = _checked("model_prices", "modelPrices", prices)
    _model_flags(args, raw)
    if getattr(args, "on_end", None) is not None:
        raw["onRunEnd"] = _checked("on_end", "onRunEnd", args.on_end)
    if getattr(args, "verify", None):
        raw["verifyCommands"] = args.verify
    if getattr(args, "allow_tool", None):
        raw["allowedTools"] = args.allow_tool
    if getattr(args, "no_checkpoints", False):
        raw["checkpoints"] = False
    if getattr(args, "archive_on_success", False):
        raw["archiveOnSuccess"] = True
    env: dict[str, str] = {}
    for item in getattr(args, "env", None) or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CliError(f"--env expects NAME=VALUE, got {item!r}")
        env[name] = value
    if env:
        raw["env"] = env
    settings, warnings = settings_from_dict(raw)
    if warnings:  # every flag was checked above: a safety net that names the setting
        raise CliError(warnings[0])
    # A base URL given with --env is the person's own: its host joins the sandbox's allowlist
    # (ralph.env alone never widens it, since a workspace's settings can set it too).
    hosts = base_url_entries(settings.agent, env)
    if hosts:
        allowed = (*settings.sandbox_allowed_domains, *hosts)
        settings = settings.replace(sandbox_allowed_domains=tuple(dict.fromkeys(allowed)))
    return settings


# `run` flags that set a setting: (argparse attribute, setting). The flag is the attribute with
# dashes (`max_iterations` → `--max-iterations`).
_FLAG_SETTINGS = (
    ("max_iterations", "maxIterations"),
    ("max_cost", "maxCostUsd"),
    ("max_tokens", "maxTokens"),
    ("stuck_after", "stuckAfter"),
    ("scope", "iterationScope"),
    ("iteration_timeout", "iterationTimeoutSeconds"),
    ("stop_grace", "stopGraceSeconds"),
    ("finish_grace", "finishGraceSeconds"),
    ("isolation", "isolation"),
    ("agent_user_config", "agentUserConfig"),
    ("verify_when", "verifyWhen"),
    ("verify_timeout", "verifyTimeoutSeconds"),
    ("conformance", "conformance.require"),
    ("parallel", "queueParallel"),
    ("runner", "runner"),
    ("sandbox", "sandbox"),
    ("ray_address", "ray.address"),
    ("git_remote", "ray.gitRemote"),
    ("review_agent", "review.agent"),
    ("review_model", "review.model"),
    ("review_max_rounds", "review.maxRounds"),
    ("escalate_after", "escalateAfter"),
)
# (--review-model is ralph.review.model, above: the reviewer's own, before ralph.models.review)
_MODEL_FLAGS = (("plan_model", "plan"), ("model", "apply"))


def _model_flags(args: argparse.Namespace, raw: dict[str, Any]) -> None:
    """``--model``, ``--plan-model`` and ``--escalation a,b,c`` (SPEC §15)."""
    models = {
        phase: getattr(args, attr) for attr, phase in _MODEL_FLAGS if getattr(args, attr, None)
    }
    for attr, phase in _MODEL_FLAGS:
        if phase in models:
            _checked(attr, "models", {phase: models[phase]})
    if models:
        raw["models"] = models
    ladder = getattr(args, "escalation", None)
    if ladder is not None:
        raw["escalation"] = _checked(
            "escalation", "escalation", [m.strip() for m in ladder.split(",") if m.strip()]
        )


def _checked(attr: str, key: str, value: Any) -> Any:
    """A flag's value, checked as its setting is; a usage error names the flag."""
    try:
        check_setting(key, value)
    except ValueError as exc:
        flag = "--" + attr.replace("_", "-")
        expected = str(exc).removesuffix(", or null")  # null is for settings, not flags
        raise CliError(f"{flag}: expected {expected}, got {value!r}") from None
    return value
