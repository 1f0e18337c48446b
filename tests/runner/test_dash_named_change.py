"""A change whose name starts with "-" (issue: "a change named -x"): the foreground run took it
after ``--``, but every argv built for another process (the detached runner, the editor's
``ralph.run``, a queue's runner, a Ray job's entrypoint) passed it as ``--change -x``, which the
runner's parser read as a flag: ``argument --change: expected one argument``."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

from ralph_lsp.remote import job
from ralph_lsp.remote.remote_run import Plan, entrypoint
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings
from tests.lsp.conftest import CHANGE, StartSession, wait_until
from tests.runner.conftest import cli, fake_settings, wait_for
from tests.runner.test_cli_runs import flags

DASH = "-x"
FINAL = ("succeeded", "failed", "stuck", "exhausted", "stopped", "interrupted")


def _dash_change(root: Path) -> Path:
    folder = root / "openspec" / "changes" / DASH
    folder.mkdir(parents=True)
    (folder / "tasks.md").write_text("## 1. One\n- [ ] 1.1 one\n- [ ] 1.2 two\n")
    return folder


def _ended(root: Path) -> dict[str, Any] | None:
    from ralph_lsp.runs.history import load_records

    records = load_records(root, DASH)
    return records[0] if records and records[0].get("state") in FINAL else None


def test_run_detach_takes_a_change_named_like_a_flag(project: Path) -> None:
    folder = _dash_change(project)
    raw = fake_settings("check_one.py")
    started = cli("run", "--root", str(project), "--detach", *flags(raw), "--", DASH)
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().startswith("r-"), started.stdout
    record = wait_for(lambda: _ended(project), 90)
    assert record["state"] == "succeeded", record["reason"]
    assert record["change"] == DASH
    assert "[ ]" not in (folder / "tasks.md").read_text()


def test_a_detached_queue_takes_a_change_named_like_a_flag(project: Path) -> None:
    folder = _dash_change(project)
    raw = fake_settings("check_one.py")
    started = cli("run", "--root", str(project), "--detach", *flags(raw), "--", DASH, "a")
    assert started.returncode == 0, started.stderr
    record = wait_for(lambda: _ended(project), 90)
    assert record["state"] == "succeeded", record["reason"]
    assert "[ ]" not in (folder / "tasks.md").read_text()


async def test_the_editors_run_takes_a_change_named_like_a_flag(
    workspace: Path, start_session: StartSession, runtime_dir: Path
) -> None:
    folder = workspace / "openspec" / "changes" / DASH
    shutil.copytree(workspace / "openspec" / "changes" / CHANGE, folder)
    settings = {"runsOutliveEditor": True, "agent": "demo", "verifyWhen": "off"}
    session = await start_session(workspace, settings={**settings, "checkpoints": False})
    started = await session.command("ralph.run", {"change": DASH})
    assert started["change"] == DASH and started["runId"], started
    await wait_until(lambda: _ended(workspace), timeout=120, what="the run's end")
    record = _ended(workspace)
    assert record is not None and record["state"] == "succeeded", record


def test_a_ray_jobs_entrypoint_keeps_a_dash_change_and_guidance_values(tmp_path: Path) -> None:
    plan = Plan(None, "https://example.com/repo.git", "r-1", "ralph/-x/r-1", "abc", ".")  # type: ignore[arg-type]
    request = RunRequest(guidance=["- keep the API"], story="-s", max_iterations=3)
    argv = shlex.split(entrypoint(plan, DASH, Settings(), request))
    parsed = job.parse(argv[3:])
    assert (parsed.change, parsed.guidance, parsed.story) == (DASH, ["- keep the API"], "-s")
    assert parsed.max_iterations == 3 and parsed.branch == "ralph/-x/r-1"
