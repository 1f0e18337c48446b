"""One typed, fully defaulted settings object, shared by the CLI and the server (SPEC §5).

Settings arrive as JSON-ish dictionaries (``initializationOptions``, ``workspace/configuration``
section ``ralph``). A value of the wrong type is reported once, as a readable warning, and its
default is used: a bad setting never stops the server.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

PRESETS = ("claude", "codex", "gemini", "demo", "custom")
SCOPES = ("story", "change")
ISOLATIONS = ("none", "worktree")
VERIFY_WHEN = ("final", "each", "off")
DEFAULT_AGENT_ARGS = ("--permission-mode", "acceptEdits")

# Settings that name a program to run or shape its environment: never taken from an
# untrusted workspace.
PROGRAM_SETTINGS = ("agent", "agentCommand", "agentArgs", "env", "verifyCommands", "allowedTools")


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
    # A run executes in its own runner process and outlives the server (SPEC §9); false: runs
    # live in the server and stop with it.
    runs_outlive_editor: bool = True

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


# camelCase name → (field name, converter). A converter returns the value or raises ValueError
# with what was expected.
def positive_int(v: Any) -> int:
    """A count: a whole number ≥ 1 (``ValueError`` otherwise; 1e400 and NaN included)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("a whole number of at least 1")
    if isinstance(v, float) and (not math.isfinite(v) or not v.is_integer()):
        raise ValueError("a whole number of at least 1")  # 1e400 is inf: never int() it
    if v < 1:
        raise ValueError("a whole number of at least 1")
    return int(v)


def _non_negative_number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError("a number of at least 0")
    return float(v)


def _optional_positive_number(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError("a number greater than 0, or null")
    return float(v)


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def convert(v: Any) -> str:
        if not isinstance(v, str) or v not in options:
            raise ValueError("one of " + ", ".join(repr(o) for o in options))
        return v

    return convert


def _str_list(v: Any) -> tuple[str, ...]:
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise ValueError("a list of strings")
    if any("\x00" in x for x in v):
        raise ValueError("a list of strings without NUL characters")
    return tuple(v)


def _optional_argv(v: Any) -> tuple[str, ...] | None:
    if v is None:
        return None
    argv = _str_list(v)
    if not argv or not argv[0]:
        raise ValueError("a non-empty list of strings (the program, then its arguments), or null")
    return argv


def _optional_bool(v: Any) -> bool | None:
    if v is not None and not isinstance(v, bool):
        raise ValueError("true, false or null")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("true or false")
    return v


def _env(v: Any) -> dict[str, str]:
    if not isinstance(v, Mapping) or not all(
        isinstance(k, str) and isinstance(x, str) for k, x in v.items()
    ):
        raise ValueError("an object of string values")
    if any(not k or "=" in k or "\x00" in k or "\x00" in x for k, x in v.items()):
        raise ValueError("an object whose names hold no '=' and whose values hold no NUL")
    return dict(v)


_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "agent": ("agent", _choice(PRESETS)),
    "agentCommand": ("agent_command", _optional_argv),
    "agentArgs": ("agent_args", _str_list),
    "maxIterations": ("max_iterations", positive_int),
    "maxCostUsd": ("max_cost_usd", _optional_positive_number),
    "stuckAfter": ("stuck_after", positive_int),
    "iterationScope": ("iteration_scope", _choice(SCOPES)),
    "verifyCommands": ("verify_commands", _str_list),
    "stopGraceSeconds": ("stop_grace_seconds", _non_negative_number),
    "iterationTimeoutSeconds": ("iteration_timeout_seconds", _optional_positive_number),
    "env": ("env", _env),
    "verifyWhen": ("verify_when", _choice(VERIFY_WHEN)),
    "verifyTimeoutSeconds": ("verify_timeout_seconds", _non_negative_number),
    "finishGraceSeconds": ("finish_grace_seconds", _non_negative_number),
    "historyKeepRuns": ("history_keep_runs", positive_int),
    "checkpoints": ("checkpoints", _optional_bool),
    "isolation": ("isolation", _choice(ISOLATIONS)),
    "allowedTools": ("allowed_tools", _str_list),
    "runsOutliveEditor": ("runs_outlive_editor", _bool),
}
SETTING_NAMES = tuple(_FIELDS)


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    """The ``ralph`` settings object of ``settings`` (``settings_from_dict`` reads it back)."""
    out: dict[str, Any] = {}
    for key, (name, _) in _FIELDS.items():
        value = getattr(settings, name)
        out[key] = list(value) if isinstance(value, tuple) else value
        if isinstance(value, Mapping):
            out[key] = dict(value)
    return out


def check_setting(key: str, value: Any) -> Any:
    """``value`` as setting ``key`` holds it; ``ValueError`` saying what was expected."""
    return _FIELDS[key][1](value)


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def settings_from_dict(
    raw: Any, *, base: Settings | None = None, trusted: bool = True
) -> tuple[Settings, list[str]]:
    """Build Settings from a ``ralph`` settings object; return it with one warning per bad value.

    ``None`` (an absent setting) keeps the default, except where null is a meaningful value
    (``maxCostUsd``, ``iterationTimeoutSeconds``, ``agentCommand``). Unknown keys are ignored
    (the client may send its own, like ``server``). When ``trusted`` is false, settings that
    name a program are not read.
    """
    settings = base or Settings()
    warnings: list[str] = []
    if raw is None:
        return settings, warnings
    if not isinstance(raw, Mapping):
        return settings, [f"ralph settings: expected an object, got {_show(raw)}; using defaults"]
    changes: dict[str, Any] = {}
    nullable = {"maxCostUsd", "iterationTimeoutSeconds", "agentCommand"}
    for key, (name, convert) in _FIELDS.items():
        if key not in raw:
            continue
        value = raw[key]
        if value is None and key not in nullable:
            continue
        if not trusted and key in PROGRAM_SETTINGS:
            continue
        try:
            changes[name] = convert(value)
        except ValueError as exc:
            default = getattr(Settings(), name)
            if isinstance(default, tuple):
                default = list(default)
            warnings.append(
                f"ralph.{key}: expected {exc}, got {_show(value)};"
                f" using the default {_show(default)}"
            )
    return settings.replace(**changes), warnings
