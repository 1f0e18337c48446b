"""Sandboxed runs (SPEC §10): what the sandbox costs an agent's start and the examples' checks
(the proxy's streaming cost is bench/sandbox_cases.py).

- ``sandbox_spawn_overhead_ms``: from the spawn to the agent's first line of output, sandboxed
  (bubblewrap, the egress proxy's bridge in front of the agent, as a run starts it) minus
  unsandboxed, p50 of each, interleaved.
- ``sandbox_verify_ratio``: the examples' verification (``make test`` of examples/hello and
  examples/toolbox, through the verification runner) sandboxed over unsandboxed, medians.
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
            for _ in range(reps):
                bare.append(await _first_line_ms(plain))
                sandboxed.append(await _first_line_ms(boxed))
                no_bridge.append(await _first_line_ms(bwrap_only))
        finally:
            await box.close()  # type: ignore[attr-defined]
    overhead = percentile(sandboxed, 50) - percentile(bare, 50)
    r.put("sandbox_spawn_overhead_ms", rnd(overhead), reps)
    r.details["sandbox_spawn_overhead_ms"] = {
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
    per_example: dict[str, dict[str, float]] = {}
    total_bare = total_boxed = 0.0
    for name in EXAMPLES:
        with scratch(f"sandbox-verify-{name}") as base:
            root = base / name
            shutil.copytree(REPO / "examples" / name, root, ignore=shutil.ignore_patterns(".ralph"))
            box = await _open(root)
            try:
                await _verify_seconds(root, None)  # warm-up
                bare: list[float] = []
                boxed: list[float] = []
                for _ in range(reps):  # interleaved: drift on the machine hits both alike
                    bare.append(await _verify_seconds(root, None))
                    boxed.append(await _verify_seconds(root, box.check))  # type: ignore[attr-defined]
            finally:
                await box.close()  # type: ignore[attr-defined]
        per_example[name] = {"unsandboxed_s": rnd(median(bare)), "sandboxed_s": rnd(median(boxed))}
        total_bare += median(bare)
        total_boxed += median(boxed)
    r.put("sandbox_verify_ratio", rnd(total_boxed / total_bare), reps)
    r.details["sandbox_verify_ratio"] = per_example
