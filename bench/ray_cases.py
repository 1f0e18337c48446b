"""Remote runs on Ray (SPEC §9): what a Ray job adds to a run, against a local run of the same
change in the same bench run.

Both run ``add-slugify`` of ``examples/toolbox`` with the demo agent (one task per iteration,
three iterations, ``make test`` verifying) in a worktree, the local one through
:class:`~ralph_lsp.loop.engine.Engine`, the remote one through
:class:`~ralph_lsp.remote.ray_runs.RayRuns` on a real single-node cluster on 127.0.0.1 only
(``tests/ray/cluster.py``) with a bare repository on disk as the remote. Times are those the
operator sees:

- first iteration: ``start`` called → the first iteration's start event received (Ray: push of
  ``HEAD``, submit, the job's start and clone, and the log's delivery);
- per iteration: (first iteration's start → ``wait`` returned) / iterations (Ray: each
  iteration's push, the operator's fetch, and the log's delivery).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.common import median, rnd, scratch
from bench.report import Results

REPO = Path(__file__).resolve().parents[1]
TOOLBOX = REPO / "examples" / "toolbox"
CHANGE = "add-slugify"
# What most of the overhead is, on one machine: Ray's dashboard reads a job's log file and, at
# its end, sleeps 1 s before reading again (ray/dashboard/modules/job/utils.py).
LOG_NOTE = (
    "Ray delivers a job's log by tailing its file, sleeping 1 s at its end: events come up to"
    " 1 s late"
)
DEMO = {"RALPH_DEMO_DELAY": "0.05", "RALPH_DEMO_TASKS_PER_RUN": "1"}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _project(folder: Path) -> Path:
    """A git copy of examples/toolbox whose origin is a bare repository beside it."""
    work = folder / "toolbox"
    shutil.copytree(TOOLBOX, work)
    _git(work, "init", "-q", "-b", "main")
    _git(work, "-c", "user.name=b", "-c", "user.email=b@b", "add", "-A")
    _git(work, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "start")
    _git(folder, "init", "-q", "--bare", "remote.git")
    _git(work, "remote", "add", "origin", str(folder / "remote.git"))
    _git(work, "push", "-q", "origin", "main")
    return work


async def _timed(mode: str, folder: Path, address: str | None) -> dict[str, Any]:
    from ralph_lsp.loop.engine import Engine, EngineEvent
    from ralph_lsp.remote.ray_runs import RayRuns
    from ralph_lsp.runs.events import IterationEvent
    from ralph_lsp.settings import Settings

    work = _project(folder)
    first: list[float] = []

    def on_event(event: EngineEvent) -> None:
        if isinstance(event, IterationEvent) and event.phase == "start" and not first:
            first.append(time.perf_counter())

    runs: Engine | RayRuns = Engine(on_event) if mode == "local" else RayRuns(on_event, address)
    settings = Settings(agent="demo", env=dict(DEMO), isolation="worktree")
    t0 = time.perf_counter()
    await runs.start(work, CHANGE, settings)
    submitted = time.perf_counter()
    final = await runs.wait(work, CHANGE)
    done = time.perf_counter()
    if final.state != "succeeded" or not first:
        raise RuntimeError(f"{mode} run: {final.state}: {final.reason}")
    return {
        "start_s": submitted - t0,
        "first_iteration_s": first[0] - t0,
        "per_iteration_s": (done - first[0]) / final.iteration,
        "iterations": final.iteration,
    }


async def ray_overhead(results: Results, reps: int) -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        keys = ("ray_overhead_first_iteration_s", "ray_overhead_per_iteration_ms")
        results.skip(keys, "Ray is not installed: pip install 'ralph-lsp[ray]'")
        return
    from tests.ray.cluster import local_cluster

    t0 = time.perf_counter()
    with local_cluster() as address, scratch("ray") as tmp:
        cluster_s = time.perf_counter() - t0
        samples: dict[str, list[dict[str, Any]]] = {"local": [], "ray": []}
        for rep in range(reps + 1):  # one warm-up of each (imports, the cluster's first job)
            for mode in ("local", "ray"):
                sample = await _timed(mode, tmp / f"{mode}-{rep}", address)
                if rep:
                    samples[mode].append(sample)
    _put(results, samples, reps, cluster_s)


def _put(
    results: Results, samples: dict[str, list[dict[str, Any]]], reps: int, cluster_s: float
) -> None:
    def med(mode: str, key: str) -> float:
        return median([s[key] for s in samples[mode]])

    first = med("ray", "first_iteration_s") - med("local", "first_iteration_s")
    per = (med("ray", "per_iteration_s") - med("local", "per_iteration_s")) * 1000
    results.put("ray_overhead_first_iteration_s", rnd(first, 2), reps)
    results.put("ray_overhead_per_iteration_ms", rnd(per), reps)
    how = "median over reps, Ray run minus local run of the same change (demo agent, worktree)"
    results.details["ray_overhead"] = {
        "how": how,
        "why": LOG_NOTE,
        "cluster_start_s": rnd(cluster_s, 1),
        **{
            f"{mode}_{key}": rnd(med(mode, key), 3)
            for mode in ("local", "ray")
            for key in ("start_s", "first_iteration_s", "per_iteration_s")
        },
        "iterations": samples["ray"][0]["iterations"],
        "samples": {m: [{k: rnd(v, 3) for k, v in s.items()} for s in samples[m]] for m in samples},
    }
