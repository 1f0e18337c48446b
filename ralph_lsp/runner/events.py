"""THE declaration of the event stream (SPEC §9, ``docs/events.md``).

A run's events, one JSON object per line, each with ``"v"`` (the schema version) and ``"type"``,
plus the run's ``"change"`` and ``"root"`` (a ``file:`` URI). :data:`EVENTS` names each type's
own fields; ``tests/runner/test_events.py`` holds it, the encoder and ``docs/events.md`` in
agreement. :func:`encode` turns an engine event into that object, :func:`decode` turns one back;
decode never raises: an unknown type, a newer version or a damaged object is ``None`` (ignored).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ralph_lsp.loop.engine import EngineEvent, LogEvent, RunStatus, StatusEvent
from ralph_lsp.loop.events import (
    CheckpointEvent,
    EndEvent,
    GuidanceEvent,
    IterationEvent,
    TasksEvent,
    VerificationEvent,
)

VERSION = 1
"""The schema version every event carries as ``"v"``; raised when a field changes meaning."""

ENVELOPE = ("v", "type", "change", "root")
"""The fields every event has."""

EVENTS: dict[str, tuple[str, ...]] = {
    "status": ("status",),
    "log": ("level", "text"),
    "iteration": ("runId", "phase", "n", "story", "startedAt", "record"),
    "verification": ("runId", "results", "passed"),
    "checkpoint": ("runId", "n", "checkpoint", "filesChanged"),
    "guidance": ("runId", "text", "deliveredIn"),
    "tasks": ("runId", "text"),
    "end": ("runId", "state", "reason"),
}
"""Each event type and its own fields (beside :data:`ENVELOPE`), in the order documented."""


def _uri(root: Path) -> str:
    return root.as_uri()


def _path(uri: Any) -> Path:
    parsed = urlparse(str(uri))
    if parsed.scheme != "file":
        raise ValueError(f"not a file: URI: {uri!r}")
    return Path(unquote(parsed.path))


def encode(event: EngineEvent) -> dict[str, Any]:
    """The stream's object for ``event``."""
    if isinstance(event, StatusEvent):
        st = event.status
        return _env("status", st.change, st.root, status=st.to_json())
    if isinstance(event, LogEvent):
        return _env("log", event.change, event.root, level=event.level, text=event.text)
    if isinstance(event, IterationEvent):
        return _env(
            "iteration",
            event.change,
            event.root,
            runId=event.run_id,
            phase=event.phase,
            n=event.n,
            story=event.story,
            startedAt=event.started_at,
            record=dict(event.record),
        )
    return _encode_more(event)


def _encode_more(event: EngineEvent) -> dict[str, Any]:
    if isinstance(event, VerificationEvent):
        return _env(
            "verification",
            event.change,
            event.root,
            runId=event.run_id,
            results=[dict(r) for r in event.results],
            passed=event.passed,
        )
    if isinstance(event, CheckpointEvent):
        files = list(event.files_changed) if event.files_changed is not None else None
        return _env(
            "checkpoint",
            event.change,
            event.root,
            runId=event.run_id,
            n=event.n,
            checkpoint=event.checkpoint,
            filesChanged=files,
        )
    if isinstance(event, GuidanceEvent):
        return _env(
            "guidance",
            event.change,
            event.root,
            runId=event.run_id,
            text=event.text,
            deliveredIn=event.delivered_in,
        )
    if isinstance(event, TasksEvent):
        return _env("tasks", event.change, event.root, runId=event.run_id, text=event.text)
    assert isinstance(event, EndEvent), event
    return _env(
        "end", event.change, event.root, runId=event.run_id, state=event.state, reason=event.reason
    )


def _env(kind: str, change: str, root: Path, **fields: Any) -> dict[str, Any]:
    return {"v": VERSION, "type": kind, "change": change, "root": _uri(root), **fields}


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
    if kind == "status":
        return StatusEvent(RunStatus.from_json(obj["status"]))
    root, change = _path(obj["root"]), str(obj["change"])
    if kind == "log":
        level = obj.get("level")
        if level == "warning" or level == "error":
            return LogEvent(root, change, str(obj["text"]), level)
        return LogEvent(root, change, str(obj["text"]))
    key = (root, change, str(obj["runId"]))
    if kind == "iteration":
        record = obj.get("record")
        return IterationEvent(
            *key,
            "end" if obj["phase"] == "end" else "start",
            int(obj["n"]),
            obj.get("story"),
            obj.get("startedAt"),
            dict(record) if isinstance(record, dict) else {},
        )
    if kind == "verification":
        results = tuple(dict(r) for r in obj["results"])
        return VerificationEvent(*key, results, bool(obj["passed"]))
    if kind == "checkpoint":
        files = obj.get("filesChanged")
        return CheckpointEvent(
            *key, int(obj["n"]), obj.get("checkpoint"), tuple(files) if files is not None else None
        )
    if kind == "guidance":
        return GuidanceEvent(*key, str(obj["text"]), int(obj["deliveredIn"]))
    if kind == "tasks":
        return TasksEvent(*key, str(obj["text"]))
    if kind == "end":
        return EndEvent(*key, str(obj["state"]), obj.get("reason"))
    return None
