"""An agent that floods its output — 100k lines fast, one 10 MB line, binary and invalid UTF-8,
ANSI escapes — through ``ralph-lsp run``: the run finishes normally, the terminal gets clean,
bounded UTF-8 lines, and the raw output is kept for the operator."""

from __future__ import annotations

import re

import pytest

from tests.faults.conftest import make_change
from tests.faults.helpers import FaultEnv, assert_outcome

ONE_TASK = "## 1. Only\n- [ ] 1.1 The one task\n"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize(
    ("kind", "marker"),
    [
        ("lines", "flood line 99999 of 100000"),
        ("long", "after the long line"),
        ("binary", "after the binary"),
        ("ansi", "after the escapes"),
    ],
)
def test_flood_through_the_cli(fx: FaultEnv, kind: str, marker: str) -> None:
    make_change(fx.root, "solo", ONE_TASK)
    result = fx.run_cli("solo", "--agent-command", fx.agent_command("flood", kind), timeout=90)
    assert_outcome(fx, result, "succeeded", "every task is checked (1/1)", change="solo")
    assert fx.tasks("solo").read_text() == ONE_TASK.replace("[ ]", "[x]")
    raw = (fx.logs / "cli.stdout").read_bytes()
    text = raw.decode("utf-8")  # strict: the terminal only ever gets valid UTF-8
    assert CONTROL.search(text) is None, "escape or control characters reached the terminal"
    lines = text.split("\n")
    assert any(marker in line for line in lines), "output after the flood was lost"
    assert "checked one task" in lines
    assert max(len(line) for line in lines) < 10_000, "a line reached the terminal uncapped"
    if kind == "lines":
        assert sum(1 for line in lines if line.startswith("flood line ")) == 100_000
    # The operator keeps the raw bytes of the iteration.
    record_dir = next((fx.root / ".ralph" / "runs").iterdir())
    raw_log = (record_dir / "iteration-1.log").read_bytes()
    if kind == "long":
        assert len(raw_log) > 10 * 1024 * 1024
    assert marker.encode() in raw_log
    assert result.elapsed < 60
