"""`ralph-lsp run CHANGE --agent claude` with the real Claude Code CLI, offline.

The `claude` preset runs as shipped (`claude -p {prompt} --output-format stream-json --verbose`
plus `ralph.agentArgs`); the tests add only what they need: `--allowedTools "Edit Write Read
Bash"` through `--agent-args` (ralph's `agentArgs`) and the offline environment through `--env`
(ralph's `env`). The scripted model server makes every spawn check exactly one task.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from .conftest import Change
from .harness import offline_env
from .scripted_server import ScriptedModel

AGENT_ARGS = '--permission-mode acceptEdits --allowedTools "Edit Write Read Bash"'


def _project(base: Path, n_tasks: int = 3) -> Change:
    root = base / "project"
    folder = root / "openspec" / "changes" / "demo"
    folder.mkdir(parents=True)
    (folder / "proposal.md").write_text("## Why\nOffline Claude Code test.\n", encoding="utf-8")
    tasks = folder / "tasks.md"
    tasks.write_text(
        "## 1. Scripted work\n\n"
        + "".join(f"- [ ] 1.{i} Scripted task number {i}\n" for i in range(1, n_tasks + 1)),
        encoding="utf-8",
    )
    return Change(root=root, name="demo", folder=folder, tasks=tasks)


@dataclass
class RalphRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    history: dict[str, Any]
    timed_out: bool = False

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    @property
    def last_line(self) -> str:
        return self.lines[-1] if self.lines else ""

    @property
    def record(self) -> dict[str, Any]:
        runs = self.history.get("runs") or []
        assert runs, f"no run in the history:\n{self.stdout}\n{self.stderr}"
        return runs[0]  # type: ignore[no-any-return]


def ralph_run(
    claude_bin: Path,
    server: ScriptedModel,
    change: Change,
    base: Path,
    *,
    retries: int | None = 0,
    extra: list[str] | None = None,
    timeout: float = 120,
    agent_args: str | None = AGENT_ARGS,
    drop_env: tuple[str, ...] = (),
    verb: tuple[str, ...] = ("run",),
) -> RalphRun:
    """Run `ralph-lsp run demo --agent claude …` to its end (or SIGTERM it after `timeout`);
    the agent's HOME is `base/agent-home`, its offline environment less `drop_env`. `verb` is
    the subcommand and what comes before the change's name (`("plan",)` plans it)."""
    agent_home = base / "agent-home"
    agent_home.mkdir(exist_ok=True)
    agent_env = offline_env(claude_bin, server.url, agent_home, retries=retries)
    for name in drop_env:
        agent_env.pop(name, None)
    del agent_env["PATH"]  # PATH comes from ralph's own environment (it finds `claude` there)
    own_env = {
        "PATH": os.pathsep.join(
            [
                str(claude_bin.parent),
                str(Path(sys.executable).parent),
                "/usr/local/bin",
                "/usr/bin",
                "/bin",
            ]
        ),
        "LANG": "C.UTF-8",
        "HOME": str(base),
        "RALPH_BACKOFF_SECONDS": "1",  # the engine's back-off when no reset time is named
    }
    cli = [sys.executable, "-m", "ralph_lsp"]
    argv = [
        *cli,
        *verb,
        change.name,
        "--root",
        str(change.root),
        "--agent",
        "claude",
        *(["--agent-args", agent_args] if agent_args is not None else []),
        *[a for k, v in agent_env.items() for a in ("--env", f"{k}={v}")],
        *(extra or []),
    ]
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        env=own_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.send_signal(signal.SIGTERM)  # ralph stops the agent's tree, as on Ctrl-C
        try:
            out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    seconds = time.monotonic() - start
    hist = subprocess.run(
        [*cli, "history", change.name, "--root", str(change.root), "--json"],
        env=own_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    history = json.loads(hist.stdout) if hist.returncode == 0 and hist.stdout.strip() else {}
    return RalphRun(proc.returncode, out, err, seconds, history, timed_out)


def _iteration_seconds(record: dict[str, Any]) -> list[float]:
    def at(s: str) -> datetime:
        return datetime.fromisoformat(s.replace("Z", "+00:00"))

    return [
        (at(it["endedAt"]) - at(it["startedAt"])).total_seconds() for it in record["iterations"]
    ]


# ---- (a) and (d): a 3-task change, one run shared by the tests that read it --------------------


@dataclass
class SharedRun:
    run: RalphRun
    change: Change
    server: ScriptedModel


@pytest.fixture(scope="module")
def three_task_run(
    claude_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedRun]:
    base = tmp_path_factory.mktemp("ralph-claude")
    change = _project(base, 3)
    with ScriptedModel() as server:
        run = ralph_run(claude_bin, server, change, base)
        yield SharedRun(run, change, server)


def test_three_tasks_succeed_in_three_iterations(three_task_run: SharedRun) -> None:
    run, change, server = three_task_run.run, three_task_run.change, three_task_run.server
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.last_line.startswith("succeeded:"), run.stdout
    assert change.unchecked() == 0 and change.checked() == 3
    # Sandboxed by default (SPEC §10): the scripted server on the host's 127.0.0.1 was reached
    # only through the egress proxy, its host allowed as the base URL's.
    said = [line for line in run.lines if line.startswith("sandbox: ")]
    assert said and said[0].startswith("sandbox: bwrap ") and server.url.split("//")[1] in said[0]
    assert run.record["sandbox"]["kind"] == "bwrap"

    reqs = server.message_requests()
    assert [r.reply for r in reqs] == ["read", "edit", "done"] * 3
    assert all(r.stream for r in reqs)

    record = run.record
    assert record["state"] == "succeeded"
    assert record["change"] == "demo"
    iterations = record["iterations"]
    assert [it["n"] for it in iterations] == [1, 2, 3]
    for it in iterations:
        assert it["exitCode"] == 0
        assert it["tasksChecked"] == 1
        assert it["numTurns"] == 3
        assert isinstance(it["costUsd"], float) and it["costUsd"] > 0
        assert isinstance(it["usage"], dict) and it["usage"]["outputTokens"] > 0  # the receipt's
        assert it["agentUsage"]["output_tokens"] == it["usage"]["outputTokens"]  # the CLI's own
        assert it["model"] == "claude-opus-5-5" and it["costSource"] == "reported"
    times = _iteration_seconds(record)
    print(f"per-iteration seconds: {[round(t, 2) for t in times]}; whole run {run.seconds:.2f}s")
    assert all(t < 30 for t in times), times


def test_output_is_readable(three_task_run: SharedRun) -> None:
    """SPEC §4: assistant text, `→ Read …`, `→ Edit …` (paths relative to the project) and a
    one-line iteration summary with duration, turns and cost."""
    lines = three_task_run.run.lines
    tasks_rel = "openspec/changes/demo/tasks.md"
    assert lines.count("I'll read the task list first.") == 3, lines
    assert lines.count("Done.") == 3
    assert sum(1 for ln in lines if ln.strip() == f"→ Read {tasks_rel}") == 3, lines
    assert sum(1 for ln in lines if ln.strip() == f"→ Edit {tasks_rel}") == 3, lines
    summaries = [ln for ln in lines if "summary" in ln.lower()]
    assert len(summaries) >= 3, lines
    for s in summaries[:3]:
        assert "3 turns" in s and "$" in s, s
    assert not any(ln.lstrip().startswith("{") for ln in lines), "raw JSON leaked into the output"


# ---- (b) a bad key ---------------------------------------------------------------------------


def test_bad_key_fails_with_an_authentication_reason(claude_bin: Path, tmp_path: Path) -> None:
    change = _project(tmp_path, 3)
    with ScriptedModel("auth") as server:
        run = ralph_run(claude_bin, server, change, tmp_path, retries=0)
        spawns = len(server.message_requests())  # retries 0: one request per spawn
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.last_line.startswith("failed:"), run.stdout
    assert "authenticat" in run.last_line.lower(), run.last_line
    assert 1 <= spawns <= 2
    assert run.record["state"] == "failed"
    assert "authenticat" in (run.record["reason"] or "").lower()
    assert len(run.record["iterations"]) <= 2
    assert change.checked() == 0
    assert "Invalid API key" in run.stdout  # the CLI's own words reach the operator


def test_bad_key_with_the_clis_own_retries_fails_fast(claude_bin: Path, tmp_path: Path) -> None:
    """Without CLAUDE_CODE_MAX_RETRIES (a user's normal setup) the CLI retries a 401 ten times
    with back-off; its first `api_retry` event (error_status 401, error authentication_failed)
    already says the key is bad, so the run should fail within seconds, not minutes."""
    change = _project(tmp_path, 3)
    with ScriptedModel("auth") as server:
        run = ralph_run(claude_bin, server, change, tmp_path, retries=None, timeout=30)
        requests = len(server.message_requests())
    assert not run.timed_out, f"still running after 30 s:\n{run.stdout}"
    assert run.returncode == 1
    assert run.last_line.startswith("failed:"), run.stdout
    assert "authenticat" in run.last_line.lower()
    assert requests <= 4, f"the CLI was left retrying a bad key ({requests} requests)"
    assert run.record["state"] == "failed"
    assert len(run.record["iterations"]) == 1


# ---- (c) rate limits and overload ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["rate_limit", "overloaded"])
def test_service_limits_wait_and_retry_without_counting(
    mode: str, claude_bin: Path, tmp_path: Path
) -> None:
    """Two 429s (or 529s) with CLAUDE_CODE_MAX_RETRIES=0: two spawns fail at once. With
    --stuck-after 1 and --max-iterations 1, counting either of them would end the run stuck or
    exhausted; instead the run waits, retries and succeeds."""
    change = _project(tmp_path, 1)
    with ScriptedModel(mode, fail_count=2) as server:
        run = ralph_run(
            claude_bin,
            server,
            change,
            tmp_path,
            retries=0,
            extra=["--stuck-after", "1", "--max-iterations", "1"],
        )
        replies = [r.reply for r in server.message_requests()]
    status = {"rate_limit": 429, "overloaded": 529}[mode]
    assert replies[:2] == [f"error:{'rate_limit' if status == 429 else 'overloaded'}_error"] * 2
    assert replies[2:] == ["read", "edit", "done"]
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.last_line.startswith("succeeded:"), run.stdout
    assert change.checked() == 1
    waits = [ln for ln in run.lines if "rate limited" in ln.lower() or "waiting" in ln.lower()]
    assert len(waits) >= 2, run.stdout
    record = run.record
    assert record["state"] == "succeeded"
    assert sum(it["tasksChecked"] for it in record["iterations"]) == 1
    assert any("rate limit" in (t.get("reason") or "").lower() for t in record["transitions"])


def test_the_clis_own_retries_do_not_disturb_the_loop(claude_bin: Path, tmp_path: Path) -> None:
    """With the CLI's default retries a 429 is retried inside the iteration (an `api_retry`
    event): the iteration still checks its task and the run needs no extra spawn."""
    change = _project(tmp_path, 1)
    with ScriptedModel("rate_limit", fail_count=1, retry_after=1) as server:
        run = ralph_run(claude_bin, server, change, tmp_path, retries=None)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.last_line.startswith("succeeded:")
    assert len(run.record["iterations"]) == 1
    assert any("retry" in ln.lower() and "429" in ln for ln in run.lines), run.stdout


def test_an_edit_of_a_big_file_shows_no_raw_json(claude_bin: Path, tmp_path: Path) -> None:
    change = _project(tmp_path, 1)
    filler = "".join(f"Note {i}: " + "lorem ipsum dolor sit amet " * 6 + "\n" for i in range(1800))
    with change.tasks.open("a", encoding="utf-8") as f:
        f.write("\n" + filler)  # ~320 KB
    with ScriptedModel() as server:
        run = ralph_run(claude_bin, server, change, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert change.checked() == 1
    leaked = [ln[:120] for ln in run.lines if ln.lstrip().startswith("{")]
    assert not leaked, leaked


def test_the_default_preset_lets_the_agent_run_the_checks_and_records_a_refusal(
    claude_bin: Path, tmp_path: Path
) -> None:
    """SPEC §4 v2, with the preset exactly as shipped (no --agent-args): the model asks to run
    the verification command through Bash and it runs; a command nobody allowed is refused, and
    the refusal is said and recorded."""
    change = _project(tmp_path, n_tasks=1)
    marker = change.root / "ran.log"
    (change.root / "check.py").write_text(
        f"open({str(marker)!r}, 'a').write('ran\\n')\n", encoding="utf-8"
    )
    commands = ["python3 check.py", "python3 -c 'print(1)'"]
    with ScriptedModel(run_commands=commands) as server:
        run = ralph_run(
            claude_bin, server, change, tmp_path, agent_args=None,
            extra=["--verify", "python3 check.py", "--max-iterations", "2"],
        )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # `<state>: <reason>`, then what the money bought (` · $… per verified task · …`)
    assert run.last_line.split(" · $")[0] == (
        "succeeded: every task is checked (1/1); verification passed (python3 check.py)"
    )
    # Once by the agent (allowed without asking), once by the verification.
    assert marker.read_text().splitlines() == ["ran", "ran"]
    [iteration] = run.record["iterations"]
    assert [r["rule"] for r in iteration["refusals"]] == ["Bash(python3 -c 'print(1)')"]
    assert "⚠ refused: Bash(python3 -c 'print(1)') — allow it with ralph.allowedTools" in run.stdout
