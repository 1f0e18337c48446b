"""Issue 30: a queue outlives its server (SPEC §9). Through real processes: a two-change queue
started through a real language server runs in a queue runner of its own; the server is
SIGKILLed during the first change; a new server shows the queue, the second change still runs,
and exactly one queue-end notification (``ralph/queueStatus`` with ``endedAt``) reaches it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import StartSession, client_profile, plain, start_session, wait_until  # noqa: F401  (fixtures)
from tests.queue.conftest import CHANGES, toolbox  # noqa: F401  (the fixture)
from tests.runner.conftest import runtime_dir  # noqa: F401  (the fixture)

SETTINGS = {"agent": "demo", "runsOutliveEditor": True, "checkpoints": False}
SLOW = {"RALPH_DEMO_DELAY": "0.5"}


def record_queue_statuses(session: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    session.client.protocol.fm.features["ralph/queueStatus"] = lambda p: seen.append(plain(p))
    return seen


# A real language server and a real runner, as tests/lsp (outside the unit tests): about 6 s.
@pytest.mark.slow
async def test_a_queue_outlives_its_server_and_the_next_server_follows_it_to_its_end(
    start_session: StartSession,  # noqa: F811
    toolbox: Path,  # noqa: F811
    runtime_dir: Path,  # noqa: F811
) -> None:
    first, second = CHANGES[:2]
    s1 = await start_session(toolbox, settings=SETTINGS, env=SLOW)
    started = await s1.command("ralph.run", {"changes": [first, second]})
    queue_id = started["queueId"]
    await wait_until(
        lambda: any(st["change"] == first and st["iteration"] >= 1 for st in s1.statuses),
        timeout=60,
        what="the first change's first iteration",
    )
    assert not any(st["change"] == second for st in s1.statuses)
    s1.process.kill()  # the editor's server dies, with no shutdown
    await s1.process.wait()

    s2 = await start_session(toolbox, settings=SETTINGS, env=SLOW)
    seen = record_queue_statuses(s2)
    listing = await s2.command("ralph.queues", {})
    [shown] = [q for q in listing["queues"] if q["queueId"] == queue_id]
    assert shown["state"] == "running" and shown["endedAt"] is None, shown
    assert [i["change"] for i in shown["items"]] == [first, second]

    await wait_until(lambda: any(q["endedAt"] for q in seen), timeout=120, what="the queue's end")
    await asyncio.sleep(1.5)  # time for a second end, which must not come
    ends = [q for q in seen if q["endedAt"]]
    assert len(ends) == 1, ends
    end = ends[0]
    assert end["queueId"] == queue_id and end["state"] == "done", end
    assert [i["state"] for i in end["items"]] == ["succeeded", "succeeded"], end
    # the second change ran after the first server was gone, and the new server followed it
    assert any(st["change"] == second and st["state"] == "succeeded" for st in s2.statuses)
    assert "- [ ]" not in (toolbox / "openspec" / "changes" / second / "tasks.md").read_text()
    listing = await s2.command("ralph.queues", {})
    [after] = [q for q in listing["queues"] if q["queueId"] == queue_id]
    assert after["endedAt"] and after["reason"] == "2/2 succeeded"
