"""The event stream is declared once (runner/events.py EVENTS): docs/events.md documents exactly
those types and fields, the encoder writes exactly them, and decode is encode's inverse and
never raises."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.loop.engine import EngineEvent, LogEvent, RunStatus, StatusEvent
from ralph_lsp.runner import events
from ralph_lsp.runs.events import (
    CheckpointEvent,
    EndEvent,
    GuidanceEvent,
    IterationEvent,
    ReviewEvent,
    TasksEvent,
    VerificationEvent,
)
from ralph_lsp.runs.states import RunState

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"
ROOT = Path("/src/a project")
KEY = (ROOT, "a", "r-1")


def status() -> RunStatus:
    return RunStatus(
        run_id="r-1",
        change="a",
        root=ROOT,
        state=RunState.RUNNING,
        iteration=2,
        max_iterations=20,
        completed=1,
        total=4,
        reason="iteration 2 · story 1",
        started_at="2026-01-01T00:00:00.000Z",
        updated_at="2026-01-01T00:00:01.000Z",
        cost_usd=0.25,
        story="1",
        phase="agent",
        waiting=None,
        worktree=None,
        refusals=("Bash(make build)",),
    )


SAMPLES: dict[str, EngineEvent] = {
    "status": StatusEvent(status()),
    "log": LogEvent(ROOT, "a", "one\ntwo", "warning"),
    "iteration": IterationEvent(*KEY, "end", 2, None, None, {"n": 2, "exitCode": 0}),
    "verification": VerificationEvent(
        *KEY, ({"command": "pytest -q", "exitCode": 1, "durationMs": 5, "outputTail": "x"},), False
    ),
    "checkpoint": CheckpointEvent(*KEY, 2, "abc123", ("src/x.py",)),
    "guidance": GuidanceEvent(*KEY, "go on", 3),
    "tasks": TasksEvent(*KEY, "## 1. A\n\n- [x] 1.1 Done\n- [ ] 1.2 Ünicode\n"),
    "review": ReviewEvent(*KEY, {"round": 1, "verdict": "rejected", "tasksAdded": ["- [ ] R.1"]}),
    "end": EndEvent(*KEY, "succeeded", "every task is checked (4/4)"),
}


def documented() -> dict[str, tuple[str, ...]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Types", 1)[1].split("\n## ", 1)[0]
    out: dict[str, tuple[str, ...]] = {}
    for m in re.finditer(r"^\| `(\w+)` \| ([^|]*) \|", section, re.M):
        out[m.group(1)] = tuple(re.findall(r"`(\w+)`", m.group(2)))
    return out


def test_the_doc_lists_exactly_the_declared_types_and_fields() -> None:
    assert documented() == events.EVENTS


def test_the_doc_names_the_envelope_and_the_version() -> None:
    text = DOC.read_text(encoding="utf-8").split("## Types", 1)[0]
    assert set(re.findall(r"^\| `(\w+)` \|", text, re.M)) == set(events.ENVELOPE)
    assert f"`{events.VERSION}`" in text


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_encode_writes_the_declared_fields_and_decode_reads_them_back(kind: str) -> None:
    event = SAMPLES[kind]
    line = events.dumps(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    obj = json.loads(line)
    assert obj["v"] == events.VERSION and obj["type"] == kind
    assert tuple(k for k in obj if k not in events.ENVELOPE) == events.EVENTS[kind]
    assert events.loads(line) == event


def test_every_engine_event_type_is_in_the_stream() -> None:
    assert {type(e) for e in SAMPLES.values()} == set(EngineEvent.__args__)  # type: ignore[attr-defined]


def test_one_table_names_each_type_once_with_its_class() -> None:
    """The encoder and decoder are driven by TYPES alone: one row per type and per class."""
    assert [t.name for t in events.TYPES] == list(events.EVENTS)
    assert {t.name: t.cls for t in events.TYPES} == {k: type(e) for k, e in SAMPLES.items()}
    for row in events.TYPES:
        assert len({f.key for f in row.fields}) == len(row.fields), row.name


@pytest.mark.parametrize(
    "obj",
    [
        None,
        [],
        "x",
        {"v": 2, "type": "status"},
        {"v": 1, "type": "future-kind", "change": "a", "root": "file:///x"},
        {"v": 1, "type": "status", "status": {"runId": 1}},
        {"v": 1, "type": "log", "change": "a", "root": "http://x"},
        {"v": 1, "type": "end", "change": "a", "root": "file:///x"},
        {"v": 1, "type": "iteration", "change": "a", "root": "file:///x", "runId": "r", "n": "?"},
    ],
)
def test_decode_ignores_what_it_does_not_know_and_never_raises(obj: Any) -> None:
    assert events.decode(obj) is None


def test_loads_ignores_a_line_that_is_not_json() -> None:
    assert events.loads(b"{not json") is None
