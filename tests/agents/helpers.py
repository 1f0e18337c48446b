"""Shared helpers for the agent parser tests."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from ralph_lsp.agents.base import (
    Activity,
    AgentEvent,
    AgentProblem,
    LogLine,
    OutputParser,
    ResultInfo,
)

REPO = Path(__file__).resolve().parents[2]
# The folder `shared` beside the repository checkout (recorded CLI outputs live there).
SHARED = (REPO / ".." / "shared").resolve()
RECORDED = SHARED / "fixtures" / "recorded"
SAMPLES = SHARED / "fixtures"
CLAUDE_REAL = REPO / "tests" / "fixtures" / "claude_real"


def shared_file(*parts: str) -> Path:
    """A file under ``shared/fixtures`` beside the checkout; skips when it is absent."""
    path = SAMPLES.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"shared fixture not found beside the checkout (expected {path})")
    return path


def lines_of(path: Path) -> list[str]:
    """A recorded output file as the process layer delivers it: decoded with replacement
    characters, split on newlines, no trailing newline."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def run_parser(
    parser: OutputParser,
    stdout: Iterable[str] = (),
    stderr: Iterable[str] = (),
    exit_code: int | None = 0,
) -> list[AgentEvent]:
    """Feed stderr first, then stdout, then finish; every event in order."""
    events: list[AgentEvent] = []
    for line in stderr:
        events += parser.feed("stderr", line)
    for line in stdout:
        events += parser.feed("stdout", line)
    events += parser.finish(exit_code)
    return events


def logs(events: list[AgentEvent], kind: str | None = None) -> list[str]:
    return [e.text for e in events if isinstance(e, LogLine) and (kind is None or e.kind == kind)]


def problems(events: list[AgentEvent]) -> list[AgentProblem]:
    return [e for e in events if isinstance(e, AgentProblem)]


def results(events: list[AgentEvent]) -> list[ResultInfo]:
    return [e for e in events if isinstance(e, ResultInfo)]


def activity_count(events: list[AgentEvent]) -> int:
    return sum(1 for e in events if isinstance(e, Activity))
