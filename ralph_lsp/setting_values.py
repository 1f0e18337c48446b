"""The converters of settings' values (SPEC §5): a JSON-ish value checked and converted.

Each converter returns the value as :class:`~ralph_lsp.settings.Settings` holds it, or raises
``ValueError`` saying what was expected (``settings.py`` turns that into a warning and keeps the
default). The table of which setting takes which converter is ``settings.py``'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any


def positive_int(v: Any) -> int:
    """A count: a whole number ≥ 1 (``ValueError`` otherwise; 1e400 and NaN included)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("a whole number of at least 1")
    if isinstance(v, float) and (not math.isfinite(v) or not v.is_integer()):
        raise ValueError("a whole number of at least 1")  # 1e400 is inf: never int() it
    if v < 1:
        raise ValueError("a whole number of at least 1")
    return int(v)


def non_negative_number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError("a number of at least 0")
    return float(v)


def optional_positive_number(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError("a number greater than 0, or null")
    return float(v)


def choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def convert(v: Any) -> str:
        if not isinstance(v, str) or v not in options:
            raise ValueError("one of " + ", ".join(repr(o) for o in options))
        return v

    return convert


def str_list(v: Any) -> tuple[str, ...]:
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise ValueError("a list of strings")
    if any("\x00" in x for x in v):
        raise ValueError("a list of strings without NUL characters")
    return tuple(v)


def optional_argv(v: Any) -> tuple[str, ...] | None:
    if v is None:
        return None
    argv = str_list(v)
    if not argv or not argv[0]:
        raise ValueError("a non-empty list of strings (the program, then its arguments), or null")
    return argv


def optional_bool(v: Any) -> bool | None:
    if v is not None and not isinstance(v, bool):
        raise ValueError("true, false or null")
    return v


def command_line(v: Any) -> tuple[str, ...] | None:
    """A command line split like a shell would split it (never run by one); "" or null: none."""
    import shlex

    if v is None or v == "":
        return None
    if not isinstance(v, str) or "\x00" in v:
        raise ValueError("a command line (text), or null")
    try:
        argv = tuple(shlex.split(v))
    except ValueError as exc:
        raise ValueError(f"a command line that splits like a shell line ({exc})") from None
    return argv or None


def boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("true or false")
    return v


def env_vars(v: Any) -> dict[str, str]:
    if not isinstance(v, Mapping) or not all(
        isinstance(k, str) and isinstance(x, str) for k, x in v.items()
    ):
        raise ValueError("an object of string values")
    if any(not k or "=" in k or "\x00" in k or "\x00" in x for k, x in v.items()):
        raise ValueError("an object whose names hold no '=' and whose values hold no NUL")
    return dict(v)


def optional_positive_int(v: Any) -> int | None:
    if v is None:
        return None
    try:
        return positive_int(v)
    except ValueError:
        raise ValueError("a whole number of at least 1, or null") from None


def optional_text(v: Any) -> str | None:
    if v is None or v == "":
        return None
    if not isinstance(v, str) or "\x00" in v or v != v.strip():
        raise ValueError("text without surrounding blanks, or null")
    return v


RESOURCE_KEYS = ("cpus", "memoryMb")


def resources(v: Any) -> dict[str, float]:
    shape = 'an object {"cpus"?: N, "memoryMb"?: N} of numbers greater than 0'
    if not isinstance(v, Mapping) or any(k not in RESOURCE_KEYS for k in v):
        raise ValueError(shape)
    out: dict[str, float] = {}
    for key, value in v.items():
        number = optional_positive_number(value)
        if number is None:
            raise ValueError(shape)
        out[key] = number
    return out


PRICE_KEYS = ("input", "output", "cachedInput", "cacheWrite")
PHASES = ("plan", "apply", "review")


def model_prices(v: Any) -> dict[str, dict[str, float]]:
    """``{"<model>": {"input": USD, "output": USD, "cachedInput"?: USD, "cacheWrite"?: USD}}``,
    per million tokens."""
    shape = (
        'an object of model name → {"input": N, "output": N, "cachedInput"?: N, "cacheWrite"?: N}'
        " (USD per million tokens)"
    )
    if not isinstance(v, Mapping):
        raise ValueError(shape)
    out: dict[str, dict[str, float]] = {}
    for model, price in v.items():
        if not isinstance(model, str) or not model.strip() or not isinstance(price, Mapping):
            raise ValueError(f"{shape}; {show(model)} is not one")
        missing = [k for k in ("input", "output") if k not in price]
        unknown = [k for k in price if k not in PRICE_KEYS]
        if missing or unknown:
            what = f"lacks {', '.join(missing)}" if missing else f"has {', '.join(unknown)}"
            raise ValueError(f"{shape}; {model!r} {what}")
        try:
            out[model] = {k: non_negative_number(x) for k, x in price.items()}
        except ValueError:
            raise ValueError(f"{shape}; {model!r} holds a price that is no number ≥ 0") from None
    return out


def model_name(v: Any) -> str:
    # never a flag: the name is the argument after the preset's --model
    if not isinstance(v, str) or not v.strip() or v != v.strip() or "\x00" in v or v[0] == "-":
        raise ValueError("a model name (text without surrounding blanks, not starting with -)")
    return v


def models(v: Any) -> dict[str, str]:
    """``{"plan"?: MODEL, "apply"?: MODEL, "review"?: MODEL}`` (null or "" leaves one unset)."""
    shape = 'an object {"plan"?: MODEL, "apply"?: MODEL, "review"?: MODEL} of model names'
    if not isinstance(v, Mapping) or any(k not in PHASES for k in v):
        raise ValueError(shape)
    try:
        return {k: model_name(m) for k, m in v.items() if m not in (None, "")}
    except ValueError:
        raise ValueError(shape) from None


def escalation(v: Any) -> tuple[str, ...]:
    try:
        models = tuple(model_name(m) for m in str_list(v))
    except ValueError:
        raise ValueError("a list of model names, cheapest first") from None
    if len(set(models)) != len(models):
        raise ValueError("a list of model names, cheapest first, each once")
    return models


def show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
