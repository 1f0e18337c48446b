"""Budgets an agent's report cannot lift (issue: "a negative reported cost lifts the budget"):
a custom agent that reports ``total_cost_usd: -10`` once, then $2 an iteration, through the
real CLI, for one run and for a queue (the fake agent is a real subprocess)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.faults.conftest import make_change
from tests.faults.helpers import FaultEnv, assert_outcome

COST_AGENT = Path(__file__).resolve().parents[1] / "fake_agents" / "cost_sequence.py"


def _agent() -> str:
    return shlex.join([sys.executable, str(COST_AGENT)])


def _costs_env(fx: FaultEnv, costs: str) -> None:
    fx.env.update({"FAKE_COSTS": costs, "FAKE_COUNTER": str(fx.logs / "spawned")})


def _spawned(fx: FaultEnv) -> int:
    path = fx.logs / "spawned"
    return int(path.read_text()) if path.exists() else 0


def test_a_negative_cost_never_lowers_a_runs_total(fx: FaultEnv) -> None:
    _costs_env(fx, "-10,2")
    before = fx.tasks().read_bytes()
    result = fx.run_cli(
        "alpha", "--agent-command", _agent(), "--max-cost", "1", "--max-iterations", "5"
    )
    # Before the fix: 3 iterations, -10 + 2 + 2 = "$-6", and succeeded under a $1 budget.
    record = assert_outcome(fx, result, "failed", "maxCostUsd cannot be enforced")
    assert _spawned(fx) == 1
    assert "(or an invalid one)" in str(record["reason"])
    assert "total_cost_usd -10.0, not a cost" in result.stdout, result.stdout[-2000:]
    (iteration,) = record["iterations"]
    assert iteration["costUsd"] is None
    assert record.get("costUsd") in (None, 0), record.get("costUsd")
    # the one spawn checked one box, and only that
    assert fx.tasks().read_bytes() == before.replace(b"- [ ]", b"- [x]", 1)


def test_a_negative_cost_in_a_claude_preset_run_counts_as_nothing(fx: FaultEnv) -> None:
    # Without a budget the run goes on; the refused cost is logged and never subtracted.
    _costs_env(fx, "-10,2")
    result = fx.run_cli("alpha", "--agent-command", _agent(), "--max-iterations", "5")
    assert result.returncode == 0, result.stdout[-2000:]
    record = fx.record()
    assert (record["state"], record["reason"]) == ("succeeded", "every task is checked (3/3)")
    assert [i["costUsd"] for i in record["iterations"]] == [None, 2.0, 2.0]
    assert "total_cost_usd -10.0, not a cost" in result.stdout, result.stdout[-2000:]
    # the run's summary: $4, never $-6
    assert result.last_line.startswith("succeeded: every task is checked (3/3) · $4.0000 · ")


def test_a_negative_cost_never_refunds_a_queues_budget(fx: FaultEnv) -> None:
    make_change(fx.root, "beta")
    make_change(fx.root, "gamma")
    _costs_env(fx, "-10,2")
    out = fx.ralph(
        "run", "alpha", "beta", "gamma", "--root", str(fx.root), "--agent-command", _agent(),
        "--max-cost", "1", "--verify-when", "off", timeout=120,
    )  # fmt: skip
    assert out.returncode != 0, out.stdout + out.stderr
    (folder,) = (fx.root / ".ralph" / "queues").iterdir()
    record = json.loads((folder / "record.json").read_text())
    items = [(i["change"], i["state"], i["costUsd"]) for i in record["items"]]
    # Before the fix: alpha "cost" $-6, so beta and gamma ran on a $7 budget ($8 spent in all).
    # Now alpha's refused cost ends it (its budget cannot be enforced), beta's first $2
    # iteration spends the queue's $1, and gamma never starts.
    assert items == [
        ("alpha", "failed", None),
        ("beta", "exhausted", 2.0),
        ("gamma", "skipped", None),
    ], items
    assert _spawned(fx) == 2
    assert record["costUsd"] == 2.0
    assert "[ ]" in fx.tasks("gamma").read_text()
