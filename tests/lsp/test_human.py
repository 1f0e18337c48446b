"""Human checkpoints through a real LSP client (SPEC §3, §5 v2): ralph.run with guidance and
with a story, and a change whose open tasks are all blocked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from ralph_lsp.runs.history import load_records
from tests.lsp.conftest import CHANGE, Session, StartSession, wait_until

DEMO = {"agent": "demo", "env": {"RALPH_DEMO_DELAY": "0"}, "verifyWhen": "off"}


def final(s: Session) -> dict[str, Any] | None:
    if s.statuses and s.statuses[-1]["state"] != "running":
        return s.statuses[-1]
    return None


async def test_run_with_guidance_and_a_story(start_session: StartSession, workspace: Path) -> None:
    s = await start_session(workspace, init={"trusted": True}, settings=DEMO)
    started = await s.command(
        "ralph.run", {"change": CHANGE, "guidance": "Keep the greeting format", "story": "2"}
    )
    assert started["state"] == "running"
    end = await wait_until(lambda: final(s), timeout=60, what="the run's end")
    assert end["state"] == "succeeded", end
    stories = [st["story"] for st in s.statuses if st.get("story")]
    assert stories[0] == "2"
    assert list(dict.fromkeys(stories)) == ["2", "1", "3"]
    record = load_records(workspace, CHANGE)[0]
    assert record["story"] == "2"
    assert [(g["text"], g["deliveredIn"]) for g in record["guidance"]] == [
        ("Keep the greeting format", 1)
    ]
    [first] = (workspace / ".ralph").rglob("prompt-1.md")  # what the agent was given
    assert "## Guidance" in first.read_text() and "Keep the greeting format" in first.read_text()
    assert "Story in scope: 2" in first.read_text()


async def test_every_open_task_blocked_ends_stuck_without_a_spawn(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace, init={"trusted": True}, settings=DEMO)
    text = s.tasks_md.read_text().replace("- [ ]", "- [x]", 7)
    s.tasks_md.write_text(text + "  - blocked: a person must write the docs\n")
    await s.command("ralph.run", {"change": CHANGE})
    end = await wait_until(lambda: final(s), timeout=20, what="the run's end")
    assert end["state"] == "stuck"
    assert end["reason"] == "blocked: 3.3 a person must write the docs"
    assert end["iteration"] == 0
    record = load_records(workspace, CHANGE)[0]
    assert record["blocked"][0]["id"] == "3.3" and record["iterations"] == []


@pytest.mark.parametrize(
    ("arg", "code", "message"),
    [
        ({"guidance": 3}, -32602, '"guidance" must be text, got a number'),
        ({"story": ""}, -32602, '"story" must be a non-empty string'),
        ({"story": "7"}, -32803, "has no story '7' (stories: 1, 2, 3)"),
    ],
)
async def test_bad_guidance_or_story_is_refused_clearly(
    start_session: StartSession, workspace: Path, arg: dict[str, Any], code: int, message: str
) -> None:
    s = await start_session(workspace, init={"trusted": True}, settings=DEMO)
    with pytest.raises(JsonRpcException) as info:
        await s.command("ralph.run", {"change": CHANGE, **arg})
    assert info.value.code == code
    assert message in str(info.value.message)
    assert load_records(workspace, CHANGE) == []


async def test_history_gives_each_iterations_output_and_prompt_files(
    start_session: StartSession, workspace: Path
) -> None:
    from urllib.parse import unquote, urlparse

    s = await start_session(workspace, init={"trusted": True}, settings=DEMO)
    await s.command("ralph.run", {"change": CHANGE, "guidance": "Mind the greeting"})
    end = await wait_until(lambda: final(s), timeout=60, what="the run's end")
    assert end["state"] == "succeeded", end
    [run] = (await s.command("ralph.history", {"change": CHANGE}))["runs"]
    assert len(run["iterations"]) == 3
    for it in run["iterations"]:
        output = Path(unquote(urlparse(it["outputUri"]).path))
        prompt = Path(unquote(urlparse(it["promptUri"]).path))
        assert output.is_file() and output.stat().st_size > 0  # the agent's raw stream-json
        assert prompt.read_text().startswith("You are implementing the OpenSpec change")
    first = Path(unquote(urlparse(run["iterations"][0]["promptUri"]).path)).read_text()
    assert "Mind the greeting" in first
    # A removed file reads as null, never as a URI that does not open.
    Path(unquote(urlparse(run["iterations"][1]["outputUri"]).path)).unlink()
    [again] = (await s.command("ralph.history", {"change": CHANGE}))["runs"]
    assert again["iterations"][1]["outputUri"] is None
