"""The run loop through real processes: outcomes, spawn counts, prompts, history, stop."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path

import pytest

from ralph_lsp.loop.engine import Engine, EngineError, EngineEvent, LogEvent, StatusEvent
from ralph_lsp.openspec.workspace import UnknownChangeError
from ralph_lsp.runs.history import load_records
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings
from tests.conftest import shared_path
from tests.engine.conftest import CHANGE, assert_gone, fake, spawns
from tests.tags import fake_agent_processes, scratch


class Recorder:
    def __init__(self) -> None:
        self.events: list[EngineEvent] = []

    def __call__(self, event: EngineEvent) -> None:
        self.events.append(event)

    @property
    def states(self) -> list[str]:
        return [e.status.state for e in self.events if isinstance(e, StatusEvent)]

    @property
    def logs(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, LogEvent)]


async def run_to_end(project: Path, settings: Settings, **kw: object) -> tuple[Recorder, object]:
    rec = Recorder()
    engine = Engine(rec)
    await engine.start(project, CHANGE, settings, RunRequest(**kw))  # type: ignore[arg-type]
    status = await asyncio.wait_for(engine.wait(project, CHANGE), 60)
    return rec, status


def tasks_text(project: Path) -> str:
    return (project / "openspec/changes" / CHANGE / "tasks.md").read_text()


async def test_one_task_per_spawn_succeeds_with_story_scope(project: Path, spawn_log: Path) -> None:
    # The loop's mechanics alone: this agent only checks boxes (verification: test_verification).
    settings = Settings(
        agent="custom", agent_command=tuple(fake("check_one.py")), verify_when="off"
    )
    rec, status = await run_to_end(project, settings)
    assert status.state == "succeeded", status.reason  # type: ignore[attr-defined]
    runs = spawns(spawn_log)
    assert len(runs) == 8
    assert "[ ]" not in tasks_text(project)
    # the story in scope moves on as stories finish
    stories = [p["prompt"].split("Story in scope: ")[1].split("\n")[0] for p in runs]  # type: ignore[union-attr]
    assert stories == ["1", "1", "1", "2", "2", "3", "3", "3"]
    record = load_records(project, CHANGE)[0]
    assert record["state"] == "succeeded"
    assert [i["tasksChecked"] for i in record["iterations"]] == [1] * 8
    assert record["transitions"][0]["state"] == "running"
    assert record["transitions"][-1]["state"] == "succeeded"
    assert (project / ".ralph" / ".gitignore").read_text() == "*\n"
    assert rec.states[0] == "running" and rec.states[-1] == "succeeded"


async def test_prompt_has_no_history_and_is_byte_identical(project: Path, spawn_log: Path) -> None:
    settings = Settings(agent="custom", agent_command=tuple(fake("no_progress.py")), stuck_after=3)
    _, status = await run_to_end(project, settings)
    assert status.state == "stuck"  # type: ignore[attr-defined]
    prompts = [p["prompt"] for p in spawns(spawn_log)]
    assert len(prompts) == 3
    assert prompts[0] == prompts[1] == prompts[2]
    lowered = prompts[0].lower()
    for word in ("iteration", "attempt", "previous", "tried", "failed", "stuck"):
        assert word not in lowered, word


@pytest.mark.parametrize(("after", "said"), [(2, "2 iterations"), (1, "1 iteration")])
async def test_stuck_after_n_iterations_without_progress(
    project: Path, spawn_log: Path, after: int, said: str
) -> None:
    settings = Settings(
        agent="custom", agent_command=tuple(fake("no_progress.py")), stuck_after=after
    )
    _, status = await run_to_end(project, settings)
    assert status.state == "stuck"  # type: ignore[attr-defined]
    assert status.reason == f"no task checked in {said}"  # type: ignore[attr-defined]
    assert len(spawns(spawn_log)) == after


async def test_exhausted_at_max_iterations(project: Path, spawn_log: Path) -> None:
    settings = Settings(agent="custom", agent_command=tuple(fake("check_one.py")))
    _, status = await run_to_end(project, settings, max_iterations=3)
    assert status.state == "exhausted"  # type: ignore[attr-defined]
    assert status.reason == "3 iterations ran (maxIterations) and 5 of 8 tasks remain"  # type: ignore[attr-defined]
    assert len(spawns(spawn_log)) == 3


async def test_guidance_is_delivered_once_and_recorded(project: Path, spawn_log: Path) -> None:
    settings = Settings(agent="custom", agent_command=tuple(fake("check_one.py")))
    await run_to_end(project, settings, max_iterations=2, guidance=["Use `$(rm -rf /)` literally"])
    prompts = [p["prompt"] for p in spawns(spawn_log)]
    assert "## Guidance" in prompts[0] and "$(rm -rf /)" in prompts[0]
    assert "## Guidance" not in prompts[1]
    record = load_records(project, CHANGE)[0]
    assert record["guidance"][0]["deliveredIn"] == 1


async def test_nothing_to_do_succeeds_without_spawning(project: Path, spawn_log: Path) -> None:
    tasks = project / "openspec/changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("[ ]", "[x]"))
    # The loop's mechanics alone: this agent only checks boxes (verification: test_verification).
    settings = Settings(
        agent="custom", agent_command=tuple(fake("check_one.py")), verify_when="off"
    )
    _, status = await run_to_end(project, settings)
    assert status.state == "succeeded"  # type: ignore[attr-defined]
    assert spawns(spawn_log) == []


async def test_missing_binary_fails_after_one_spawn_attempt(project: Path) -> None:
    settings = Settings(agent="custom", agent_command=("no-such-agent-binary-xyz", "{prompt}"))
    _, status = await run_to_end(project, settings)
    assert status.state == "failed"  # type: ignore[attr-defined]
    assert "no-such-agent-binary-xyz" in status.reason  # type: ignore[attr-defined]
    assert "not found" in status.reason  # type: ignore[attr-defined]


async def test_not_logged_in_claude_fails_with_auth_reason(project: Path, spawn_log: Path) -> None:
    rec_dir = shared_path("fixtures", "recorded")
    cmd = fake("replay.py", str(rec_dir / "run1.stdout"), str(rec_dir / "run1.stderr"), "1")
    settings = Settings(agent="custom", agent_command=tuple(cmd))
    _, status = await run_to_end(project, settings)
    assert status.state == "failed"  # type: ignore[attr-defined]
    assert "authenticate" in status.reason and "Not logged in" in status.reason  # type: ignore[attr-defined]
    assert len(spawns(spawn_log)) <= 2


RECORDED = Path(__file__).resolve().parents[1] / "fixtures"


def preset_binary(
    bin_dir: Path,
    name: str,
    argv_check: str,
    prompt_arg: str,
    recorded: Path,
    rc: int,
    then: str = "",
) -> None:
    """A ``name`` on PATH that replays a recording of the real CLI (``recorded`` + ``.stdout``
    / ``.stderr``) and exits ``rc``, once the shell test ``argv_check`` on its arguments
    holds (else exit 99); ``prompt_arg`` (e.g. ``$2``) is the argument that holds the prompt.
    With ``then``, that shell command runs after the replay instead (e.g. ``sleep 600``)."""
    bin_dir.mkdir(exist_ok=True)
    replay = fake("replay.py")
    script = bin_dir / name
    script.write_text(
        "#!/bin/sh\n"
        f"{argv_check} || exit 99\n"
        f'{"" if then else "exec "}"{replay[0]}" "{replay[1]}" -p "{prompt_arg}"'
        f' "{recorded}.stdout" "{recorded}.stderr" {rc}\n' + (f"exec {then}\n" if then else "")
    )
    script.chmod(0o755)


# As a sandboxed run calls Codex: its own sandbox stands down inside ours (agents/sandboxed.py).
CODEX_ARGV = '[ "$1" = exec ] && [ "$2" = --json ] && [ "$4" = danger-full-access ]'


async def test_an_agent_waiting_for_the_network_says_so_in_status_and_log(
    project: Path, spawn_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Codex (recorded) with no network: quick retries, then "waiting for network" for as long
    # as it takes. Here the network "comes back" (a file change follows), then it hangs.
    shared = shared_path("fixtures", "recorded")
    recorded = scratch(project) / "codex_offline"  # the replay reads it inside the sandbox
    recorded.with_suffix(".stdout").write_bytes(
        (shared / "codex_json.stdout").read_bytes()
        + b'{"type":"item.completed","item":{"id":"i1","type":"file_change",'
        b'"changes":[{"path":"notes.md","kind":"add"}],"status":"completed"}}\n'
    )
    recorded.with_suffix(".stderr").write_bytes((shared / "codex_json.stderr").read_bytes())
    bin_dir = tmp_path / "bin"
    preset_binary(bin_dir, "codex", CODEX_ARGV, "$5", recorded, 0, then="sleep 600")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    settings = Settings(agent="codex", iteration_timeout_seconds=3)
    rec, status = await run_to_end(project, settings, max_iterations=1)

    reasons = [e.status.reason for e in rec.events if isinstance(e, StatusEvent)]
    waiting = [i for i, r in enumerate(reasons) if r.startswith("waiting for the network: ")]
    assert len(waiting) == 1, reasons
    assert "Connection failed: error sending request" in reasons[waiting[0]]
    # once the agent acts again, the status says what it said before the wait
    assert reasons[waiting[0] + 1] == reasons[waiting[0] - 1]
    assert reasons[waiting[0] - 1].startswith("iteration 1 · story 1")
    (note,) = [t for t in rec.logs if t.startswith("⏸ the agent is waiting for the network")]
    assert note.endswith("the iteration still ends at its timeout (3s, iterationTimeoutSeconds)")
    assert status.state == "exhausted"  # type: ignore[attr-defined]
    assert len(spawns(spawn_log)) == 1
    record = load_records(project, CHANGE)[0]
    assert any(t["reason"].startswith("waiting for the network") for t in record["transitions"])


@pytest.mark.parametrize(
    ("agent", "argv_check", "prompt_arg", "recorded", "rc", "reason", "hint"),
    [
        # headless, Gemini (0.61) refuses at once in a folder it has not been told to trust
        (
            "gemini",
            '[ "$1" = -p ] && [ "$4" = stream-json ]',
            "$2",
            "gemini_real/untrusted",
            55,
            "the agent cannot work: Gemini CLI does not trust",
            "GEMINI_CLI_TRUST_WORKSPACE=true",
        ),
        # Codex (0.169) refuses outside a git repository (examples/hello is not one)
        (
            "codex",
            CODEX_ARGV,
            "$5",
            "codex_real/not_a_repo",
            1,
            "the agent cannot work: Codex runs only inside a git repository",
            "--skip-git-repo-check",
        ),
    ],
)
async def test_an_agent_refusing_the_folder_fails_after_one_spawn_saying_the_way_out(
    project: Path,
    spawn_log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    agent: str,
    argv_check: str,
    prompt_arg: str,
    recorded: str,
    rc: int,
    reason: str,
    hint: str,
) -> None:
    bin_dir = tmp_path / "bin"
    preset_binary(bin_dir, agent, argv_check, prompt_arg, RECORDED / recorded, rc)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    before = tasks_text(project)
    rec, status = await run_to_end(project, Settings(agent=agent))
    assert status.state == "failed"  # type: ignore[attr-defined]
    assert status.reason.startswith(reason)  # type: ignore[attr-defined]
    assert hint in status.reason  # type: ignore[attr-defined]
    assert len(spawns(spawn_log)) == 1  # the preset's argv passed the check, and only once
    last = (RECORDED / f"{recorded}.stderr").read_text().splitlines()[-1]
    last = re.sub(r"\x1b\[[0-9;]*m", "", last)  # the log shows it without its colours
    assert any(last in text for text in rec.logs)  # the agent's own words reach the user too
    assert tasks_text(project) == before


async def test_same_startup_error_twice_fails(
    project: Path, spawn_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A startup error: exited non-zero before printing anything.
    monkeypatch.setenv("FAKE_EXIT", "7")
    monkeypatch.setenv("FAKE_SILENT", "1")
    settings = Settings(agent="custom", agent_command=tuple(fake("no_progress.py")), stuck_after=5)
    _, status = await run_to_end(project, settings)
    assert status.state == "failed"  # type: ignore[attr-defined]
    assert "twice" in status.reason  # type: ignore[attr-defined]
    assert len(spawns(spawn_log)) == 2


async def test_an_agent_that_printed_and_exited_nonzero_is_judged_by_progress(
    project: Path, spawn_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A custom agent that works (it prints) but exits 1 is not a failed start: no progress in
    # stuckAfter iterations makes it stuck, never "failed the same way twice".
    monkeypatch.setenv("FAKE_EXIT", "1")
    settings = Settings(agent="custom", agent_command=tuple(fake("no_progress.py")), stuck_after=3)
    _, status = await run_to_end(project, settings)
    assert status.state == "stuck", status.reason  # type: ignore[attr-defined]
    assert status.reason == "no task checked in 3 iterations"  # type: ignore[attr-defined]
    assert len(spawns(spawn_log)) == 3


async def test_iteration_timeout_counts_as_no_progress(project: Path) -> None:
    settings = Settings(
        agent="custom",
        agent_command=tuple(fake("sleep_forever.py")),
        iteration_timeout_seconds=0.5,
        stuck_after=2,
        stop_grace_seconds=0.5,
    )
    t0 = time.monotonic()
    rec, status = await run_to_end(project, settings)
    assert status.state == "stuck"  # type: ignore[attr-defined]
    assert time.monotonic() - t0 < 15
    assert any("timed out" in line for line in rec.logs)


async def test_stop_kills_the_whole_tree(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pidfile = scratch(project) / "pids.txt"
    monkeypatch.setenv("FAKE_AGENT_PID_FILE", str(pidfile))
    settings = Settings(
        agent="custom",
        agent_command=tuple(fake("ignore_sigterm_with_children.py")),
        stop_grace_seconds=0.5,
    )
    rec = Recorder()
    engine = Engine(rec)
    await engine.start(project, CHANGE, settings)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pidfile.exists() and len(pidfile.read_text().split()) >= 3:
            break
        await asyncio.sleep(0.05)
    pids = fake_agent_processes()  # the host's pids: the file has the sandbox's
    assert len(pids) >= 3
    with pytest.raises(EngineError, match="already running"):
        await engine.start(project, CHANGE, settings)
    status = await asyncio.wait_for(engine.stop(project, CHANGE), 10)
    assert status.state == "stopped"
    assert_gone(pids)
    with pytest.raises(EngineError, match="is not running"):
        await engine.stop(project, CHANGE)
    record = load_records(project, CHANGE)[0]
    assert record["state"] == "stopped"


async def test_unknown_change_and_path_names_are_refused(project: Path) -> None:
    engine = Engine()
    for name in ("nope", "../hello", "archive", ""):
        with pytest.raises(UnknownChangeError, match="known: add-greeting-cli"):
            await engine.start(project, name, Settings())


async def test_tasks_md_removed_mid_run_fails_clearly(project: Path, tmp_path: Path) -> None:
    tasks = project / "openspec/changes" / CHANGE / "tasks.md"
    script = tmp_path / "remover.py"
    script.write_text(f"import os\nos.remove({str(tasks)!r})\nprint('removed')\n")
    settings = Settings(agent="custom", agent_command=(__import__("sys").executable, str(script)))
    _, status = await run_to_end(project, settings)
    assert status.state == "failed"  # type: ignore[attr-defined]
    assert "missing" in status.reason  # type: ignore[attr-defined]


async def test_history_record_is_valid_json_with_spec_fields(project: Path) -> None:
    settings = Settings(agent="custom", agent_command=tuple(fake("check_one.py")))
    await run_to_end(project, settings, max_iterations=1)
    folder = next((project / ".ralph" / "runs").iterdir())
    record = json.loads((folder / "record.json").read_text())
    assert set(record) >= {
        "runId",
        "change",
        "root",
        "startedAt",
        "endedAt",
        "state",
        "reason",
        "transitions",
        "iterations",
        "guidance",
    }
    it = record["iterations"][0]
    assert set(it) == {
        "n",
        "checkpoint",  # null outside git (SPEC §8)
        "filesChanged",
        "startedAt",
        "endedAt",
        "exitCode",
        "tasksChecked",
        "costUsd",
        "costEstimated",  # costUsd estimated from tokens at a list price (Codex, Gemini)
        "numTurns",
        "usage",  # inputTokens, cachedInputTokens, cacheWriteTokens, outputTokens (§15)
        "agentUsage",  # the agent's own usage, as it reported it
        "model",  # SPEC §15 receipts: the model it ran, and why
        "modelReason",
        "costSource",  # reported, estimated, or null with no cost
        "tasks",  # the tasks it checked
        "endReason",  # why its process ended
        "verification",  # null when it did not run after this iteration (SPEC §3)
        "conformance",  # the conformance table after that verification (SPEC §13)
        "refusals",  # tool calls the agent was refused (SPEC §4 v2)
    }
    assert (folder / "iteration-1.log").read_bytes().startswith(b"checked one task")


def test_a_record_left_running_by_a_dead_process_reads_as_interrupted(
    tmp_path: Path, inspection: str
) -> None:
    from ralph_lsp.runs.history import RunHistory

    hist = RunHistory(tmp_path, "r-dead", lambda m: None)
    hist.save(
        {
            "runId": "r-dead",
            "change": "c",
            "state": "running",
            "reason": "iteration 2",
            "startedAt": "2026-01-01T00:00:00.000Z",
        }
    )
    (hist.dir / "owner.pid").write_text("999999999\n")
    (rec,) = load_records(tmp_path, "c")
    assert rec["state"] == "interrupted" and rec["reason"].startswith("interrupted:")
    (hist.dir / "owner.pid").write_text(f"{os.getpid()} whatever\n")
    (rec,) = load_records(tmp_path, "c")
    assert rec["state"] == "running"  # this process is alive: the run is live


def test_a_record_owned_by_a_killed_cli_reads_as_interrupted(
    project: Path, inspection: str
) -> None:
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ralph_lsp",
            "run",
            CHANGE,
            "--root",
            str(project),
            "--agent-command",
            " ".join(fake("sleep_forever.py")),
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not load_records(project, CHANGE):
        time.sleep(0.05)
    assert load_records(project, CHANGE)[0]["state"] == "running"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (rec,) = load_records(project, CHANGE)
    assert rec["state"] == "interrupted" and rec["reason"].startswith("interrupted:")
