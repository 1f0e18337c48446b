"""A change removed or renamed while it waits in a queue (issue 37, "Also"): it ends ``failed``
with a reason that says so, and the queue goes on with the next change. Through the real CLI,
with a fake agent (a real subprocess) that moves the waiting change's folder."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.faults.conftest import make_change
from tests.faults.helpers import FaultEnv

MOVER = Path(__file__).resolve().parents[1] / "fake_agents" / "move_change.py"


@pytest.mark.parametrize("how", ["removed", "renamed"])
def test_a_change_gone_while_it_waits_fails_clearly_and_the_queue_goes_on(
    fx: FaultEnv, how: str
) -> None:
    make_change(fx.root, "beta")
    make_change(fx.root, "gamma")
    changes = fx.root / "openspec" / "changes"
    fx.env["FAKE_MOVE_FROM"] = str(changes / "beta")
    fx.env["FAKE_MOVE_TO"] = str(changes / "beta-2") if how == "renamed" else ""
    agent = shlex.join([sys.executable, str(MOVER)])
    out = fx.ralph(
        "run", "alpha", "beta", "gamma", "--root", str(fx.root), "--agent-command", agent,
        "--verify-when", "off", timeout=120,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    (folder,) = (fx.root / ".ralph" / "queues").iterdir()
    record = json.loads((folder / "record.json").read_text())
    states = [(i["change"], i["state"]) for i in record["items"]]
    assert states == [("alpha", "succeeded"), ("beta", "failed"), ("gamma", "succeeded")]
    reason = record["items"][1]["reason"]
    assert reason.startswith("change 'beta' no longer exists"), reason
    assert f"beta: failed: {reason}" in out.stdout, out.stdout[-3000:]
    assert "[ ]" not in fx.tasks("gamma").read_text()
