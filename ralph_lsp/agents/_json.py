"""Tolerant JSON access for agent output: every getter returns None on a missing or mistyped
field, so a parser never trusts the shape of what an agent printed."""

from __future__ import annotations

import json
import math
from typing import Any


def parse_object(line: str) -> dict[str, Any] | None:
    """The JSON object on ``line``, or None when the line is not one (any other JSON value, bad
    JSON, nesting too deep for the decoder, a number too long to convert…)."""
    if not isinstance(line, str):
        return None
    text = line.strip().lstrip("\ufeff")  # a BOM may lead the first line
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError, MemoryError):
        return None
    return value if isinstance(value, dict) else None


def get_str(obj: Any, key: str) -> str | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def get_int(obj: Any, key: str) -> int | None:
    """An integer field; a finite float is rounded; booleans are not numbers here."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return round(value)
    return None


def get_float(obj: Any, key: str) -> float | None:
    """A finite number field as a float (booleans, NaN and infinities are refused)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def get_cost(obj: Any, key: str) -> tuple[float | None, str | None]:
    """(cost, refusal) of a reported cost field: a finite number that is not negative is the
    cost; anything else the agent put there (a negative number, NaN, a string…) is refused and
    ``refusal`` says what was refused, so that a bad report never lowers a budget's total."""
    value = obj.get(key) if isinstance(obj, dict) else None
    cost = get_float(obj, key)
    if cost is not None and cost >= 0:
        return cost, None
    if value is None:
        return None, None
    shown = json.dumps(value)[:40] if not isinstance(value, float) else repr(value)
    return None, f"the agent reported {key} {shown}, not a cost (a cost is a number of 0 or more)"


def get_bool(obj: Any, key: str) -> bool | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, bool) else None


def get_dict(obj: Any, key: str) -> dict[str, Any] | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else None


def get_list(obj: Any, key: str) -> list[Any]:
    """A list field, or an empty list."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


def text_of(value: Any, limit: int = 20000) -> str:
    """Readable text from a tool result's ``content``: a string, or a list of ``{"type": "text",
    "text": …}`` blocks (other blocks are skipped). At most ``limit`` characters."""
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, list):
        parts: list[str] = []
        size = 0
        for block in value:
            piece = get_str(block, "text") if isinstance(block, dict) else None
            if piece is None and isinstance(block, str):
                piece = block
            if piece:
                parts.append(piece)
                size += len(piece)
                if size >= limit:
                    break
        return "\n".join(parts)[:limit]
    return ""
