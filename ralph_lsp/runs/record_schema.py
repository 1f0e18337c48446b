"""A history record read back from disk, made to fit its schema (SPEC §3; issue 25).

``record.json`` is a file in the workspace: a stranger's repository (or a damaged disk) can hold
any valid JSON there. Every reader (``ralph-lsp history``, ``ralph.history``, the git views)
gets records whose known fields have their documented types: a field of the wrong type becomes
null (a list: empty), an iteration that is not an object or has no whole number ``n`` is
dropped, and what was changed is said (once, by the caller). Unknown fields pass through as
they are. No LSP imports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _count(v: Any) -> bool:
    return _whole(v) and v >= 0


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _obj(v: Any) -> bool:
    return isinstance(v, dict)


# field → its check; a value that fails becomes None
_RUN: dict[str, Check] = {
    "change": _text,
    "root": _text,
    "startedAt": _text,
    "endedAt": _text,
    "state": _text,
    "reason": _text,
    "story": _text,
    "owner": _obj,
    "worktree": _obj,
    "branchState": _text,  # SPEC §12: null, "needs-review" or "merged"
    "merge": _obj,
    "sandbox": _obj,
    "conformance": _obj,  # SPEC §13: the last verification's table
    "costs": _obj,
}
_RUN_LISTS = ("transitions", "rateLimited", "guidance", "blocked", "iterations", "reviews")
_ITERATION: dict[str, Check] = {
    "startedAt": _text,
    "endedAt": _text,
    "exitCode": _whole,
    "costUsd": _number,
    "numTurns": _whole,
    "usage": _obj,
    "agentUsage": _obj,
    "model": _text,
    "modelReason": _text,
    "costSource": _text,
    "endReason": _text,
    "tasksChecked": _count,
    "checkpoint": _text,
    "outputUri": _text,
    "promptUri": _text,
    "conformance": _obj,
}


def _fit(data: dict[str, Any], checks: dict[str, Check], where: str, odd: list[str]) -> None:
    for key, check in checks.items():
        value = data.get(key)
        if value is not None and not check(value):
            data[key] = None
            odd.append(f"{where}{key}")


def _iteration(raw: Any, odd: list[str]) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or not _whole(raw.get("n")) or raw["n"] < 1:
        odd.append("an iteration that is not an object with a whole number n")
        return None
    it = dict(raw)
    where = f"iteration {it['n']}: "
    _fit(it, _ITERATION, where, odd)
    for key in ("verification", "filesChanged", "refusals", "tasks"):
        value = it.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            it[key] = None
            odd.append(f"{where}{key}")
            continue
        kind = str if key in ("filesChanged", "tasks") else dict
        kept = [v for v in value if isinstance(v, kind)]
        if len(kept) != len(value):
            odd.append(f"{where}{key}")
        it[key] = kept
    return it


def normalize_record(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The record with its known fields of the right types, and the fields that were not."""
    record = dict(data)
    odd: list[str] = []
    _fit(record, _RUN, "", odd)
    for key in _RUN_LISTS:
        value = record.get(key)
        if value is None and key != "iterations":
            continue
        if not isinstance(value, list):
            if value is not None:
                odd.append(key)
            record[key] = []
            continue
        if key == "iterations":
            record[key] = [it for it in (_iteration(v, odd) for v in value) if it is not None]
        else:
            kept = [v for v in value if isinstance(v, dict)]
            if len(kept) != len(value):
                odd.append(key)
            record[key] = kept
    dropped = record.get("rawOutputDropped")
    if dropped is not None and not (isinstance(dropped, list) and all(map(_whole, dropped))):
        record["rawOutputDropped"] = []
        odd.append("rawOutputDropped")
    return record, odd


def damaged_note(notes: list[str]) -> str | None:
    """One line for every damaged record read at once, or None."""
    if not notes:
        return None
    return (
        f"{len(notes)} damaged history record(s): fields of the wrong type are shown empty"
        f" ({'; '.join(notes[:3])}{'; …' if len(notes) > 3 else ''})"
    )
