"""How the cost grows with the work: many changes, several runs at once, a long run.

- ``scale``: 1k / 3k / 10k changes — ``changes --json`` against ``openspec list --json``, server
  start to the diagnostics of every tasks.md (with ``ralph.status`` probed meanwhile), RSS, and
  on-disk edits to one change among them.
- ``watch_limit``: the server in a user namespace whose inotify watch limit is lower than the
  number of changes; edits to changes all over the project must still be seen.
- ``parallel``: 1 / 2 / 4 / 8 demo-agent runs of different changes at once — ``ralph.status``
  latency and the server's CPU (the agents' own not counted).
- ``soak``: one run of 1000 short iterations of an agent that checks one box and prints a lot —
  the server's RSS over it, and the size of ``.ralph/`` at the end.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from bench import lsp_cases, offline, openspec
from bench.client import BenchClient, session
from bench.common import (
    bench_env,
    cpu_seconds,
    make_workspace,
    median,
    memory_mb,
    percentile,
    rnd,
    scratch,
)
from bench.report import Results

SIZES = (1000, 3000, 10000)
RUN_COUNTS = (1, 2, 4, 8)
STATUS_PROBE_GAP = 0.01  # seconds between ralph.status probes
EDITED = "edited"  # the change whose tasks.md the bench edits


def _project(root: Path, changes: int) -> Path:
    """``changes`` changes from the corpus plus one more whose tasks.md the bench edits."""
    make_workspace(root, changes)
    folder = root / "openspec" / "changes" / EDITED
    folder.mkdir()
    path = folder / "tasks.md"
    path.write_text(lsp_cases._edit_text(0))
    return path


def _diagnosed(c: BenchClient, start: int, seen: dict[str, float]) -> int:
    """Record when each tasks.md first got its diagnostics, from event index ``start`` on; the
    next index. Other files' diagnostics (OpenSpec validation's, SPEC §11, which the server
    sends after every tasks.md's) are not what the key measures."""
    events = c.events
    end = len(events)
    for i in range(start, end):
        ev = events[i]
        if ev.method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS and ev.params.uri.endswith(
            "/tasks.md"
        ):
            seen.setdefault(ev.params.uri, ev.t)
    return end


async def _all_diagnostics(c: BenchClient, count: int, timeout: float) -> float | None:
    """perf_counter() when the diagnostics of ``count`` distinct tasks.md files had arrived
    (None: never)."""
    seen: dict[str, float] = {}
    checked = 0

    def done() -> bool:
        nonlocal checked
        checked = _diagnosed(c, checked, seen)
        return len(seen) >= count

    if not await c.wait_until(done, timeout):
        return None
    return max(seen.values())


def _status(c: BenchClient) -> Any:
    return c.command("ralph.status", {})


# -- many changes ------------------------------------------------------------------------------
async def scale(results: Results, sizes: tuple[int, ...], reps: int, per_mode: int) -> None:
    try:
        openspec_argv: list[str] | None = openspec.command()
    except openspec.Unavailable as exc:
        openspec_argv = None
        results.skip(("scale_changes_10k_vs_openspec",), str(exc))
    by_size: dict[str, dict[str, Any]] = {}
    with scratch("scale") as tmp:
        root = tmp.resolve()
        edited = _project(root, 0)
        made = 0
        for k, n in enumerate(sizes):  # one project, grown from one size to the next
            make_workspace(root, n - made, first=made)
            made = n
            row: dict[str, Any] = {}
            if openspec_argv is not None:
                row["list"] = offline.list_vs_openspec(root, openspec_argv, reps)
            first = 1 + k * 2 * per_mode  # each series edits on from where the last one left
            row.update(await _server_at_scale(root, n + 1, edited, per_mode, first))
            by_size[str(n)] = row
            print(f"bench: scale: {n} changes done", file=sys.stderr, flush=True)
    results.details["scale"] = {"changes": list(sizes), "by_changes": by_size}
    big = by_size.get("10000")
    if big is None:
        why = "skipped: the 10,000-change case is not run by --quick"
        results.skip(
            (
                "scale_changes_10k_vs_openspec",
                "scale_initialize_to_all_diagnostics_ms",
                "scale_rss_mb_10k",
                "scale_edit_to_diagnostics_p50_ms_10k",
            ),
            why,
        )
        return
    if "list" in big:
        results.put("scale_changes_10k_vs_openspec", big["list"]["ratio"], reps)
    results.put("scale_initialize_to_all_diagnostics_ms", big["all_diagnostics_ms"], 1)
    results.put("scale_rss_mb_10k", big["rss_mb"], 1)
    results.put(
        "scale_edit_to_diagnostics_p50_ms_10k", big["edit_to_diagnostics"]["p50"], 2 * per_mode
    )


async def _server_at_scale(
    root: Path, files: int, edited: Path, per_mode: int, first: int
) -> dict[str, Any]:
    client = BenchClient({})
    probes: list[tuple[float, float]] = []
    stop = asyncio.Event()
    t0 = time.perf_counter()
    await client.start_server(bench_env())
    try:
        await client.initialize(root)
        t_init = time.perf_counter()
        prober = asyncio.create_task(
            client.probe(lambda: _status(client), stop, probes, STATUS_PROBE_GAP)
        )
        try:
            t_all = await _all_diagnostics(client, files, timeout=120)
        finally:
            stop.set()
            await prober
        if t_all is None:
            raise RuntimeError(
                f"scale: diagnostics of {files} files never all arrived\n"
                + client.describe_failure()
            )
        await client.quiet(0.5, 30)
        assert client.pid is not None
        mem = memory_mb(client.pid)
        cpu = cpu_seconds(client.pid)
        samples, misses = await lsp_cases.edit_samples(client, edited, per_mode, first=first)
    finally:
        await client.close()
    during = [ms for t, ms in probes if t <= t_all]
    diag = samples["plain"]["diagnostics"] + samples["atomic"]["diagnostics"]
    refresh = samples["plain"]["refresh"] + samples["atomic"]["refresh"]
    return {
        "all_diagnostics_ms": rnd((t_all - t0) * 1000, 1),
        "initialize_answered_ms": rnd((t_init - t0) * 1000, 1),
        "status_requests_while_publishing": len(during),
        "status_p50_ms_while_publishing": rnd(percentile(during, 50)),
        "status_p99_ms_while_publishing": rnd(percentile(during, 99)),
        "status_max_ms_while_publishing": rnd(max(during)) if during else None,
        "rss_mb": rnd(mem["VmRSS"], 1),
        "peak_rss_mb": rnd(mem["VmHWM"], 1),
        "server_cpu_s_to_settled": rnd(cpu, 2),
        "edit_to_diagnostics": {**lsp_cases._p50_p95(diag), "unanswered": misses["diagnostics"]},
        "edit_to_refresh": {**lsp_cases._p50_p95(refresh), "unanswered": misses["refresh"]},
    }


# -- the inotify watch limit ---------------------------------------------------------------
WATCH_LIMIT = 500
LIMIT_CHANGES = 1000
LIMIT_EDITED = 12  # changes edited, spread over the project


def _userns_prefix(limit: int) -> tuple[str, ...] | None:
    """A command prefix that runs the server in a new user namespace whose inotify watch limit
    is ``limit``; None where user namespaces cannot be had."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    script = f'echo {limit} > /proc/sys/user/max_inotify_watches && exec "$0" "$@"'
    prefix = (unshare, "--user", "--map-root-user", "sh", "-c", script)
    probe = subprocess.run(
        [*prefix, "cat", "/proc/sys/user/max_inotify_watches"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return prefix if probe.returncode == 0 and probe.stdout.strip() == str(limit) else None


async def watch_limit(results: Results) -> None:
    prefix = _userns_prefix(WATCH_LIMIT)
    if prefix is None:
        results.skip(("scale_watch_limit_ok",), "no user namespace to lower the watch limit in")
        return
    with scratch("watch-limit") as tmp:
        root = tmp.resolve()
        names = make_workspace(root, LIMIT_CHANGES)
        step = len(names) // LIMIT_EDITED
        edited = [
            root / "openspec" / "changes" / names[i * step] / "tasks.md"
            for i in range(LIMIT_EDITED)
        ]
        async with session(root, prefix=prefix) as c:
            if await _all_diagnostics(c, LIMIT_CHANGES, timeout=60) is None:
                raise RuntimeError("watch_limit: not every tasks.md got diagnostics")
            await c.quiet(0.5, 10)
            told = [t for t in c.log_texts if "watch limit" in t]
            latencies: list[float] = []
            unanswered = 0
            for path in edited:
                samples, misses = await lsp_cases.edit_samples(c, path, 1)
                unanswered += misses["diagnostics"]
                latencies += samples["plain"]["diagnostics"] + samples["atomic"]["diagnostics"]
    ok = unanswered == 0 and bool(told)
    results.put("scale_watch_limit_ok", ok, f"{len(latencies)} edits")
    results.details["scale_watch_limit"] = {
        "how": "the server in a user namespace with /proc/sys/user/max_inotify_watches"
        f" = {WATCH_LIMIT}, over {LIMIT_CHANGES} changes; one plain and one atomic save of"
        f" {len(edited)} changes spread over the project",
        "edits": len(latencies),
        "unanswered_edits": unanswered,
        "edit_to_diagnostics_p50_ms": rnd(median(latencies)),
        "edit_to_diagnostics_max_ms": rnd(max(latencies)),
        "log_says": told[0] if told else None,
    }


# -- several runs at once --------------------------------------------------------------------
PARALLEL_TASKS = (
    100  # per change (the monorepo of the issue: 18 on average); more than a run gets through
)
DEMO_DELAY = "0.4"  # the demo agent's own pause per task (its default)


def _many_tasks(count: int) -> str:
    lines = ["# Tasks", ""]
    for story in range(count // 10):
        lines += [f"## {story + 1}. Story {story + 1}", ""]
        lines += [f"- [ ] {story + 1}.{t + 1} Task {t + 1} of story {story + 1}" for t in range(10)]
        lines.append("")
    return "\n".join(lines)


async def parallel(results: Results, counts: tuple[int, ...], seconds: float) -> None:
    by_runs: dict[str, dict[str, Any]] = {}
    for k in counts:
        by_runs[str(k)] = await _parallel_runs(k, seconds)
    results.details["parallel"] = {
        "how": f"k demo-agent runs (RALPH_DEMO_DELAY={DEMO_DELAY}: a task checked every"
        f" {float(DEMO_DELAY) * 1000:g} ms per run) of different changes of {PARALLEL_TASKS}"
        f" tasks, once every agent has checked a task: the server's own CPU over {seconds:g} s"
        " (its agents are other processes), then ralph.status sent every"
        f" {STATUS_PROBE_GAP * 1000:g} ms for {seconds:g} s more",
        "by_runs": by_runs,
    }
    top = by_runs.get("8")
    if top is not None:
        requests = f"{top['status_requests']} requests in {seconds:g} s"
        results.put("parallel_8_runs_request_p99_ms", top["status_p99_ms"], requests)
        results.put(
            "parallel_8_runs_server_cpu_percent", top["cpu_percent_per_run"], f"{seconds:g} s"
        )


async def _parallel_runs(k: int, seconds: float) -> dict[str, Any]:
    with scratch(f"parallel-{k}") as tmp:
        root = tmp.resolve()
        make_workspace(root, 20)
        names = [f"run-{i}" for i in range(k)]
        for name in names:
            folder = root / "openspec" / "changes" / name
            folder.mkdir()
            (folder / "tasks.md").write_text(_many_tasks(PARALLEL_TASKS))
        settings = {"agent": "demo", "maxIterations": 1000, "stopGraceSeconds": 1}
        env = bench_env(RALPH_DEMO_DELAY=DEMO_DELAY)
        async with session(root, settings, env=env) as c:
            await c.quiet(0.3, 10)
            t_run = time.perf_counter()
            for name in names:
                await c.command("ralph.run", {"change": name, "root": root.as_uri()})
            # measured once every agent has checked a task (all are up and working)
            await c.wait_until(lambda: _all_progressed(root, names), timeout=60)
            assert c.pid is not None
            # the CPU first, with nothing asked of the server; then the requests, probed
            cpu0 = cpu_seconds(c.pid)
            t0 = time.perf_counter()
            await asyncio.sleep(seconds)
            cpu1 = cpu_seconds(c.pid)
            elapsed = time.perf_counter() - t0
            probes: list[tuple[float, float]] = []
            stop = asyncio.Event()
            prober = asyncio.create_task(
                c.probe(lambda: _status(c), stop, probes, STATUS_PROBE_GAP)
            )
            await asyncio.sleep(seconds)
            stop.set()
            await prober
            checked = _checked(root, names)
            for name in names:
                await c.command("ralph.stop", {"change": name, "root": root.as_uri()})
            states = [
                (await c.wait_final_status(name, since=t_run, timeout=30) or {}).get("state")
                for name in names
            ]
    ms = [m for _, m in probes]
    return {
        "status_requests": len(ms),
        "status_p50_ms": rnd(percentile(ms, 50)),
        "status_p99_ms": rnd(percentile(ms, 99)),
        "status_max_ms": rnd(max(ms)) if ms else None,
        "server_cpu_percent": rnd((cpu1 - cpu0) / elapsed * 100, 2),
        "cpu_percent_per_run": rnd((cpu1 - cpu0) / elapsed * 100 / k, 2),
        "tasks_checked_by_the_end": checked,
        "final_states": states,
    }


def _checked_in(path: Path) -> int:
    try:
        return path.read_text().count("- [x]")
    except OSError:
        return 0


def _checked(root: Path, names: list[str]) -> int:
    return sum(_checked_in(root / "openspec" / "changes" / n / "tasks.md") for n in names)


def _all_progressed(root: Path, names: list[str]) -> bool:
    return all(_checked_in(root / "openspec" / "changes" / n / "tasks.md") > 0 for n in names)


# -- a long run ------------------------------------------------------------------------------
# The agent of one soak iteration: check the first open box (an atomic save, as sed -i does),
# then print ``$2`` bytes in lines of 100 kB (the log to the client cuts lines at 16 kB; the
# raw log under .ralph/ keeps them whole, so retention has work to do).
SOAK_AGENT = r"""
sed -i '0,/- \[ \]/s//- [x]/' "$1"
n=$2
while [ "$n" -gt 0 ]; do
  head -c 100000 /dev/zero | tr '\0' 'o'
  echo
  n=$((n - 100000))
done
echo "checked one box"
"""
SOAK_WARMUP = 50  # RSS growth is counted from this iteration on
SOAK_SAMPLE_EVERY = 25
# A longer soak compares its growth past iteration 1000 with the noise of RSS itself: in a
# flat stretch, samples 25 iterations apart move by up to ~1 MiB (the allocator returning and
# taking pages), so "no higher than at 1000 within noise" is a difference of at most 1 MiB.
SOAK_REFERENCE = 1000


async def soak(results: Results, iterations: int, output_bytes: int) -> None:
    with scratch("soak") as tmp:
        root = tmp.resolve()
        make_workspace(root, 5)
        folder = root / "openspec" / "changes" / "soak"
        folder.mkdir()
        tasks = folder / "tasks.md"
        tasks.write_text(_many_tasks(iterations + 10))
        settings = {
            "agent": "custom",
            "agentCommand": ["sh", "-c", SOAK_AGENT, "soak-agent", str(tasks), str(output_bytes)],
            "maxIterations": iterations,
            "stopGraceSeconds": 1,
        }
        async with session(root, settings) as c:
            await c.quiet(0.3, 10)
            assert c.pid is not None
            pid = c.pid
            rss: list[tuple[int, float]] = [(0, memory_mb(pid)["VmRSS"])]
            t_run = time.perf_counter()
            await c.command("ralph.run", {"change": "soak", "root": root.as_uri()})
            final = None
            while final is None:
                final = await c.wait_final_status("soak", since=t_run, timeout=0.5)
                done = _iteration(c, t_run)
                if done >= rss[-1][0] + SOAK_SAMPLE_EVERY or (final and done > rss[-1][0]):
                    rss.append((done, memory_mb(pid)["VmRSS"]))
                if time.perf_counter() - t_run > max(1800, 2 * iterations):
                    raise RuntimeError("soak: the run did not end in time")
            elapsed = time.perf_counter() - t_run
            await c.quiet(0.5, 10)
            end_rss = memory_mb(pid)
            iterations_done = _iteration(c, t_run)
        ralph_bytes = _tree_bytes(root / ".ralph")
    at_warmup = next((mb for n, mb in rss if n >= SOAK_WARMUP), rss[-1][1])
    growth = end_rss["VmRSS"] - at_warmup
    label = f"{iterations_done} iterations"
    if iterations > SOAK_REFERENCE:  # the long soak: growth past 1000 against that to 1000
        at_reference = next((mb for n, mb in rss if n >= SOAK_REFERENCE), rss[-1][1])
        results.put("soak_5000_iterations_rss_growth_mb", rnd(growth, 1), label)
        beyond = end_rss["VmRSS"] - at_reference
        results.put("soak_5000_vs_1000_rss_growth_mb", rnd(beyond, 1), label)
        results.details["soak_5000"] = _soak_details(
            iterations, output_bytes, iterations_done, final, elapsed, rss, at_warmup, end_rss
        ) | {"rss_mb_at_1000": rnd(at_reference, 1)}
        return
    results.put("soak_1000_iterations_rss_growth_mb", rnd(growth, 1), label)
    results.put("soak_1000_iterations_ralph_dir_mb", rnd(ralph_bytes / 2**20, 1), label)
    results.details["soak"] = _soak_details(
        iterations, output_bytes, iterations_done, final, elapsed, rss, at_warmup, end_rss
    )


def _soak_details(
    iterations: int,
    output_bytes: int,
    iterations_done: int,
    final: dict[str, Any] | None,
    elapsed: float,
    rss: list[tuple[int, float]],
    at_warmup: float,
    end_rss: dict[str, float],
) -> dict[str, Any]:
    return {
        "how": f"one run of a custom agent (sh: check one box with sed -i, print"
        f" {output_bytes // 1000} kB in 100 kB lines) for {iterations} iterations; RSS growth"
        f" from iteration {SOAK_WARMUP} to the end",
        "iterations": iterations_done,
        "final_state": final.get("state") if final else None,
        "seconds": rnd(elapsed, 1),
        "ms_per_iteration": rnd(elapsed * 1000 / max(1, iterations_done), 1),
        "raw_output_mb": rnd(iterations_done * output_bytes / 2**20, 1),
        "rss_mb_at_start": rnd(rss[0][1], 1),
        "rss_mb_at_warmup": rnd(at_warmup, 1),
        "rss_mb_at_end": rnd(end_rss["VmRSS"], 1),
        "peak_rss_mb": rnd(end_rss["VmHWM"], 1),
        "rss_mb_by_iteration": [[n, rnd(mb, 1)] for n, mb in rss],
    }


def _iteration(c: BenchClient, since: float) -> int:
    """The highest iteration a ``ralph/runStatus`` since ``since`` has named."""
    best = 0
    for ev in reversed(c.events):
        if ev.t < since:
            break
        if ev.method == "ralph/runStatus":
            n = getattr(ev.params, "iteration", None)
            if isinstance(n, int) and n > best:
                best = n
    return best


def _tree_bytes(top: Path) -> int:
    total = 0
    for folder, _, files in os.walk(top):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total
