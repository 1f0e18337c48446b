"""Human checkpoints through real processes (SPEC §2, §3 v2): blocked tasks end a run at once
or are skipped, a run may start with guidance, and a run may start with one story."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.loop.engine import Engine, EngineError
from ralph_lsp.runs.history import load_records
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings
from tests.engine.conftest import CHANGE, fake, spawns

TOKEN = "needs the staging API token (a person must create it)"


def tasks_md(project: Path) -> Path:
    return project / "openspec" / "changes" / CHANGE / "tasks.md"


def block(project: Path, task_id: str, why: str) -> None:
    """Mark a task blocked as docs/guide/runs.md says: a `- blocked:` line indented under it."""
    path = tasks_md(project)
    lines = path.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if f"] {task_id} " in line)
    lines.insert(at + 1, f"  - blocked: {why}")
    path.write_text("\n".join(lines))


def demo(**more: Any) -> Settings:
    """The demo agent (it skips blocked tasks, as the prompt asks), prompts recorded."""
    more.setdefault("verify_when", "off")
    return Settings(
        agent="custom", agent_command=tuple(fake("demo_logged.py", "-p", "{prompt}")), **more
    )


async def run(project: Path, settings: Settings, **kw: Any) -> Any:
    engine = Engine()
    await engine.start(project, CHANGE, settings, RunRequest(**kw))
    return await asyncio.wait_for(engine.wait(project, CHANGE), 60)


def stories_in_scope(log: Path) -> list[str]:
    found = []
    for spawn in spawns(log):
        m = re.search(r"^Story in scope: (.+)$", str(spawn["prompt"]), re.M)
        found.append(m.group(1) if m else "")
    return found


async def test_a_change_whose_open_tasks_are_all_blocked_ends_stuck_at_once(
    project: Path, spawn_log: Path
) -> None:
    text = tasks_md(project).read_text().replace("- [ ]", "- [x]", 6)  # 3.2 and 3.3 stay open
    tasks_md(project).write_text(text)
    block(project, "3.2", TOKEN)
    block(project, "3.3", "a decision on the docs site")
    t0 = time.monotonic()
    status = await run(project, demo())
    took = time.monotonic() - t0
    assert status.state == "stuck"
    assert status.reason == f"blocked: 3.2 {TOKEN} (and 1 more blocked task)"
    assert took < 1.0, f"took {took:.2f}s"  # SPEC: under a second (measured: about 10 ms)
    assert spawns(spawn_log) == []  # nothing spawned
    record = load_records(project, CHANGE)[0]
    assert record["state"] == "stuck"
    assert [(b["id"], b["line"], b["reason"]) for b in record["blocked"]] == [
        ("3.2", 14, TOKEN),
        ("3.3", 16, "a decision on the docs site"),
    ]
    assert record["iterations"] == []


async def test_a_blocked_story_waits_while_the_others_are_finished(
    project: Path, spawn_log: Path
) -> None:
    block(project, "2.1", TOKEN)
    block(project, "2.2", "which case rules apply is for a person to decide")
    status = await run(project, demo())
    assert status.state == "stuck", status.reason
    assert status.reason == f"blocked: 2.1 {TOKEN} (and 1 more blocked task)"
    assert stories_in_scope(spawn_log) == ["1", "3"]  # story 2 is never in scope
    for spawn in spawns(spawn_log):
        prompt = str(spawn["prompt"])
        assert "Add the `--shout` flag" not in prompt.split("Leave these blocked")[0]
    text = tasks_md(project).read_text()
    assert text.count("- [x]") == 6 and "- [ ] 2.1" in text and "- [ ] 2.2" in text
    record = load_records(project, CHANGE)[0]
    assert [b["id"] for b in record["blocked"]] == ["2.1", "2.2"]


async def test_in_change_scope_the_prompt_lists_blocked_tasks_to_leave_alone(
    project: Path, spawn_log: Path
) -> None:
    block(project, "1.2", TOKEN)
    status = await run(project, demo(iteration_scope="change"))
    assert status.state == "stuck"
    assert status.reason == f"blocked: 1.2 {TOKEN}"
    prompt = str(spawns(spawn_log)[0]["prompt"])
    assert "Leave these blocked tasks alone: a person must unblock them." in prompt
    assert f"- 1.2 (blocked: {TOKEN})" in prompt
    assert "- [ ] 1.2" in tasks_md(project).read_text()  # the agent left it


async def test_unblocking_is_deleting_the_line(project: Path, spawn_log: Path) -> None:
    block(project, "1.1", TOKEN)
    text = (
        tasks_md(project)
        .read_text()
        .replace("- [ ] 1.2", "- [x] 1.2")
        .replace("- [ ] 1.3", "- [x] 1.3")
    )
    text = re.sub(r"- \[ \] ([23]\.)", r"- [x] \1", text)
    tasks_md(project).write_text(text)
    assert (await run(project, demo())).state == "stuck"
    tasks_md(project).write_text(text.replace(f"  - blocked: {TOKEN}\n", ""))
    status = await run(project, demo())
    assert status.state == "succeeded", status.reason
    assert stories_in_scope(spawn_log) == ["1"]


async def test_guidance_at_start_is_in_the_first_prompt_and_recorded(
    project: Path, spawn_log: Path
) -> None:
    status = await run(
        project, demo(), guidance=["Keep the greeting format unchanged"], max_iterations=2
    )
    assert status.state == "exhausted"
    prompts = [str(s["prompt"]) for s in spawns(spawn_log)]
    assert "## Guidance" in prompts[0] and "Keep the greeting format unchanged" in prompts[0]
    assert "## Guidance" not in prompts[1]
    record = load_records(project, CHANGE)[0]
    assert [(g["text"], g["deliveredIn"]) for g in record["guidance"]] == [
        ("Keep the greeting format unchanged", 1)
    ]


async def test_a_run_started_with_a_story_works_on_it_first_then_as_usual(
    project: Path, spawn_log: Path
) -> None:
    status = await run(project, demo(), story="3")
    assert status.state == "succeeded", status.reason
    assert stories_in_scope(spawn_log) == ["3", "1", "2"]
    assert load_records(project, CHANGE)[0]["story"] == "3"


async def test_a_story_run_in_change_scope_starts_with_the_story(
    project: Path, spawn_log: Path
) -> None:
    status = await run(project, demo(iteration_scope="change"), story="2")
    assert status.state == "succeeded", status.reason
    assert stories_in_scope(spawn_log) == ["2", ""]  # then the whole change


@pytest.mark.parametrize(
    ("story", "prepare", "message"),
    [
        ("9", None, "has no story '9' (stories: 1, 2, 3)"),
        ("1", "done", "story 1 (Command line): every task is checked; nothing to run"),
        ("2", "blocked", "story 2 (Shouting): every open task is blocked; nothing to run"),
    ],
)
async def test_a_story_that_cannot_run_is_refused_before_anything_starts(
    project: Path, spawn_log: Path, story: str, prepare: str | None, message: str
) -> None:
    if prepare == "done":
        path = tasks_md(project)
        path.write_text(re.sub(r"- \[ \] (1\.)", r"- [x] \1", path.read_text()))
    elif prepare == "blocked":
        block(project, "2.1", TOKEN)
        block(project, "2.2", TOKEN)
    with pytest.raises(EngineError, match=re.escape(message)):
        await Engine().start(project, CHANGE, demo(), RunRequest(story=story))
    assert load_records(project, CHANGE) == []
    assert spawns(spawn_log) == []


async def test_guidance_at_start_is_not_used_up_by_a_spawn_that_failed_to_start(
    project: Path, spawn_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fault 4 of the review: the first spawn exits before printing anything (a startup error),
    # so the guidance must reach the next spawn, and deliveredIn names that iteration.
    monkeypatch.setenv("FAKE_MARKER", str(spawn_log.parent / "failed-once"))
    settings = Settings(
        agent="custom",
        agent_command=tuple(fake("silent_fail_once.py", "-p", "{prompt}")),
        verify_when="off",
    )
    status = await run(project, settings, guidance=["Prefer argparse"], max_iterations=3)
    assert status.state == "exhausted", status.reason
    prompts = [str(s["prompt"]) for s in spawns(spawn_log)]
    assert ["Prefer argparse" in p for p in prompts] == [True, True, False]
    record = load_records(project, CHANGE)[0]
    assert [(i["n"], i["exitCode"]) for i in record["iterations"]] == [(1, 7), (2, 0), (3, 0)]
    assert [(g["text"], g["deliveredIn"]) for g in record["guidance"]] == [("Prefer argparse", 2)]


def test_the_prompt_says_how_to_mark_a_task_blocked_and_to_go_on(project: Path) -> None:
    from ralph_lsp.loop.prompt import build_prompt
    from ralph_lsp.openspec.workspace import Change

    change = Change(project, CHANGE)
    prompt = build_prompt(change, change.read_doc(), scope="story", verify_commands=[])
    assert (
        "A task that only a person can do (a credential to create, a decision to make): leave"
        " its box unchecked, add a line `- blocked: <why>` indented under it, and go on with the"
        " other tasks." in prompt
    )
