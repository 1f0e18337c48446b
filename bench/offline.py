"""Benchmarks without a language server: the parser, and the CLI against the OpenSpec CLI."""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

from bench import openspec
from bench.common import (
    PY,
    bench_env,
    corpus_texts,
    make_workspace,
    median,
    megabyte_of_tasks,
    percentile,
    rnd,
    scratch,
)
from bench.report import Results

CHANGES = 1000


# A busy loop for the other core: the parse measured again while it runs.
HOG = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass\n"


def parse_1mb(results: Results, reps: int) -> None:
    """``parse_tasks`` over 1 MiB of real tasks.md text (the corpus repeated), in this process;
    then the same with a busy process on the machine's other core."""
    from ralph_lsp.openspec.tasks import count_tasks
    from ralph_lsp.openspec.tasks_fast import parse_tasks

    text = megabyte_of_tasks()
    for _ in range(2):  # warm up (regex caches, allocator)
        parse_tasks(text)
    samples, cpu_samples = _parse_samples(text, reps)
    count_samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        count_tasks(text)
        count_samples.append((time.perf_counter() - t0) * 1000)
    hogs = max(1, (os.cpu_count() or 2) - 1)
    procs = [subprocess.Popen([PY, "-c", HOG], env=bench_env()) for _ in range(hogs)]
    try:
        time.sleep(0.3)  # the hogs are up and spinning
        loaded, loaded_cpu = _parse_samples(text, reps)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    doc = parse_tasks(text)
    results.put("parse_1mb_ms", rnd(median(samples)), reps)
    results.put("parse_1mb_ms_under_load", rnd(median(loaded)), reps)
    results.details["parse_1mb"] = {
        "bytes": len(text.encode()),
        "lines": doc.line_count,
        "tasks": doc.total,
        "stories": len(doc.stories),
        "findings": len(doc.findings),
        "min_ms": rnd(min(samples)),
        "cpu_ms": rnd(median(cpu_samples)),
        "max_ms": rnd(max(samples)),
        "count_tasks_ms": rnd(median(count_samples)),
        "under_load": {
            "how": f"{hogs} busy-looping process(es) beside the parse (the other cores)",
            "min_ms": rnd(min(loaded)),
            "p90_ms": rnd(percentile(loaded, 90)),
            "max_ms": rnd(max(loaded)),
            "cpu_ms": rnd(median(loaded_cpu)),
        },
    }


def _parse_samples(text: str, reps: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of ``reps`` parses of ``text``."""
    from ralph_lsp.openspec.tasks_fast import parse_tasks

    samples = []
    cpu_samples = []
    for _ in range(reps):
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        parse_tasks(text)
        samples.append((time.perf_counter() - t0) * 1000)
        cpu_samples.append((time.process_time() - c0) * 1000)
    return samples, cpu_samples


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall and CPU milliseconds of one run of ``argv`` (which must succeed), and its stdout."""
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=300, check=False)
    elapsed = (time.perf_counter() - t0) * 1000
    cpu = (_children_cpu() - cpu0) * 1000
    if proc.returncode != 0:
        raise RuntimeError(
            f"{Path(argv[1]).name if len(argv) > 1 else argv[0]} exited {proc.returncode}: "
            + proc.stderr.decode("utf-8", "replace")[-500:]
        )
    return elapsed, cpu, proc.stdout


def changes_vs_openspec(results: Results, reps: int) -> None:
    """``ralph-lsp changes --json`` and ``openspec list --json`` over 1000 changes, same run."""
    try:
        openspec_argv = openspec.command()
    except openspec.Unavailable as exc:
        results.skip(("changes_1000_ms", "openspec_list_1000_ms", "changes_vs_openspec"), str(exc))
        return
    _, source = corpus_texts()
    with scratch("changes") as root:
        make_workspace(root, CHANGES)
        m = list_vs_openspec(root, openspec_argv, reps)
    results.put("changes_1000_ms", m["changes_ms"], reps)
    results.put("openspec_list_1000_ms", m["openspec_ms"], reps)
    results.put("changes_vs_openspec", m["ratio"], reps)
    results.details["changes_vs_openspec"] = {
        "changes": CHANGES,
        "tasks_md_from": source,
        "openspec_version": openspec.VERSION,
        **{k: v for k, v in m.items() if k not in ("changes_ms", "openspec_ms", "ratio")},
    }


def list_vs_openspec(root: Path, openspec_argv: list[str], reps: int) -> dict[str, Any]:
    """``ralph-lsp changes --json --root ROOT`` against ``openspec list --json`` run in ROOT:
    one warm-up of each (whose counts are compared), then ``reps`` of each, alternating. The
    medians (``changes_ms``, ``openspec_ms``), their ``ratio``, and the details."""
    env = bench_env()
    os_env = bench_env(**openspec.ENV)
    script = Path(PY).with_name("ralph-lsp")  # the console script a user runs
    program = [str(script)] if script.exists() else [PY, "-m", "ralph_lsp"]
    ours = [*program, "changes", "--json", "--root", str(root)]
    theirs = [*openspec_argv, "list", "--json"]
    # warm up both (page cache, bytecode caches), and check that the counts agree
    _, _, our_out = _timed(ours, root, env)
    _, _, their_out = _timed(theirs, root, os_env)
    agreement = _compare(our_out, their_out)
    ours_ms: list[float] = []
    theirs_ms: list[float] = []
    ours_cpu: list[float] = []
    theirs_cpu: list[float] = []
    for i in range(reps):
        order = [(ours, env, ours_ms, ours_cpu), (theirs, os_env, theirs_ms, theirs_cpu)]
        if i % 2:
            order.reverse()
        for argv, e, wall_sink, cpu_sink in order:
            wall, cpu, _ = _timed(argv, root, e)
            wall_sink.append(wall)
            cpu_sink.append(cpu)
    return {
        "changes_ms": rnd(median(ours_ms), 1),
        "openspec_ms": rnd(median(theirs_ms), 1),
        "ratio": rnd(median(ours_ms) / median(theirs_ms), 3),
        "counts_agree": agreement,
        "changes_ms_all": [rnd(x, 1) for x in ours_ms],
        "openspec_ms_all": [rnd(x, 1) for x in theirs_ms],
        "changes_cpu_ms": rnd(median(ours_cpu), 1),
        "openspec_cpu_ms": rnd(median(theirs_cpu), 1),
        "cpu_ratio": rnd(median(ours_cpu) / median(theirs_cpu), 3),
    }


def _compare(our_out: bytes, their_out: bytes) -> str:
    ours = {c["name"]: (c["completed"], c["total"]) for c in json.loads(our_out)["changes"]}
    theirs = {
        c["name"]: (c["completedTasks"], c["totalTasks"]) for c in json.loads(their_out)["changes"]
    }
    if ours == theirs:
        return f"yes, on all {len(ours)} changes"
    differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
    return f"NO: {len(differ)} changes differ (e.g. {differ[:3]})"


def pygls_import_ms(reps: int) -> list[tuple[float, float]]:
    """(wall, CPU) ms of ``python -c "import pygls.lsp.server"``, start to exit, ``reps`` times."""
    env = bench_env()
    out = []
    for _ in range(reps):
        wall, cpu, _ = _timed([PY, "-c", "import pygls.lsp.server"], Path.cwd(), env)
        out.append((wall, cpu))
    return out
