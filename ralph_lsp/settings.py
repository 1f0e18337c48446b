"""One typed, fully defaulted settings object, shared by the CLI and the server (SPEC §5).

Settings arrive as JSON-ish dictionaries (``initializationOptions``, ``workspace/configuration``
section ``ralph``). A value of the wrong type is reported once, as a readable warning, and its
default is used: a bad setting never stops the server.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ralph_lsp import setting_values as values

PRESETS = ("claude", "codex", "gemini", "demo", "custom")
SCOPES = ("story", "change")
ISOLATIONS = ("none", "worktree")
VERIFY_WHEN = ("final", "each", "off")
# ralph.conformance.require (SPEC §13): what a run's scenarios must be for it to succeed.
CONFORMANCE_REQUIRES = ("auto", "verified", "linked", "off")
# ralph.agentUserConfig: keep the user's own global agent config (~/.claude, …) out of each
# iteration, passing on only their login, or let the agent load it all.
USER_CONFIGS = ("isolate", "inherit")
DEFAULT_AGENT_ARGS = ("--permission-mode", "acceptEdits")

# Settings that name a program to run or shape its environment: never taken from an
# untrusted workspace.
PROGRAM_SETTINGS = (
    "agent",
    "agentCommand",
    "agentArgs",
    "env",
    "verifyCommands",
    "allowedTools",
    "agentUserConfig",
    "onRunEnd",
    # Where runs execute and which remote their work is pushed to (SPEC §9 "Remote runs").
    "runner",
    "ray.address",
    "ray.resources",
    "ray.gitRemote",
    # The reviewer is a program too (SPEC §13 "Review").
    "review.agent",
    # What a run may touch (SPEC §10 "Sandboxed runs").
    "sandbox",
    "sandbox.allowWrite",
    "sandbox.denyRead",
    "sandbox.allowedDomains",
)

# Settings a workspace's own settings may not set at all (SPEC §9: machine- or user-scoped):
# the client contributes them with scope "application" (VS Code takes them only from the User
# settings, in local and remote windows alike; "machine" would be ignored there in a remote window).
MACHINE_SETTINGS: tuple[str, ...] = (
    "onRunEnd",
    "runner",
    "ray.address",
    "ray.resources",
    "ray.gitRemote",
    # A workspace can never widen or turn off its own sandbox (SPEC §10).
    "sandbox",
    "sandbox.allowWrite",
    "sandbox.denyRead",
    "sandbox.allowedDomains",
)
RUNNERS = ("local", "ray")
SANDBOXES = ("auto", "off")


@dataclass(frozen=True)
class Settings:
    agent: str = "claude"
    agent_command: tuple[str, ...] | None = None
    agent_args: tuple[str, ...] = DEFAULT_AGENT_ARGS
    max_iterations: int = 20
    max_cost_usd: float | None = None
    stuck_after: int = 3
    iteration_scope: str = "story"
    verify_commands: tuple[str, ...] = ()
    stop_grace_seconds: float = 5.0
    iteration_timeout_seconds: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    verify_when: str = "final"
    verify_timeout_seconds: float = 900.0
    finish_grace_seconds: float = 60.0
    history_keep_runs: int = 50
    checkpoints: bool | None = None  # None: on when the OpenSpec root is in a git work tree
    isolation: str = "none"
    # Claude permission rules the agent may use without asking, beside the verification
    # commands (which every preset allows by itself), e.g. "Bash(npm run build:*)".
    allowed_tools: tuple[str, ...] = ()
    agent_user_config: str = "isolate"
    # A budget of input + output tokens summed over the run's iterations (see loop/budget.py).
    max_tokens: int | None = None
    # model → {"input", "output", "cachedInput"?} in USD per million tokens: prices that replace
    # or add to the dated table in loop/budget.py, for estimating the cost of agents that report
    # only tokens (Codex, Gemini).
    model_prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # SPEC §15's name for the same table, with "cacheWrite" too: it wins over modelPrices (which
    # older settings use) and both over the built-in table.
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # SPEC §15: the model of each phase (plan, apply, review), passed to the preset's model flag
    # (a custom agentCommand's {model}); unset: the agent's own default. See model_for.
    models: Mapping[str, str] = field(default_factory=dict)
    # SPEC §15: models cheapest first; a story that makes no progress for escalate_after
    # iterations moves to the next one (loop/policy.py). Empty: no escalation.
    escalation: tuple[str, ...] = ()
    escalate_after: int = 2
    # A queue (SPEC §9): how many changes run at once (each in its own worktree when more than
    # one), and the budget of the whole queue.
    queue_parallel: int = 1
    queue_max_cost_usd: float | None = None
    # A command run when a run or a queue ends, its end event as JSON on stdin (SPEC §9).
    on_run_end: tuple[str, ...] | None = None
    # A run executes in its own runner process and outlives the server (SPEC §9); false: runs
    # live in the server and stop with it.
    runs_outlive_editor: bool = True
    # Where a run executes (SPEC §9 "Remote runs on Ray"): "local" or "ray" (a Ray job at
    # ray_address, its work pushed to and fetched from ray_git_remote, default: origin).
    runner: str = "local"
    ray_address: str | None = None
    ray_resources: Mapping[str, float] = field(default_factory=dict)
    ray_git_remote: str | None = None
    # Every process of a run in an OS sandbox (SPEC §10): "auto" (fail closed) or "off"; the
    # lists widen it (allowWrite), narrow it (denyRead) and name the agent's extra domains.
    sandbox: str = "auto"
    sandbox_allow_write: tuple[str, ...] = ()
    sandbox_deny_read: tuple[str, ...] = ()
    sandbox_allowed_domains: tuple[str, ...] = ()
    # OpenSpec diagnostics (SPEC §11): warnings count as `openspec validate --strict` counts them.
    validation_strict: bool = False
    # After a run succeeds (its verification passed, when on), archive the change as `openspec
    # archive --yes` does (SPEC §11). Off by default: users review first.
    archive_on_success: bool = False
    # The reviewer (SPEC §13 "Review"): None (no review), a preset name, "same" (the run's
    # agent), or a command (argv); its model, and how many rounds may append tasks.
    review_agent: str | tuple[str, ...] | None = None
    review_model: str | None = None
    review_max_rounds: int = 2
    # The conformance gate (SPEC §13): "auto" ("verified" once any test of the project names
    # any scenario, else "off"), "verified", "linked" or "off"; and the test files scanned for
    # `Scenario: <title>` (empty: the usual test locations, conformance/globs.py).
    conformance_require: str = "auto"
    conformance_test_globs: tuple[str, ...] = ()

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


def _review_agent(v: Any) -> str | tuple[str, ...] | None:
    """A preset name, ``"same"``, a command line (split as a shell would, never run by one), or
    an argv list; null or "" for no review."""
    if isinstance(v, str) and (v in PRESETS or v == "same") and v != "custom":
        return v
    if isinstance(v, (list, tuple)):
        return values.optional_argv(v)
    try:
        return values.command_line(v)
    except ValueError:
        raise ValueError('a preset name, "same", a command line or an argv list, or null') from None


def model_for(settings: Settings, phase: str) -> str | None:
    """The model ``phase`` (``plan``, ``apply`` or ``review``) runs with (SPEC §15): its
    ``ralph.models`` entry, else None (the agent's own default). The apply phase's escalation
    (``ralph.escalation``) is the loop's (``loop/policy.py``), which starts from the list's first
    model instead."""
    if phase not in values.PHASES:
        raise ValueError(f"unknown phase {phase!r} (known: {', '.join(values.PHASES)})")
    return settings.models.get(phase)


# camelCase name → (field name, converter). A converter (setting_values.py) returns the value or
# raises ValueError with what was expected.
_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "agent": ("agent", values.choice(PRESETS)),
    "agentCommand": ("agent_command", values.optional_argv),
    "agentArgs": ("agent_args", values.str_list),
    "maxIterations": ("max_iterations", values.positive_int),
    "maxCostUsd": ("max_cost_usd", values.optional_positive_number),
    "stuckAfter": ("stuck_after", values.positive_int),
    "iterationScope": ("iteration_scope", values.choice(SCOPES)),
    "verifyCommands": ("verify_commands", values.str_list),
    "stopGraceSeconds": ("stop_grace_seconds", values.non_negative_number),
    "iterationTimeoutSeconds": ("iteration_timeout_seconds", values.optional_positive_number),
    "env": ("env", values.env_vars),
    "verifyWhen": ("verify_when", values.choice(VERIFY_WHEN)),
    "verifyTimeoutSeconds": ("verify_timeout_seconds", values.non_negative_number),
    "finishGraceSeconds": ("finish_grace_seconds", values.non_negative_number),
    "historyKeepRuns": ("history_keep_runs", values.positive_int),
    "checkpoints": ("checkpoints", values.optional_bool),
    "isolation": ("isolation", values.choice(ISOLATIONS)),
    "allowedTools": ("allowed_tools", values.str_list),
    "agentUserConfig": ("agent_user_config", values.choice(USER_CONFIGS)),
    "maxTokens": ("max_tokens", values.optional_positive_int),
    "modelPrices": ("model_prices", values.model_prices),
    "prices": ("prices", values.model_prices),
    "models": ("models", values.models),
    "escalation": ("escalation", values.escalation),
    "escalateAfter": ("escalate_after", values.positive_int),
    "queueParallel": ("queue_parallel", values.positive_int),
    "queueMaxCostUsd": ("queue_max_cost_usd", values.optional_positive_number),
    "onRunEnd": ("on_run_end", values.command_line),
    "runsOutliveEditor": ("runs_outlive_editor", values.boolean),
    "runner": ("runner", values.choice(RUNNERS)),
    "ray.address": ("ray_address", values.optional_text),
    "ray.resources": ("ray_resources", values.resources),
    "ray.gitRemote": ("ray_git_remote", values.optional_text),
    "sandbox": ("sandbox", values.choice(SANDBOXES)),
    "sandbox.allowWrite": ("sandbox_allow_write", values.str_list),
    "sandbox.denyRead": ("sandbox_deny_read", values.str_list),
    "sandbox.allowedDomains": ("sandbox_allowed_domains", values.str_list),
    "validation.strict": ("validation_strict", values.boolean),
    "archiveOnSuccess": ("archive_on_success", values.boolean),
    "review.agent": ("review_agent", _review_agent),
    "review.model": ("review_model", values.optional_text),
    "review.maxRounds": ("review_max_rounds", values.positive_int),
    "conformance.require": ("conformance_require", values.choice(CONFORMANCE_REQUIRES)),
    "conformance.testGlobs": ("conformance_test_globs", values.str_list),
}
SETTING_NAMES = tuple(_FIELDS)


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    """The ``ralph`` settings object of ``settings`` (``settings_from_dict`` reads it back: how a
    runner, a queue's runner and a Ray job get their settings)."""
    import shlex

    out: dict[str, Any] = {}
    for key, (name, parse) in _FIELDS.items():
        value = getattr(settings, name)
        out[key] = list(value) if isinstance(value, tuple) else value
        if parse is values.command_line and value is not None:
            out[key] = shlex.join(value)  # as a person writes it: a line, split when read
        if isinstance(value, Mapping):
            out[key] = dict(value)
    return out


def check_setting(key: str, value: Any) -> Any:
    """``value`` as setting ``key`` holds it; ``ValueError`` saying what was expected."""
    return _FIELDS[key][1](value)


def _lookup(raw: Mapping[str, Any], key: str) -> tuple[bool, Any]:
    """``raw[key]``, where a dotted key (``ray.address``) may also be nested (``{"ray": {…}}``)."""
    if key in raw:
        return True, raw[key]
    head, dot, rest = key.partition(".")
    inner = raw.get(head) if dot else None
    if isinstance(inner, Mapping) and rest in inner:
        return True, inner[rest]
    return False, None


def settings_from_dict(
    raw: Any, *, base: Settings | None = None, trusted: bool = True
) -> tuple[Settings, list[str]]:
    """Build Settings from a ``ralph`` settings object; return it with one warning per bad value.

    ``None`` (an absent setting) keeps the default, except where null is a meaningful value
    (``maxCostUsd``, ``iterationTimeoutSeconds``, ``agentCommand``, ``maxTokens``). Unknown keys
    are ignored (the client may send its own, like ``server``). When ``trusted`` is false,
    settings that name a program are not read.
    """
    settings = base or Settings()
    warnings: list[str] = []
    if raw is None:
        return settings, warnings
    if not isinstance(raw, Mapping):
        shown = values.show(raw)
        return settings, [f"ralph settings: expected an object, got {shown}; using defaults"]
    changes: dict[str, Any] = {}
    nullable = {
        "maxCostUsd",
        "iterationTimeoutSeconds",
        "agentCommand",
        "maxTokens",
        "queueMaxCostUsd",
        "review.agent",
        "review.model",
    }
    for key, (name, convert) in _FIELDS.items():
        found, value = _lookup(raw, key)
        if not found:
            continue
        if value is None and key not in nullable:
            continue
        if isinstance(value, Mapping) and any(k.startswith(key + ".") for k in _FIELDS):
            # {"sandbox": {"mode": "off", "allowWrite": …}}: the object form (SPEC §10); its
            # lists are read as the sub-settings, its "mode" (absent: unchanged) as the setting.
            if "mode" not in value or value["mode"] is None:
                continue
            value = value["mode"]
        if not trusted and key in PROGRAM_SETTINGS:
            continue
        try:
            changes[name] = convert(value)
        except ValueError as exc:
            default = getattr(Settings(), name)
            if isinstance(default, tuple):
                default = list(default)
            warnings.append(
                f"ralph.{key}: expected {exc}, got {values.show(value)};"
                f" using the default {values.show(default)}"
            )
    return settings.replace(**changes), warnings
