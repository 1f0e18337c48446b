"""`ralph.run` with `changes` (SPEC §9): a queue through the real server, its
`ralph/queueStatus` notifications, `ralph/runStatus` naming the queue, `ralph.queues`,
`ralph.stopQueue`, and `ralph.onRunEnd`."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from tests.lsp.conftest import StartSession, plain, wait_until
from tests.queue.conftest import CHANGES, toolbox  # noqa: F401  (the fixture)


def record_queue_statuses(session: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    session.client.protocol.fm.features["ralph/queueStatus"] = lambda p: seen.append(plain(p))
    return seen


async def test_a_queue_runs_reports_and_ends_once(
    start_session: StartSession,
    toolbox: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    got = tmp_path / "ends.jsonl"
    save = "import sys, pathlib; pathlib.Path(sys.argv[1]).open('a').write(sys.stdin.read())"
    on_end = shlex.join([sys.executable, "-c", save, str(got)])
    s = await start_session(toolbox, settings={"agent": "demo", "onRunEnd": on_end})
    seen = record_queue_statuses(s)
    started = await s.command("ralph.run", {"changes": list(CHANGES[:2])})
    assert started["state"] == "running" and started["total"] == 2
    assert [i["change"] for i in started["items"]] == list(CHANGES[:2])
    queue_id = started["queueId"]
    await wait_until(lambda: seen and seen[-1]["endedAt"], timeout=120, what="the queue's end")
    ends = [q for q in seen if q["endedAt"]]
    assert len(ends) == 1, ends  # one end, however many changes
    end = ends[0]
    assert end["queueId"] == queue_id and end["state"] == "done"
    assert end["reason"] == "2/2 succeeded"
    assert [i["state"] for i in end["items"]] == ["succeeded", "succeeded"]
    positions = [q["position"] for q in seen]
    assert positions == sorted(positions) and positions[-1] == 2
    # Each run's status names its queue and its place in it.
    queued = {(st["change"], json.dumps(st["queue"])) for st in s.statuses if st.get("queue")}
    assert queued == {
        (c, json.dumps({"id": queue_id, "position": n, "total": 2}))
        for n, c in enumerate(CHANGES[:2], 1)
    }
    # ralph.queues lists it (from its record once it is over)
    listing = await s.command("ralph.queues", {})
    assert [q["queueId"] for q in listing["queues"]] == [queue_id]
    # onRunEnd: each run's end, then the queue's
    await wait_until(
        lambda: got.exists() and got.read_text().count("\n") >= 3,
        timeout=30,
        what="three end events",
    )
    kinds = [json.loads(line)["kind"] for line in got.read_text().splitlines()]
    # Each run's end, then the queue's, each once.
    assert kinds == ["run", "run", "queue"]


async def test_stop_queue_stops_the_running_change_and_drops_the_rest(
    start_session: StartSession,
    toolbox: Path,  # noqa: F811
) -> None:
    s = await start_session(toolbox, settings={"agent": "demo"}, env={"RALPH_DEMO_DELAY": "2"})
    seen = record_queue_statuses(s)
    await s.command("ralph.run", {"changes": list(CHANGES)})
    await wait_until(
        lambda: any(st["state"] == "running" for st in s.statuses), timeout=30, what="the first run"
    )
    stopped = await s.command("ralph.stopQueue", {})
    assert stopped["stopped"] == [CHANGES[0]]
    assert stopped["dropped"] == list(CHANGES[1:])
    assert stopped["state"] == "stopped"
    assert [i["state"] for i in stopped["items"]] == ["stopped", "dropped", "dropped"]
    assert stopped["reason"] == (
        f"0/3 succeeded; stopped by the user; dropped {CHANGES[1]}, {CHANGES[2]}"
    )
    await wait_until(lambda: seen and seen[-1]["endedAt"], what="the final queue status")


async def test_a_queue_is_refused_while_untrusted_and_with_bad_arguments(
    start_session: StartSession,
    toolbox: Path,  # noqa: F811
) -> None:
    s = await start_session(toolbox, settings={"agent": "demo"}, init={"trusted": False})
    for arg, message in [
        ({"changes": []}, '"changes" must be a non-empty list'),
        ({"changes": [CHANGES[0]], "change": CHANGES[0]}, "not both"),
        ({"changes": ["nope"]}, "unknown change 'nope'"),
        ({"changes": list(CHANGES)}, "not trusted"),
    ]:
        try:
            await s.command("ralph.run", arg)
        except Exception as exc:  # a JSON-RPC error
            assert message in str(exc), (arg, str(exc))
        else:
            raise AssertionError(f"{arg} was accepted")
    assert not (toolbox / ".ralph").exists()
