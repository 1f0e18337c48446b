"""The review round (SPEC §13 "Review"): what the host's orchestration of one round costs, the
reviewer's own time left out.

- ``review_round_overhead_ms``: a run of examples/hello whose every task is checked, in a git
  work tree, reviewed by a reviewer that exits at once (``echo``): the round's time as its record
  says it (``startedAt`` to ``endedAt``: the work tree taken as a commit, the run's diff, the
  prompt, the spawn, the check of the task file and of what was written elsewhere) minus the
  same program's own time spawned bare (start to exit), p50 of each; sandboxed (the default),
  with the sandbox off in the details (there the writes are checked against git: one more
  snapshot).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path

from bench.common import EXAMPLE, bench_env, percentile, rnd, scratch
from bench.report import Results

CHANGE = "add-greeting-cli"


def _project(base: Path, i: int) -> Path:
    root = base / f"p{i}"
    shutil.copytree(EXAMPLE, root)
    tasks = root / "openspec" / "changes" / CHANGE / "tasks.md"
    tasks.write_text(tasks.read_text().replace("[ ]", "[x]"))
    env = bench_env(GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.com")
    env.update(GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@example.com")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *argv], cwd=root, env=env, check=True, capture_output=True)
    return root


def _ms(record: dict[str, object]) -> float:
    start = datetime.fromisoformat(str(record["startedAt"]).replace("Z", "+00:00"))
    end = datetime.fromisoformat(str(record["endedAt"]).replace("Z", "+00:00"))
    return (end - start).total_seconds() * 1000


async def _round_ms(root: Path, sandbox: str) -> float:
    from ralph_lsp.loop.engine import Engine
    from ralph_lsp.runs.history import load_records
    from ralph_lsp.runs.request import RunRequest
    from ralph_lsp.settings import Settings

    echo = shutil.which("echo") or "/bin/echo"
    settings = Settings(
        agent="custom",
        agent_command=(echo, "{prompt}"),
        verify_when="off",
        review_agent=(echo, "approved"),
        sandbox=sandbox,
    )
    engine = Engine(lambda _e: None)
    await engine.start(root, CHANGE, settings, RunRequest())
    status = await asyncio.wait_for(engine.wait(root, CHANGE), 60)
    assert status is not None and status.reason.endswith("review approved"), status
    [review] = load_records(root, CHANGE)[0]["reviews"]  # type: ignore[typeddict-item]
    return _ms(review)


async def _bare_ms(root: Path, sandbox: str) -> float:
    """The reviewer's own time: its program spawned as any agent is (in the run's sandbox,
    behind its bridge, when on), from the start to its exit."""
    from ralph_lsp.loop.sandboxing import RunSandbox
    from ralph_lsp.proc.process import AgentProcess, SpawnSpec
    from ralph_lsp.settings import Settings

    echo = shutil.which("echo") or "/bin/echo"
    spec = SpawnSpec([echo, "approved"], root, bench_env(), None)
    box = await RunSandbox.open(Settings(agent="custom", sandbox=sandbox), root, root, _quiet)
    spec = box.reviewer(spec, []) if box is not None else spec
    t0 = time.perf_counter()
    proc = await AgentProcess.start(spec)
    async for _ in proc.lines():
        pass
    await proc.wait()
    elapsed = (time.perf_counter() - t0) * 1000
    await proc.aclose()
    if box is not None:
        await box.close()
    return elapsed


def _quiet(_text: str, _level: str) -> None:
    pass


async def overhead(r: Results, reps: int) -> None:
    rounds: dict[str, list[float]] = {"auto": [], "off": []}
    alone: dict[str, list[float]] = {"auto": [], "off": []}
    with scratch("review-round") as base:
        await _round_ms(_project(base, -1), "auto")  # warm-up: page cache, bytecode
        for i in range(reps):  # back to back, the order alternating: load hits both
            for mode in ("auto", "off") if i % 2 == 0 else ("off", "auto"):
                root = _project(base, 2 * i + (mode == "off"))
                rounds[mode].append(await _round_ms(root, mode))
                alone[mode].append(await _bare_ms(root, mode))
    # the p50 of each round's difference: a shared machine's load comes and goes
    diff = {
        m: percentile([a - b for a, b in zip(rounds[m], alone[m], strict=True)], 50) for m in alone
    }
    r.put("review_round_overhead_ms", rnd(diff["auto"]), reps)
    r.details["review_round_overhead_ms"] = {
        "round_p50_ms": rnd(percentile(rounds["auto"], 50)),
        "reviewer_alone_p50_ms": rnd(percentile(alone["auto"], 50)),
        "sandbox_off_overhead_p50_ms": rnd(diff["off"]),
        "sandbox_off_round_p50_ms": rnd(percentile(rounds["off"], 50)),
    }
