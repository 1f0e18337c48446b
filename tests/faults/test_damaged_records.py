"""One damaged history record never breaks history (issue 25, fault 9): a valid-JSON record
with odd fields is normalized, the other runs are still listed, and it is said once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.faults.helpers import FaultEnv

GOOD = {
    "runId": "r-good",
    "change": "alpha",
    "state": "succeeded",
    "reason": "every task is checked (3/3)",
    "startedAt": "2025-01-01T00:00:00Z",
    "endedAt": "2025-01-01T00:01:00Z",
    "iterations": [{"n": 1, "exitCode": 0, "costUsd": 0.5, "tasksChecked": 3}],
}
DAMAGED = {
    "runId": "r-damaged",
    "change": "alpha",
    "state": "failed",
    "reason": ["not", "text"],
    "startedAt": "2025-01-02T00:00:00Z",
    "endedAt": 7,
    "iterations": [
        {"n": 1, "exitCode": "0", "costUsd": "12 dollars", "tasksChecked": "<b>3</b>"},
        "not an object",
        {"n": "<img src=x onerror=alert(1)>", "costUsd": 1},
        {"n": 2, "costUsd": 0.25, "tasksChecked": 1, "filesChanged": ["a.py", 5]},
    ],
    "transitions": "nope",
}
NO_ITERATIONS = {"runId": "r-none", "change": "alpha", "state": "failed", "startedAt": "2025"}


def plant(root: Path, *records: dict[str, Any]) -> None:
    for record in records:
        folder = root / ".ralph" / "runs" / str(record["runId"])
        folder.mkdir(parents=True)
        (folder / "record.json").write_text(json.dumps(record))


def history(fx: FaultEnv, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralph_lsp", "history", "alpha", *extra],
        cwd=fx.root,
        env=fx.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_damaged_record_is_normalized_and_said_once(fx: FaultEnv) -> None:
    plant(fx.root, GOOD, DAMAGED, NO_ITERATIONS)
    shown = history(fx)
    assert shown.returncode == 0, shown.stderr
    assert "Traceback" not in shown.stderr
    listed = [line.split()[0] for line in shown.stdout.splitlines() if line.startswith("r-")]
    assert listed == ["r-damaged", "r-good", "r-none"]
    assert "$0.2500" in shown.stdout  # the cost written as text does not count
    damaged_lines = [line for line in shown.stderr.splitlines() if "damaged" in line]
    assert len(damaged_lines) == 1 and "r-damaged" in damaged_lines[0], shown.stderr
    as_json = history(fx, "--json")
    assert as_json.returncode == 0, as_json.stderr
    runs = {r["runId"]: r for r in json.loads(as_json.stdout)["runs"]}
    bad = runs["r-damaged"]
    assert bad["reason"] is None and bad["endedAt"] is None and bad["transitions"] == []
    assert [it["n"] for it in bad["iterations"]] == [1, 2]
    first, second = bad["iterations"]
    assert first["costUsd"] is None and first["tasksChecked"] is None
    assert first["exitCode"] is None
    assert second["filesChanged"] == ["a.py"]
    assert runs["r-none"]["iterations"] == []
    assert runs["r-good"] == {**GOOD, "iterations": runs["r-good"]["iterations"]}
