"""``ralph.history`` answers records of the documented types, trusted or not (issue 25,
faults 5 and 9): planted markup stays text where text belongs, wrong-typed fields are null,
and the damage is logged once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.lsp.conftest import CHANGE, StartSession, wait_until

PLANTED = {
    "runId": "r-planted",
    "change": CHANGE,
    "state": "<b>failed</b>",
    "reason": {"html": "<a href='file:///etc/passwd'>x</a>"},
    "startedAt": "2025-01-02T00:00:00Z",
    "iterations": [
        {"n": "<img src=x>", "tasksChecked": 1},
        {"n": 1, "tasksChecked": "<a href='file:///etc/passwd'>open</a>", "costUsd": "1"},
        {"n": 2, "tasksChecked": 2, "checkpoint": ["x"], "filesChanged": "a.py"},
        "<script>",
    ],
}


async def test_planted_fields_come_back_typed_and_are_logged_once(
    start_session: StartSession, workspace: Path
) -> None:
    folder = workspace / ".ralph" / "runs" / "r-planted"
    folder.mkdir(parents=True)
    (folder / "record.json").write_text(json.dumps(PLANTED))
    s = await start_session(workspace, init={"trusted": False})
    first = await s.command("ralph.history", {"change": CHANGE})
    await s.command("ralph.history", {"change": CHANGE})
    (run,) = first["runs"]
    assert run["state"] == "<b>failed</b>"  # text stays text: the page escapes it
    assert run["reason"] is None
    assert [it["n"] for it in run["iterations"]] == [1, 2]
    one, two = run["iterations"]
    assert one["tasksChecked"] is None and one["costUsd"] is None
    assert two["tasksChecked"] == 2 and two["checkpoint"] is None and two["filesChanged"] is None
    await wait_until(lambda: "damaged history record" in s.logs(), what="the damage logged")
    assert s.logs().count("damaged history record") == 1
