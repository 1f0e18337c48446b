"""Runners (SPEC §9): attach latency, requests during a flood that comes through a runner's
stream, and a runner's idle CPU and RSS."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bench.client import session
from bench.common import (
    PY,
    bench_env,
    cpu_seconds,
    median,
    memory_mb,
    percentile,
    rnd,
    scratch,
)
from bench.lsp_cases import FLOOD_MARKER, FLOOD_SOURCE, LENS_PROBE_GAP, _flood_once
from bench.report import Results

RUNNER = {"runsOutliveEditor": True, "verifyWhen": "off", "checkpoints": False}
SLEEPER = [PY, "-c", "import time; time.sleep(3600)"]


def _project(root: Path, change: str, tasks: str) -> Path:
    folder = root / "openspec" / "changes" / change
    folder.mkdir(parents=True)
    (folder / "tasks.md").write_text(tasks)
    return folder


async def _start_runner(root: Path, change: str) -> tuple[int, object]:
    """A detached runner whose agent sleeps: the runner has nothing to do but be there."""
    from ralph_lsp.runner.client import spawn
    from ralph_lsp.settings import settings_from_dict

    settings, _ = settings_from_dict({**RUNNER, "agent": "custom", "agentCommand": SLEEPER})
    spawned = await spawn(root, change, settings)
    return spawned.pid, spawned


async def _stop(root: Path, change: str) -> None:
    from ralph_lsp.runner.client import request
    from ralph_lsp.runner.live import find_live

    for live in find_live(root):
        if live.change == change:
            await request(live, {"type": "stop"})


async def runner(results: Results, attaches: int, idle_seconds: float, floods: int) -> None:
    with scratch("runner") as tmp:
        root = tmp.resolve()
        _project(root, "idle", "## 1. Wait\n\n- [ ] 1.1 Wait\n")
        pid, spawned = await _start_runner(root, "idle")
        try:
            await _attach_latency(results, root, attaches)
            await _idle(results, pid, idle_seconds)
        finally:
            await _stop(root, "idle")
            await asyncio.wait_for(spawned.process.wait(), 30)  # type: ignore[attr-defined]
        await _flood(results, root, floods)


async def _attach_latency(results: Results, root: Path, reps: int) -> None:
    """From starting a server to its first ralph/runStatus of the live run; and, alternated with
    it in the same run, the floor under it: a bare ``python -c "import pygls.lsp.server"``."""
    from bench.offline import pygls_import_ms

    samples: list[float] = []
    after_init: list[float] = []
    floor: list[float] = []
    env = bench_env()
    for _ in range(reps + 1):  # one warm-up of each
        t0 = time.perf_counter()
        async with session(root, RUNNER, env=env) as c:
            t_init = time.perf_counter()  # initialize answered
            ev = await c.wait_for(lambda e: e.method == "ralph/runStatus", timeout=30)
            if ev is None:
                raise RuntimeError("attach: no status of the live run\n" + c.describe_failure())
            samples.append((ev.t - t0) * 1000)
            after_init.append((ev.t - t_init) * 1000)
        floor.extend(wall for wall, _ in pygls_import_ms(1))
    samples, after_init, floor = samples[1:], after_init[1:], floor[1:]
    results.put("attach_latency_p50_ms", rnd(median(samples)), reps)
    results.details["attach_latency_p50_ms"] = {
        "how": "server process started → first ralph/runStatus of the live run it attached to",
        "p90": rnd(percentile(samples, 90)),
        # what attaching adds to the server's own start (startup_ms, a target of its own)
        "initialize_answered_to_first_status_p50_ms": rnd(median(after_init)),
        "samples": [rnd(s) for s in samples],
    }
    # No server can attach before pygls is imported: what is ours is the rest.
    over = median(samples) - median(floor)
    results.put("attach_latency_over_pygls_import_ms", rnd(over), reps)
    results.details["attach_latency_over_pygls_import_ms"] = {
        "how": "attach_latency_p50_ms minus the p50 of a cold `python -c 'import pygls.lsp.server'`"
        " measured alternately in the same case",
        "pygls_import_p50_ms": rnd(median(floor)),
        "pygls_import_ms_all": [rnd(f) for f in floor],
    }


async def _idle(results: Results, pid: int, seconds: float) -> None:
    await asyncio.sleep(2.0)  # settled
    c0, t0 = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(seconds)
    c1, t1 = cpu_seconds(pid), time.monotonic()
    results.put("runner_idle_cpu_percent", rnd(100 * (c1 - c0) / (t1 - t0), 3), f"{seconds:g} s")
    mem = memory_mb(pid)
    results.put("runner_rss_mb", rnd(mem["VmRSS"], 1), 1)
    results.details["runner_rss_mb"] = {"peak_mb": rnd(mem.get("VmHWM", 0.0), 1)}


async def _flood(results: Results, root: Path, floods: int, lines: int = 200_000) -> None:
    """ralph.run in a runner whose agent prints ``lines`` lines; codeLens probes meanwhile."""
    folder = _project(root, "flood", "## 1. Flood\n\n- [ ] 1.1 Print a lot\n- [ ] 1.2 More\n")
    settings = {
        **RUNNER,
        "agent": "custom",
        "agentCommand": [PY, "-c", FLOOD_SOURCE, str(lines)],
        "stopGraceSeconds": 1,
    }
    probes: list[float] = []
    rates: list[float] = []
    async with session(root, settings, line_marker=FLOOD_MARKER) as c:
        uri = c.open_document(folder / "tasks.md")
        await c.quiet(0.5, 10)
        for _ in range(floods):
            run = await _flood_once(c, root, uri, lines, probe=True)
            probes += run.probes
            rates.append(run.rate)
    results.put(
        "runner_request_p99_ms_during_flood",
        rnd(percentile(probes, 99)),
        f"{len(probes)} in {floods} floods",
    )
    results.details["runner_request_p99_ms_during_flood"] = {
        "p50": rnd(percentile(probes, 50)),
        "max": rnd(max(probes)) if probes else None,
        "probe_gap_ms": LENS_PROBE_GAP * 1000,
        "lines_per_s_through_the_runner": [round(r) for r in rates],
    }
