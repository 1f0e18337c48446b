"""Sandboxed runs (SPEC §10): what the sandbox costs an agent's start and the examples' checks
(the proxy's streaming cost is bench/sandbox_cases.py).

- ``sandbox_spawn_overhead_ms``: from the spawn to the agent's first line of output, sandboxed
  (bubblewrap, the egress proxy's bridge in front of the agent, as a run starts it) minus
  unsandboxed: the p50 of the rounds' differences (each round back to back, its order
  alternating, so that a shared machine's load hits both sides).
- ``sandbox_verify_ratio``: the examples' verification (``make test`` of examples/hello and
  examples/toolbox, through the verification runner), sandboxed over unsandboxed: the p50 of
  the rounds' ratios, paired the same way.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

from bench.common import REPO, bench_env, median, percentile, rnd, scratch
from bench.report import Results

EXAMPLES = ("hello", "toolbox")


async def _open(root: Path) -> object:
    from ralph_lsp.loop.sandboxing import RunSandbox
    from ralph_lsp.settings import Settings

    box = await RunSandbox.open(Settings(agent="custom"), root, root, lambda *_: None)
    assert box is not None, "the sandbox is off (RALPH_SANDBOX=off?)"
    return box


async def _first_line_ms(spec: object) -> float:
    from ralph_lsp.proc.process import AgentProcess, SpawnSpec

    assert isinstance(spec, SpawnSpec)
    t0 = time.perf_counter()
    proc = await AgentProcess.start(spec)
    async for _stream, _line in proc.lines():
        elapsed = (time.perf_counter() - t0) * 1000
        break
    else:
        raise RuntimeError("the agent printed nothing")
    await proc.wait()
    await proc.aclose()
    return elapsed


async def spawn_overhead(r: Results, reps: int) -> None:
    from ralph_lsp.proc.process import SpawnSpec

    with scratch("sandbox-spawn") as root:
        box = await _open(root)
        echo = shutil.which("echo") or "/bin/echo"
        plain = SpawnSpec([echo, "ready"], root, bench_env(), None)
        boxed = box.agent(plain)  # type: ignore[attr-defined]
        bwrap_only = box.check(plain)  # type: ignore[attr-defined]
        try:
            for spec in (plain, boxed, bwrap_only):  # warm-up: page cache, bytecode
                await _first_line_ms(spec)
            bare: list[float] = []
            sandboxed: list[float] = []
            no_bridge: list[float] = []
            for i in range(reps):  # back to back, the order alternating: load hits both
                order = [(bare, plain), (sandboxed, boxed), (no_bridge, bwrap_only)]
                for times, spec in order if i % 2 == 0 else reversed(order):
                    times.append(await _first_line_ms(spec))
        finally:
            await box.close()  # type: ignore[attr-defined]
    # the p50 of each round's difference: a shared machine's load comes and goes
    overhead = percentile([b - a for a, b in zip(bare, sandboxed, strict=True)], 50)
    r.put("sandbox_spawn_overhead_ms", rnd(overhead), reps)
    r.details["sandbox_spawn_overhead_ms"] = {
        "bwrap_alone_overhead_p50_ms": rnd(
            percentile([b - a for a, b in zip(bare, no_bridge, strict=True)], 50)
        ),
        "unsandboxed_p50_ms": rnd(percentile(bare, 50)),
        "sandboxed_p50_ms": rnd(percentile(sandboxed, 50)),
        # the same sandbox without the egress bridge in front (as a verification command)
        "sandboxed_without_bridge_p50_ms": rnd(percentile(no_bridge, 50)),
    }


async def _verify_seconds(root: Path, wrap: object) -> float:
    from ralph_lsp.loop import verify

    commands = verify.infer(root)
    runner = verify.Runner(
        root,
        bench_env(),
        600,
        asyncio.Event(),
        lambda *_: None,
        wrap=wrap,  # type: ignore[arg-type]
    )
    t0 = time.perf_counter()
    results = await runner.run(commands)
    assert results and all(x.exit_code is not None for x in results), results
    return time.perf_counter() - t0


async def verify_ratio(r: Results, reps: int) -> None:
    with scratch("sandbox-verify") as base:
        roots = []
        for name in EXAMPLES:
            roots.append(base / name)
            shutil.copytree(
                REPO / "examples" / name, roots[-1], ignore=shutil.ignore_patterns(".ralph")
            )
        boxes = [await _open(root) for root in roots]
        try:
            pairs = [(root, box.check) for root, box in zip(roots, boxes, strict=True)]  # type: ignore[attr-defined]
            for root, check in pairs:  # warm-up
                await _verify_seconds(root, None)
                await _verify_seconds(root, check)
            bare: list[float] = []
            boxed: list[float] = []
            for i in range(reps):  # back to back, the order alternating: load hits both
                sides = [(bare, None), (boxed, 1)]
                for times, wrapped in sides if i % 2 == 0 else reversed(sides):
                    total = 0.0
                    for root, check in pairs:
                        total += await _verify_seconds(root, check if wrapped else None)
                    times.append(total)
        finally:
            for box in boxes:
                await box.close()  # type: ignore[attr-defined]
    ratios = [b / a for a, b in zip(bare, boxed, strict=True)]
    r.put("sandbox_verify_ratio", rnd(percentile(ratios, 50), 3), reps)
    r.details["sandbox_verify_ratio"] = {
        "examples": list(EXAMPLES),
        "unsandboxed_s": [rnd(x, 3) for x in bare],
        "sandboxed_s": [rnd(x, 3) for x in boxed],
        "ratio_of_medians": rnd(median(boxed) / median(bare), 3),
    }
