"""Opening a folder whose ``.ralph/`` came with it (a cloned repository) never touches a file
outside it, untrusted or trusted.

Found in review (round four): at ``initialize`` the server looks for live runs and queues; a
forged queue live file whose run id was an absolute or ``../`` path, its pid gone, made it
delete ``<runId>.json`` and create ``<runId>/record.json`` and ``<runId>.ended.json`` wherever
that pointed; a forged run live file's ``change`` did the same with ``<change>.ended.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.faults.test_stranger_ralph import forged_live, tree
from tests.lsp.conftest import CHANGE, StartSession, wait_until

RUN_ID = "r-20200101-000000-1abcde"
SENTINEL = "q-20200101-000000-1abcde"  # a real-looking dead queue: handled last (sorted)


def plant(root: Path, outside: Path) -> Path:
    """Forged queue and run live files aiming outside; returns the sentinel's live file."""
    queues = root / ".ralph" / "live" / "queues"
    queues.mkdir(parents=True)
    for n, target in enumerate([str(outside / "q-abs"), "../../../../outside/q-rel"]):
        forged = forged_live(root, target, "queue")
        (queues / f"a{n}.json").write_text(json.dumps(forged))
    (outside / "q-abs.json").write_text(json.dumps(forged_live(root, "x", "queue")))
    record = root / ".ralph" / "runs" / RUN_ID / "record.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"runId": RUN_ID, "change": CHANGE, "state": "running"}))
    by_change = forged_live(root, RUN_ID, str(outside / "victim"))
    (root / ".ralph" / "live" / "a.json").write_text(json.dumps(by_change))
    (outside / "victim.json").write_text(json.dumps(by_change))
    sentinel = queues / f"{SENTINEL}.json"
    sentinel.write_text(json.dumps(forged_live(root, SENTINEL, SENTINEL)))
    return sentinel


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
async def test_forged_live_files_at_initialize_never_touch_outside(
    workspace: Path, start_session: StartSession, trusted: bool
) -> None:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("keep me\n")
    sentinel = plant(workspace, outside)
    before = tree(outside)
    await start_session(workspace, init={"trusted": trusted})
    # The server's look for live queues marks the sentinel's dead queue interrupted: by then
    # every forged file (sorted before it) has been looked at too.
    await wait_until(lambda: not sentinel.exists(), timeout=20, what="the dead queue handled")
    await wait_until(
        lambda: not any(p.name.endswith(".ended.json") for p in sentinel.parent.iterdir()),
        timeout=20,
        what="its ended note taken",
    )
    assert tree(outside) == before
    assert not (outside.parent.parent / "outside" / "q-rel").exists()
    assert os.path.exists(workspace / ".ralph" / "live" / "a.json")  # damaged: left, ignored
