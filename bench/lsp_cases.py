"""Benchmarks through the language server: a real client, the real server process, real files."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from bench.client import BenchClient, session
from bench.common import (
    EXAMPLE,
    MEMORY_FS,
    PY,
    alive,
    bench_env,
    cpu_seconds,
    make_workspace,
    median,
    memory_mb,
    percentile,
    rnd,
    scratch,
    thread_cpu_seconds,
)
from bench.report import Results

MISS_MS = 3000.0  # an edit the server never answered counts as this (and is reported)


# -- on-disk edit → publishDiagnostics / codeLens refresh -------------------------------------
def _edit_text(i: int) -> str:
    """tasks.md for edit ``i``: each edit toggles a task and moves both findings' lines."""
    pad = "\n" * (i % 7)
    done = "x" if i % 2 else " "
    return (
        f"# Tasks\n{pad}\n## 1. Edited by the bench\n\n"
        f"- [{done}] 1.1 Toggled on every edit (edit {i})\n"
        "- [ ] 1.2 A task that stays open\n"
        "- [] 1.3 An empty box (a warning)\n"
        "- [~] 1.4 An odd box (a warning)\n\n"
        "## 2. Another story\n\n- [x] 2.1 Done long ago\n- [ ] 2.2 Still open\n"
    )


def _finding_lines(text: str) -> set[int]:
    from ralph_lsp.openspec.tasks_fast import parse_tasks

    return {f.line for f in parse_tasks(text).findings}


def _diag_lines(params: Any) -> set[int]:
    return {d.range.start.line for d in params.diagnostics}


def _write_plain(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:  # truncate, then write: an editor's plain save
        f.write(data)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.bench-{os.getpid()}.tmp")
    with open(tmp, "wb") as f:  # write a temporary file, then rename it over: an atomic save
        f.write(data)
    os.replace(tmp, path)


# The server's watch where inotify cannot be had (another OS, the per-user limit): watchfiles.
FALLBACK_ENV = {"RALPH_WATCH": "poll"}
WATCHFILES_THREAD = "notify-rs"  # the kernel's name of watchfiles' thread starts so


async def edits(results: Results, per_mode: int, fallback_per_mode: int) -> None:
    """The server's own watch (inotify on Linux) for the targets; then the same edits through
    the watchfiles fallback, a peer measured in the same run, into ``details``."""
    samples, misses, _ = await _edit_latencies(results, "inotify", per_mode, bench_env())
    n = 2 * per_mode
    for kind, key in (("diagnostics", "edit_to_diagnostics_ms"), ("refresh", "edit_to_refresh_ms")):
        results.put(key, _p50_p95(samples["plain"][kind] + samples["atomic"][kind]), n)
        results.details[key] = {
            mode: {
                **_p50_p95(samples[mode][kind]),
                "max": rnd(max(samples[mode][kind])),
                "edits": per_mode,
            }
            for mode in ("plain", "atomic")
        }
        results.details[key]["unanswered_edits"] = misses[kind]
    saves = samples["plain"]["save"] + samples["atomic"]["save"]
    results.details["edit_save_ms"] = {
        **_p50_p95(saves),
        "max": rnd(max(saves)),
        "how": "the bench's own write of tasks.md (inside the timed span), on a memory file"
        " system where there is one",
        "memory_fs": MEMORY_FS.is_dir(),
    }
    if fallback_per_mode <= 0:
        return
    samples, misses, threads = await _edit_latencies(
        results, "watchfiles", fallback_per_mode, bench_env(**FALLBACK_ENV)
    )
    fallback: dict[str, Any] = {
        "how": "the same edits with RALPH_WATCH=poll in the server's environment",
        "edits": 2 * fallback_per_mode,
        "watchfiles_thread_seen": any(WATCHFILES_THREAD in name for name in threads),
    }
    for kind in ("diagnostics", "refresh"):
        fallback[kind] = {
            **_p50_p95(samples["plain"][kind] + samples["atomic"][kind]),
            "unanswered_edits": misses[kind],
        }
    results.details["edit_watchfiles_fallback"] = fallback


def _p50_p95(values: list[float]) -> dict[str, float]:
    return {"p50": rnd(percentile(values, 50)), "p95": rnd(percentile(values, 95))}


async def _edit_latencies(
    results: Results, label: str, per_mode: int, env: dict[str, str]
) -> tuple[dict[str, dict[str, list[float]]], dict[str, int], list[str]]:
    """``per_mode`` plain and ``per_mode`` atomic saves of one tasks.md, alternating: the
    milliseconds until its diagnostics and a lens refresh arrive, by mode; the edits never
    answered; the names of the server's threads at the end."""
    with scratch("edits", memory=True) as tmp:  # the saves' own time is not the server's
        root = tmp.resolve()
        make_workspace(root, 5)
        folder = root / "openspec" / "changes" / "edited"
        folder.mkdir()
        path = folder / "tasks.md"
        path.write_text(_edit_text(0))
        async with session(root, env=env) as c:
            if await first_diagnostics(c, path, 15) is None:
                results.notes.append(
                    f"edits ({label}): the server published no diagnostics for an unopened"
                    " tasks.md within 15 s of initialize"
                )
            await c.quiet(0.5, 10)
            samples, misses = await edit_samples(c, path, per_mode)
            assert c.pid is not None
            threads = [key.split(" ", 1)[1] for key in thread_cpu_seconds(c.pid)]
    return samples, misses, threads


async def first_diagnostics(c: BenchClient, path: Path, timeout: float) -> Any:
    """The first ``publishDiagnostics`` of ``path`` (None if none came within ``timeout``)."""
    uri = path.as_uri()
    return await c.wait_for(
        lambda e: e.method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS and e.params.uri == uri,
        timeout=timeout,
    )


async def edit_samples(
    c: BenchClient, path: Path, per_mode: int, *, first: int = 1
) -> tuple[dict[str, dict[str, list[float]]], dict[str, int]]:
    """``per_mode`` plain and ``per_mode`` atomic saves of ``path`` (a change's tasks.md, not
    open), alternating, through the live session ``c``: the milliseconds until its diagnostics
    and a lens refresh arrive, by mode, and the edits never answered. ``first`` numbers the
    first edit (a later series continues the text where an earlier one left it)."""
    rng = random.Random(7)
    uri = path.as_uri()
    samples: dict[str, dict[str, list[float]]] = {
        mode: {"diagnostics": [], "refresh": [], "save": []} for mode in ("plain", "atomic")
    }
    misses = {"diagnostics": 0, "refresh": 0}
    for i in range(first, first + 2 * per_mode):
        mode = "plain" if i % 2 else "atomic"
        text = _edit_text(i)
        expected = _finding_lines(text)
        data = text.encode()
        t0 = time.perf_counter()
        (_write_plain if mode == "plain" else _write_atomic)(path, data)
        samples[mode]["save"].append((time.perf_counter() - t0) * 1000)
        diag, refresh = await asyncio.gather(
            c.wait_for(
                lambda e, expected=expected: (
                    e.method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
                    and e.params.uri == uri
                    and expected <= _diag_lines(e.params)
                ),
                since=t0,
                timeout=MISS_MS / 1000,
            ),
            c.wait_for(
                lambda e: e.method == types.WORKSPACE_CODE_LENS_REFRESH,
                since=t0,
                timeout=MISS_MS / 1000,
            ),
        )
        for kind, ev in (("diagnostics", diag), ("refresh", refresh)):
            if ev is None:
                misses[kind] += 1
                samples[mode][kind].append(MISS_MS)
            else:
                samples[mode][kind].append((ev.t - t0) * 1000)
        # let the server settle, at a random phase against any polling it does
        await asyncio.sleep(rng.uniform(0.06, 0.16))
        await c.quiet(0.06, 2)
    return samples, misses


# -- a flooding agent: log throughput and request latency meanwhile ---------------------------
FLOOD_MARKER = "flood-line "
FLOOD_SOURCE = (
    "import sys; sys.stdout.writelines("
    "'flood-line %d of an agent printing as fast as it can\\n' % i"
    " for i in range(int(sys.argv[1])))"
)


LENS_PROBE_GAP = 0.01  # seconds between codeLens probes: a probe, not a load of its own


async def _poll_lenses(
    c: BenchClient, uri: str, stop: asyncio.Event, out: list[tuple[float, float]]
) -> None:
    await c.probe(lambda: c.code_lens(uri), stop, out, LENS_PROBE_GAP)


@dataclass
class _FloodRun:
    rate: float  # lines/s from the first line's arrival to the last's
    rate_from_request: float  # lines/s from the ralph.run request to the last line
    delivered: int
    messages: int
    state: str
    probes: list[float]  # codeLens latencies (ms) of the probes sent during the flood


async def _flood_once(c: BenchClient, root: Path, uri: str, lines: int, probe: bool) -> _FloodRun:
    c.marked_lines = 0
    c.marked_arrivals.clear()
    samples: list[tuple[float, float]] = []
    stop = asyncio.Event()
    poller = asyncio.create_task(_poll_lenses(c, uri, stop, samples)) if probe else None
    t_run = time.perf_counter()
    try:
        await c.command("ralph.run", {"change": "flood", "root": root.as_uri(), "maxIterations": 1})
        await c.wait_until(lambda: c.marked_lines >= lines, timeout=120)
        final = await c.wait_final_status("flood", since=t_run, timeout=60)
        await c.wait_until(lambda: c.marked_lines >= lines, timeout=2)
    finally:
        stop.set()
        if poller is not None:
            await poller
    arrivals = list(c.marked_arrivals)
    if len(arrivals) < 2:
        raise RuntimeError(
            f"flood: {c.marked_lines} of {lines} lines arrived\n" + c.describe_failure()
        )
    (t_first, first_batch), t_last = arrivals[0], arrivals[-1][0]
    await c.quiet(0.5, 10)
    return _FloodRun(
        rate=(c.marked_lines - first_batch) / (t_last - t_first),
        rate_from_request=c.marked_lines / (t_last - t_run),
        delivered=c.marked_lines,
        messages=len(arrivals),
        state=final["state"] if final else "no final status",
        probes=[ms for t, ms in samples if t_run <= t <= t_last],
    )


async def flood(results: Results, reps: int, probed_reps: int, lines: int) -> None:
    """Throughput from ``reps`` floods with nothing else going on; then ``probed_reps`` more
    floods with a codeLens probe every 10 ms, for the request latency (and their throughput)."""
    settings = {
        "agent": "custom",
        "agentCommand": [PY, "-c", FLOOD_SOURCE, str(lines)],
        "stopGraceSeconds": 1,
    }
    idle: list[tuple[float, float]] = []
    with scratch("flood") as tmp:
        root = tmp.resolve()
        make_workspace(root, 3)
        folder = root / "openspec" / "changes" / "flood"
        folder.mkdir()
        (folder / "tasks.md").write_text(
            "## 1. Flood\n\n- [ ] 1.1 Print a lot\n- [ ] 1.2 Print more\n"
        )
        async with session(root, settings, line_marker=FLOOD_MARKER) as c:
            uri = c.open_document(folder / "tasks.md")
            await c.quiet(0.5, 10)
            stop = asyncio.Event()
            poller = asyncio.create_task(_poll_lenses(c, uri, stop, idle))
            await asyncio.sleep(1.0)
            stop.set()
            await poller
            plain = [await _flood_once(c, root, uri, lines, probe=False) for _ in range(reps)]
            probed = [
                await _flood_once(c, root, uri, lines, probe=True) for _ in range(probed_reps)
            ]
    during = [ms for run in probed for ms in run.probes]
    results.put("log_lines_per_s", round(median([r.rate for r in plain])), reps)
    results.put(
        "request_p99_ms_during_flood",
        rnd(percentile(during, 99)),
        f"{len(during)} in {probed_reps} floods",
    )
    results.details["log_lines_per_s"] = {
        "lines_printed_per_run": lines,
        "lines_delivered_per_run": [r.delivered for r in plain + probed],
        "logMessage_messages_per_run": [r.messages for r in plain],
        "rates_first_to_last_line": [round(r.rate) for r in plain],
        "rates_from_run_request": [round(r.rate_from_request) for r in plain],
        "rates_while_probed": [round(r.rate) for r in probed],
        "final_states": [r.state for r in plain + probed],
        "how": "lines after the first message / (last line's arrival - first line's arrival)",
    }
    idle_ms = [ms for _, ms in idle]
    results.details["request_p99_ms_during_flood"] = {
        "floods": probed_reps,
        "probe_gap_ms": LENS_PROBE_GAP * 1000,
        "requests_during_flood": len(during),
        "p50": rnd(percentile(during, 50)),
        "p90": rnd(percentile(during, 90)),
        "p99": rnd(percentile(during, 99)),
        "max": rnd(max(during)) if during else None,
        "idle_p50": rnd(percentile(idle_ms, 50)),
        "idle_p99": rnd(percentile(idle_ms, 99)),
        "idle_requests": len(idle_ms),
    }


# -- startup ---------------------------------------------------------------------------------
async def startup(results: Results, reps: int) -> None:
    from bench.offline import pygls_import_ms

    ours: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    env = bench_env()
    with scratch("startup") as tmp:
        root = tmp.resolve() / "hello"
        shutil.copytree(EXAMPLE, root)
        # one warm-up of each: bytecode caches and the page cache
        pygls_import_ms(1)
        await _one_startup(root, env)
        for i in range(reps):
            if i % 2:
                bare.extend(pygls_import_ms(1))
                ours.append(await _one_startup(root, env))
            else:
                ours.append(await _one_startup(root, env))
                bare.extend(pygls_import_ms(1))
        imports = await _import_costs(root, env)
    ours_wall = median([w for w, _ in ours])
    bare_wall = median([w for w, _ in bare])
    ours_cpu = median([c for _, c in ours])
    bare_cpu = median([c for _, c in bare])
    results.put("startup_ms", rnd(ours_wall, 1), reps)
    results.put("pygls_import_ms", rnd(bare_wall, 1), reps)
    results.put("startup_vs_pygls_import", rnd(ours_wall / bare_wall, 3), reps)
    results.details["startup"] = {
        "startup_ms_all": [rnd(w, 1) for w, _ in ours],
        "pygls_import_ms_all": [rnd(w, 1) for w, _ in bare],
        "ratio_median_of_pairs": rnd(
            median([a[0] / b[0] for a, b in zip(ours, bare, strict=True)]), 3
        ),
        "startup_cpu_ms": rnd(ours_cpu, 1),
        "pygls_import_cpu_ms": rnd(bare_cpu, 1),
        "cpu_ratio": rnd(ours_cpu / bare_cpu, 3),
        "imports_beyond_pygls": imports,
    }


async def _one_startup(root: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) ms from starting the server process until ``initialize`` is answered."""
    client = BenchClient({})
    t0 = time.perf_counter()
    await client.start_server(env)
    try:
        await client.initialize(root)
        wall = (time.perf_counter() - t0) * 1000
        assert client.pid is not None
        return wall, cpu_seconds(client.pid) * 1000
    finally:
        await client.close()


_IMPORT_RE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)")


def _parse_importtime(lines: list[str]) -> list[tuple[str, int, int, int]]:
    """(module, self µs, cumulative µs, depth) for each ``-X importtime`` line."""
    out = []
    for line in lines:
        m = _IMPORT_RE.match(line)
        if m:
            out.append((m.group(4), int(m.group(1)), int(m.group(2)), len(m.group(3)) // 2))
    return out


async def _import_costs(root: Path, env: dict[str, str]) -> dict[str, Any]:
    """What ``python -X importtime -m ralph_lsp`` imports beyond ``import pygls.lsp.server``."""
    proc = await asyncio.create_subprocess_exec(
        PY,
        "-X",
        "importtime",
        "-c",
        "import pygls.lsp.server",
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    baseline = {m for m, *_ in _parse_importtime(err.decode().splitlines())}

    client = BenchClient({})
    client.keep_stderr = True
    await client.start_server(env, extra_args=("-X", "importtime"))
    try:
        await client.initialize(root)
        await asyncio.sleep(0.3)
        at_initialize = len(client.stderr_lines)
        await client.quiet(1.0, 10)
    finally:
        await client.close()
    rows = _parse_importtime(client.stderr_lines)
    extra = [r for r in rows if r[0] not in baseline]
    by_package: dict[str, int] = {}
    for module, self_us, _, _ in extra:
        top = module.split(".")[0]
        by_package[top] = by_package.get(top, 0) + self_us
    early = {m for m, *_ in _parse_importtime(client.stderr_lines[:at_initialize])}
    watched = ["watchfiles", "ralph_lsp.loop.engine", "ralph_lsp.proc.process", "ralph_lsp.agents"]
    return {
        "extra_modules": len(extra),
        "extra_self_ms": rnd(sum(r[1] for r in extra) / 1000),
        "by_package_self_ms": {
            k: rnd(v / 1000) for k, v in sorted(by_package.items(), key=lambda kv: -kv[1])[:12]
        },
        "slowest_extra_modules_self_ms": {
            m: rnd(own / 1000) for m, own, _, _ in sorted(extra, key=lambda r: -r[1])[:15]
        },
        "slowest_extra_modules_cumulative_ms": {
            m: rnd(cum / 1000) for m, _, cum, _ in sorted(extra, key=lambda r: -r[2])[:12]
        },
        "imported_by_initialize": {m: m in early for m in watched},
        "imported_after_idle": {m: any(r[0] == m for r in rows) for m in watched},
    }


# -- RSS after a demo run --------------------------------------------------------------------
async def rss(results: Results, reps: int) -> None:
    values: list[float] = []
    peaks: list[float] = []
    states: list[str] = []
    for _ in range(reps):
        with scratch("rss") as tmp:
            root = tmp.resolve() / "hello"
            shutil.copytree(EXAMPLE, root)
            change = next(p.name for p in (root / "openspec" / "changes").iterdir() if p.is_dir())
            env = bench_env(RALPH_DEMO_DELAY="0")
            async with session(root, {"agent": "demo"}, env=env) as c:
                await c.quiet(0.3, 5)
                t0 = time.perf_counter()
                await c.command("ralph.run", {"change": change, "root": root.as_uri()})
                final = await c.wait_final_status(change, since=t0, timeout=120)
                states.append(final["state"] if final else "no final status")
                await c.quiet(0.5, 10)
                assert c.pid is not None
                mem = memory_mb(c.pid)
                values.append(mem["VmRSS"])
                peaks.append(mem["VmHWM"])
    results.put("rss_mb", rnd(median(values), 1), reps)
    results.details["rss_mb"] = {
        "rss_mb_all": [rnd(v, 1) for v in values],
        "peak_rss_mb_all": [rnd(v, 1) for v in peaks],
        "final_states": states,
    }


# -- stop ------------------------------------------------------------------------------------
STOP_AGENT = r"""
import os, signal, subprocess, sys, time
pid_file, kind = sys.argv[1], sys.argv[2]
ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if kind == "stubborn" else ""
exec(ignore)
child = subprocess.Popen(
    [sys.executable, "-c", "import signal, time\n" + ignore + "print('up', flush=True)\n"
     "time.sleep(600)\n", pid_file],
    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
)
child.stdout.readline()
with open(pid_file + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}\n")
os.replace(pid_file + ".tmp", pid_file)
print("the agent and its child are up; waiting to be stopped", flush=True)
time.sleep(600)
"""


def _marked(marker: str) -> list[int]:
    """The live processes whose command line holds ``marker`` (zombies excluded)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                if marker.encode() not in f.read():
                    continue
        except OSError:
            continue
        if alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def stop(results: Results, cooperative_reps: int, stubborn_reps: int) -> None:
    values: dict[str, dict[str, Any]] = {}
    for kind, reps in (("cooperative", cooperative_reps), ("stubborn", stubborn_reps)):
        values[kind] = await _stop_kind(kind, reps)
    results.put(
        "stop_ms",
        {kind: v["median"] for kind, v in values.items()},
        f"{cooperative_reps}/{stubborn_reps}",
    )
    results.details["stop_ms"] = {
        kind: {k: v for k, v in d.items() if k != "median"} for kind, d in values.items()
    }
    results.details["stop_ms"]["stopGraceSeconds"] = 1


async def _stop_kind(kind: str, reps: int) -> dict[str, Any]:
    with scratch("stop") as tmp:
        root = tmp.resolve()
        make_workspace(root, 2)
        folder = root / "openspec" / "changes" / "stop-me"
        folder.mkdir()
        (folder / "tasks.md").write_text("## 1. Stop\n\n- [ ] 1.1 Never done\n")
        agent = root / "stop_agent.py"
        agent.write_text(STOP_AGENT)
        pid_file = root / "agent.pids"
        settings = {
            "agent": "custom",
            "agentCommand": [PY, str(agent), str(pid_file), kind],
            "stopGraceSeconds": 1,
        }
        totals: list[float] = []
        answered: list[float] = []
        states: list[str] = []
        async with session(root, settings) as c:
            await c.quiet(0.3, 5)
            for _ in range(reps):
                with contextlib.suppress(FileNotFoundError):
                    pid_file.unlink()
                t_run = time.perf_counter()
                await c.command("ralph.run", {"change": "stop-me", "root": root.as_uri()})
                deadline = time.monotonic() + 30
                while not pid_file.exists():
                    if time.monotonic() > deadline:
                        raise RuntimeError("stop: the agent never started\n" + c.describe_failure())
                    await asyncio.sleep(0.005)
                # The run's processes as this host sees them: every one whose command line
                # names the pid file (the agent, its child, and the sandbox's own around them).
                # The pids the agent writes are its PID namespace's when it runs sandboxed.
                await asyncio.sleep(0.2)
                if not _marked(str(pid_file)):
                    raise RuntimeError("stop: no process of the run found\n" + c.describe_failure())
                t0 = time.perf_counter()
                await c.command("ralph.stop", {"change": "stop-me", "root": root.as_uri()})
                t_answer = time.perf_counter()
                while _marked(str(pid_file)) and time.perf_counter() - t0 < 15:
                    await asyncio.sleep(0.002)
                t_gone = time.perf_counter()
                answered.append((t_answer - t0) * 1000)
                totals.append((max(t_answer, t_gone) - t0) * 1000)
                final = await c.wait_final_status("stop-me", since=t_run, timeout=10)
                states.append(final["state"] if final else "no final status")
                await c.quiet(0.2, 5)
    return {
        "median": rnd(median(totals), 1),
        "all_ms": [rnd(x, 1) for x in totals],
        "stop_answered_ms": [rnd(x, 1) for x in answered],
        "final_states": states,
        "agent_processes": 2,
    }


# -- idle CPU --------------------------------------------------------------------------------
async def idle_cpu(results: Results, seconds: float, fallback_seconds: float) -> None:
    """The server's CPU while nothing happens, with its own watch; then, into ``details``, the
    same with the watchfiles fallback (which polls its queue) as a peer in the same run."""
    m = await _idle(seconds, bench_env())
    elapsed, cpu = m["seconds"], m["cpu_seconds"]
    results.put("idle_cpu_percent", rnd(cpu / elapsed * 100, 3), f"{seconds:g} s")
    results.details["idle_cpu_percent"] = {"changes_open": IDLE_CHANGES, **m}
    if fallback_seconds > 0:
        m = await _idle(fallback_seconds, bench_env(**FALLBACK_ENV))
        results.details["idle_cpu_watchfiles_fallback"] = {
            "percent": rnd(m["cpu_seconds"] / m["seconds"] * 100, 3),
            **m,
        }


IDLE_CHANGES = 100


async def _idle(seconds: float, env: dict[str, str]) -> dict[str, Any]:
    """CPU seconds a server over :data:`IDLE_CHANGES` changes spends in ``seconds`` of quiet."""
    with scratch("idle") as tmp:
        root = tmp.resolve()
        make_workspace(root, IDLE_CHANGES)
        async with session(root, env=env) as c:
            settled = await c.quiet(2.0, 30)
            assert c.pid is not None
            before = len(c.events)
            threads0 = thread_cpu_seconds(c.pid)
            cpu0 = cpu_seconds(c.pid)
            t0 = time.perf_counter()
            await asyncio.sleep(seconds)
            cpu1 = cpu_seconds(c.pid)
            elapsed = time.perf_counter() - t0
            threads1 = thread_cpu_seconds(c.pid)
            received = len(c.events) - before
    # which threads spent it (names are the kernel's: Python threads are all "python")
    by_thread: dict[str, float] = {}
    for key, value in threads1.items():
        name = key.split(" ", 1)[1]
        spent = value - threads0.get(key, 0.0)
        by_thread[name] = by_thread.get(name, 0.0) + spent
    return {
        "seconds": rnd(elapsed, 1),
        "cpu_seconds": rnd(cpu1 - cpu0, 3),
        "messages_received_while_idle": received,
        "cpu_seconds_by_thread_name": {k: rnd(v, 3) for k, v in sorted(by_thread.items())},
        "threads": len(threads1),
        "settled_before_measuring": settled,
    }
