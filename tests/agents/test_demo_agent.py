"""The bundled demo agent, run as a real subprocess on a temporary tasks.md."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.agents import build_invocation
from ralph_lsp.agents.base import AgentEvent
from ralph_lsp.agents.claude import ClaudeParser
from ralph_lsp.demo.agent import MODEL, check_box, find_story, find_tasks_file
from tests.tasks_reference import parse_tasks

from .helpers import REPO, activity_count, logs, problems, results

TASKS = """# Tasks

## 1. Implementation
- [ ] 1.1 Add index
- [x] 1.2 Already done
- [ ] 1.3 Third
  - [ ] 1.3.1 Nested

## 2. Docs
- [ ] 2.1 Write docs
* [ ] 2.2 Another bullet
"""


def env(**extra: str) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    e["RALPH_DEMO_DELAY"] = "0"
    e.pop("RALPH_DEMO_TASKS_PER_RUN", None)
    e.update(extra)
    return e


def prompt_for(path: Path, story: str | None = None) -> str:
    lines = ["You are implementing the OpenSpec change.", f"Tasks file: {path}", "", "## Scope"]
    if story is not None:
        lines.append(f"Story in scope: {story}")
    return "\n".join(lines) + "\n"


def run_demo(
    prompt: str, cwd: Path, *, fmt: str = "stream-json", stdin: bool = False, **extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "ralph_lsp.demo.agent", "--output-format", fmt]
    if not stdin:
        argv += ["-p", prompt]
    return subprocess.run(
        argv,
        input=prompt if stdin else None,
        stdin=None if stdin else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env(**extra),
        timeout=60,
    )


def parse(proc: subprocess.CompletedProcess[str]) -> list[AgentEvent]:
    p = ClaudeParser()
    events: list[AgentEvent] = []
    for line in proc.stdout.splitlines():
        events += p.feed("stdout", line)
    for line in proc.stderr.splitlines():
        events += p.feed("stderr", line)
    return events + p.finish(proc.returncode)


def done_ids(path: Path) -> list[str | None]:
    return [t.id for t in parse_tasks(path.read_text()).tasks if t.done]


@pytest.fixture
def tasks_md(tmp_path: Path) -> Path:
    folder = tmp_path / "openspec" / "changes" / "demo"
    folder.mkdir(parents=True)
    path = folder / "tasks.md"
    path.write_text(TASKS)
    return path


def test_story_scope_checks_only_that_story(tasks_md: Path, tmp_path: Path) -> None:
    proc = run_demo(prompt_for(tasks_md, "1"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert done_ids(tasks_md) == ["1.1", "1.2", "1.3", "1.3.1"]
    events = parse(proc)
    assert problems(events) == [] and activity_count(events) == 3
    (result,) = results(events)
    assert not result.is_error and result.cost_usd == 0 and result.num_turns == 5
    assert result.usage is not None and result.usage["output_tokens"] == 0
    text = logs(events, "text")
    assert [t for t in text if t.startswith("Working on")] == [
        "Working on 1.1 Add index",
        "Working on 1.3 Third",
        "Working on 1.3.1 Nested",
    ]
    assert logs(events, "tool") == ["→ Edit openspec/changes/demo/tasks.md"] * 3
    assert MODEL in logs(events, "info")[0] and "not an AI" in MODEL
    assert logs(events, "summary")[0].startswith("iteration summary: ")
    # Every stdout line is Claude-style stream-json.
    first = json.loads(proc.stdout.splitlines()[0])
    assert first["type"] == "system" and first["subtype"] == "init" and first["model"] == MODEL
    last = json.loads(proc.stdout.splitlines()[-1])
    assert last["type"] == "result" and last["subtype"] == "success" and last["is_error"] is False
    assert last["total_cost_usd"] == 0 and isinstance(last["duration_ms"], int)


def test_edit_event_names_the_line(tasks_md: Path, tmp_path: Path) -> None:
    proc = run_demo(prompt_for(tasks_md, "2"), tmp_path)
    edits = [
        block["input"]
        for line in proc.stdout.splitlines()
        for block in json.loads(line).get("message", {}).get("content", [])
        if block.get("type") == "tool_use"
    ]
    assert [(e["file_path"], e["old_string"], e["new_string"]) for e in edits] == [
        (str(tasks_md), "- [ ] 2.1 Write docs", "- [x] 2.1 Write docs"),
        (str(tasks_md), "* [ ] 2.2 Another bullet", "* [x] 2.2 Another bullet"),
    ]


def test_whole_change_without_story_line(tasks_md: Path, tmp_path: Path) -> None:
    proc = run_demo(prompt_for(tasks_md), tmp_path)
    assert proc.returncode == 0
    assert parse_tasks(tasks_md.read_text()).all_done


def test_tasks_per_run_limits_each_run(tasks_md: Path, tmp_path: Path) -> None:
    runs = 0
    while not parse_tasks(tasks_md.read_text()).all_done:
        proc = run_demo(prompt_for(tasks_md), tmp_path, RALPH_DEMO_TASKS_PER_RUN="2")
        assert proc.returncode == 0
        assert activity_count(parse(proc)) <= 2
        runs += 1
        assert runs < 10
    assert runs == 3  # five open tasks, two per run


def test_nothing_left_is_a_quick_success(tasks_md: Path, tmp_path: Path) -> None:
    tasks_md.write_text("## 1. A\n- [x] 1.1 done\n")
    proc = run_demo(prompt_for(tasks_md, "1"), tmp_path)
    events = parse(proc)
    assert proc.returncode == 0 and activity_count(events) == 0
    assert not results(events)[0].is_error


def test_missing_tasks_file_is_an_error_result(tmp_path: Path) -> None:
    proc = run_demo(prompt_for(tmp_path / "nope" / "tasks.md"), tmp_path)
    assert proc.returncode == 1
    events = parse(proc)
    (result,) = results(events)
    assert result.is_error and "tasks file not found" in (result.text or "")
    assert activity_count(events) == 0


def test_prompt_without_marker_is_an_error(tmp_path: Path) -> None:
    proc = run_demo("just do it", tmp_path)
    assert proc.returncode == 1 and results(parse(proc))[0].is_error


def test_unknown_story_is_an_error(tasks_md: Path, tmp_path: Path) -> None:
    proc = run_demo(prompt_for(tasks_md, "9"), tmp_path)
    assert proc.returncode == 1
    assert "story '9'" in (results(parse(proc))[0].text or "")
    assert tasks_md.read_text() == TASKS


def test_prompt_on_stdin_and_text_output(tasks_md: Path, tmp_path: Path) -> None:
    proc = run_demo(prompt_for(tasks_md, "2"), tmp_path, fmt="text", stdin=True)
    assert proc.returncode == 0
    assert "Working on 2.1 Write docs" in proc.stdout.splitlines()
    assert "not an AI" in proc.stdout.splitlines()[0]
    assert done_ids(tasks_md) == ["1.2", "2.1", "2.2"]


def test_runs_from_the_demo_preset_argv(tasks_md: Path, tmp_path: Path) -> None:
    inv = build_invocation("demo", None, [], prompt_for(tasks_md, "1"), tmp_path / "p.md")
    proc = subprocess.run(
        inv.argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=tmp_path, env=env()
    )
    assert proc.returncode == 0, proc.stderr
    events: list[AgentEvent] = []
    for line in proc.stdout.splitlines():
        events += inv.parser.feed("stdout", line)
    assert activity_count(events) == 3 and not results(events)[0].is_error


def test_bytes_line_endings_and_mode_are_preserved(tmp_path: Path) -> None:
    path = tmp_path / "tasks.md"
    original = b"## 1. A\r\n- [ ] 1.1 caf\xe9 \xff bytes\r\n- [ ] 1.2 second\r\n\tno newline at end"
    path.write_bytes(original)
    path.chmod(0o640)
    proc = run_demo(prompt_for(path, "1"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert path.read_bytes() == original.replace(b"- [ ]", b"- [x]")
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.md"]  # no temp file left


def test_odd_boxes_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "tasks.md"
    path.write_text("- []  1.1 empty box\n1. [~] 1.2 tilde\n-  [ ]  1.3 padded\n")
    proc = run_demo(prompt_for(path), tmp_path)
    assert proc.returncode == 0
    assert path.read_text() == "- [x]  1.1 empty box\n1. [x] 1.2 tilde\n-  [x]  1.3 padded\n"


def read_events_until(proc: subprocess.Popen[str], needle: str) -> list[str]:
    seen: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never appeared in {seen!r}")


def start(prompt: str, cwd: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ralph_lsp.demo.agent",
            "-p",
            prompt,
            "--output-format",
            "stream-json",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env(**extra),
    )


def test_concurrent_edits_are_kept(tasks_md: Path, tmp_path: Path) -> None:
    proc = start(prompt_for(tasks_md, "1"), tmp_path, RALPH_DEMO_DELAY="0.6")
    try:
        read_events_until(proc, "Working on 1.1")
        # While the demo pauses, someone else edits the file: inserts a line and ticks 2.1.
        text = tasks_md.read_text()
        text = text.replace("## 1. Implementation\n", "## 1. Implementation\nA note.\n")
        text = text.replace("- [ ] 2.1", "- [x] 2.1")
        tasks_md.write_text(text)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0
    final = tasks_md.read_text()
    assert "A note.\n" in final and "- [x] 2.1 Write docs" in final
    assert done_ids(tasks_md) == ["1.1", "1.2", "1.3", "1.3.1", "2.1"]


def test_sigterm_exits_promptly_with_143(tasks_md: Path, tmp_path: Path) -> None:
    proc = start(prompt_for(tasks_md, "1"), tmp_path, RALPH_DEMO_DELAY="30")
    try:
        read_events_until(proc, "Working on 1.1")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=5)
        assert time.monotonic() - t0 < 2
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 143
    assert tasks_md.read_text() == TASKS
    assert sorted(p.name for p in tasks_md.parent.iterdir()) == ["tasks.md"]


# --- the helpers, in process -------------------------------------------------------------


def test_markers() -> None:
    prompt: Any = "x\nTasks file: /a b/tasks.md  \nStory in scope: 2\n"
    assert find_tasks_file(prompt) == Path("/a b/tasks.md")
    assert find_story(prompt) == "2"
    assert find_tasks_file("- **Tasks file:** `/q/tasks.md`") == Path("/q/tasks.md")
    assert find_story("no story here") is None
    assert find_tasks_file("nothing") is None


def test_check_box() -> None:
    assert check_box("  - [ ] 1.1 a [link](x)") == "  - [x] 1.1 a [link](x)"
    assert check_box("1) [ ]x") == "1) [x]x"
