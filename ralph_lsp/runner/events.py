"""THE declaration of the event stream (SPEC §9, ``docs/events.md``).

A run's events, one JSON object per line, each with ``"v"`` (the schema version) and ``"type"``,
plus the run's ``"change"`` and ``"root"`` (a ``file:`` URI). :data:`TYPES` is the one table of
event types: each row names its engine event class and its own fields, each field with its JSON
key, the event's attribute and how its value is written and read back. :func:`encode` and
:func:`decode` are driven by that table alone, and :data:`EVENTS` (each type's field names) is
derived from it; ``tests/runner/test_events.py`` holds it, the encoder and ``docs/events.md`` in
agreement. decode never raises: an unknown type, a newer version or a damaged object is ``None``
(ignored).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ralph_lsp.runs import events as run_events
from ralph_lsp.runs.status import EngineEvent, LogEvent, RunStatus, StatusEvent

VERSION = 1
"""The schema version every event carries as ``"v"``; raised when a field changes meaning."""

ENVELOPE = ("v", "type", "change", "root")
"""The fields every event has."""


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Field:
    """One field of an event type: its JSON ``key``, the event's ``attr``, ``write`` (the
    attribute's value → JSON) and ``read`` (JSON → the attribute's value; raises when damaged).
    A ``required`` field missing from an object makes it damaged; an optional one reads as
    ``read(None)``."""

    key: str
    attr: str
    read: Callable[[Any], Any] = _same
    write: Callable[[Any], Any] = _same
    required: bool = True


@dataclass(frozen=True)
class EventType:
    """A row of :data:`TYPES`. ``keyed``: the class is built with the envelope's ``root`` and
    ``change`` first (all but ``status``, whose run status carries them)."""

    name: str
    cls: Callable[..., EngineEvent]
    fields: tuple[Field, ...]
    keyed: bool = True


def _level(value: Any) -> str:
    return value if value == "warning" or value == "error" else "info"


def _record(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _optional_tuple(value: Any) -> tuple[Any, ...] | None:
    return tuple(value) if value is not None else None


def _optional_list(value: Any) -> list[Any] | None:
    return list(value) if value is not None else None


_RUN_ID = Field("runId", "run_id", str)

TYPES: tuple[EventType, ...] = (
    EventType(
        "status",
        StatusEvent,
        (Field("status", "status", RunStatus.from_json, RunStatus.to_json),),
        keyed=False,
    ),
    EventType(
        "log",
        LogEvent,
        (Field("level", "level", _level, required=False), Field("text", "text", str)),
    ),
    EventType(
        "iteration",
        run_events.IterationEvent,
        (
            _RUN_ID,
            Field("phase", "phase", lambda p: "end" if p == "end" else "start"),
            Field("n", "n", int),
            Field("story", "story", required=False),
            Field("startedAt", "started_at", required=False),
            Field("record", "record", _record, dict, required=False),
        ),
    ),
    EventType(
        "verification",
        run_events.VerificationEvent,
        (
            _RUN_ID,
            Field(
                "results",
                "results",
                lambda rs: tuple(dict(r) for r in rs),
                lambda rs: [dict(r) for r in rs],
            ),
            Field("passed", "passed", bool),
        ),
    ),
    EventType(
        "checkpoint",
        run_events.CheckpointEvent,
        (
            _RUN_ID,
            Field("n", "n", int),
            Field("checkpoint", "checkpoint", required=False),
            Field("filesChanged", "files_changed", _optional_tuple, _optional_list, required=False),
        ),
    ),
    EventType(
        "guidance",
        run_events.GuidanceEvent,
        (_RUN_ID, Field("text", "text", str), Field("deliveredIn", "delivered_in", int)),
    ),
    EventType("tasks", run_events.TasksEvent, (_RUN_ID, Field("text", "text", str))),
    EventType(
        "review", run_events.ReviewEvent, (_RUN_ID, Field("record", "record", _record, dict))
    ),
    EventType(
        "end",
        run_events.EndEvent,
        (_RUN_ID, Field("state", "state", str), Field("reason", "reason", required=False)),
    ),
)
"""Every event type, in the order documented; each type's fields in the order written."""

EVENTS: dict[str, tuple[str, ...]] = {t.name: tuple(f.key for f in t.fields) for t in TYPES}
"""Each event type and its own fields (beside :data:`ENVELOPE`), in the order documented."""

_BY_NAME = {t.name: t for t in TYPES}
_BY_CLASS: dict[object, EventType] = {t.cls: t for t in TYPES}


def _uri(root: Path) -> str:
    return root.as_uri()


def _path(uri: Any) -> Path:
    parsed = urlparse(str(uri))
    if parsed.scheme != "file":
        raise ValueError(f"not a file: URI: {uri!r}")
    return Path(unquote(parsed.path))


def encode(event: EngineEvent) -> dict[str, Any]:
    """The stream's object for ``event``."""
    row = _BY_CLASS[type(event)]
    where: Any = event
    if not row.keyed:
        where = where.status  # a status event's run status carries its change and root
    obj: dict[str, Any] = {"v": VERSION, "type": row.name, "change": where.change}
    obj["root"] = _uri(where.root)
    for f in row.fields:
        obj[f.key] = f.write(getattr(event, f.attr))
    return obj


def dumps(event: EngineEvent) -> bytes:
    """One line of the stream (UTF-8, ending in a newline)."""
    return (json.dumps(encode(event), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def decode(obj: Any) -> EngineEvent | None:
    """The engine event of one stream object; None for anything else (never raises)."""
    try:
        if not isinstance(obj, dict) or obj.get("v") != VERSION:
            return None
        return _decode(obj)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def loads(line: bytes | str) -> EngineEvent | None:
    try:
        return decode(json.loads(line))
    except ValueError:
        return None


def _decode(obj: dict[str, Any]) -> EngineEvent | None:
    kind = obj.get("type")
    row = _BY_NAME.get(kind) if isinstance(kind, str) else None
    if row is None:
        return None
    values: dict[str, Any] = {}
    if row.keyed:
        values["root"], values["change"] = _path(obj["root"]), str(obj["change"])
    for f in row.fields:
        values[f.attr] = f.read(obj[f.key] if f.required else obj.get(f.key))
    return row.cls(**values)
