"""The conformance gate's costs (SPEC §13).

- ``conformance_scan_vs_grep``: linking 1,000 scenarios against a generated tree of 5,000 test
  files, cold (a new scanner: every file read, every linked Python file parsed), over
  ``grep -rF -f <titles file>`` on the same tree in the same run (grep only finds the lines; the
  scan also names each test and resolves each mention against the titles). p50 of the ratios,
  the bench's own heap frozen while they are timed, as the server's is (:func:`_frozen_heap`).
- ``conformance_rescan_ms``: one test file edited, the table again: the scanner's update of
  that file (what the server calls on a file change) and the links and table of 1,000
  scenarios, p50; the full walk's rescan (every file stat-ed, only the edited one read) is in
  the details.
- ``conformance_gate_overhead``: a demo-agent run of examples/hello, sandboxed as by default,
  with the gate on (auto: its tests name every scenario) over off; p50 of the ratios of
  back-to-back pairs, the order alternating.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import median, percentile, rnd, scratch
from bench.report import REPO, Results
from ralph_lsp.conformance.check import conformance
from ralph_lsp.conformance.scan import Scanner

SCENARIOS = 1_000
FILES = 5_000


def _title(k: int) -> str:
    return f"Scenario number {k} keeps its promise"


def make_tree(root: Path) -> Path:
    """A change of :data:`SCENARIOS` scenarios and :data:`FILES` test files, one in five naming
    one scenario in a test's docstring; the titles file grep reads."""
    change = root / "openspec" / "changes" / "big"
    (change / "specs" / "cli").mkdir(parents=True)
    spec = ["## ADDED Requirements", ""]
    for r in range(SCENARIOS // 10):
        spec += [f"### Requirement: Part {r}", f"The system SHALL do part {r}.", ""]
        for k in range(r * 10, r * 10 + 10):
            spec += [f"#### Scenario: {_title(k)}", "- **WHEN** x", "- **THEN** y", ""]
    (change / "specs" / "cli" / "spec.md").write_text("\n".join(spec))
    body = "".join(f"\n\ndef test_helper_{j}():\n    assert {j} == {j}\n" for j in range(12))
    for i in range(FILES):
        folder = root / "tests" / f"pkg{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        named = (
            f'\n\ndef test_named_{i}():\n    """Scenario: {_title(i // 5)}"""\n    assert True\n'
            if i % 5 == 0
            else ""
        )
        (folder / f"test_m{i}.py").write_text(f'"""Module {i}."""\n' + body + named)
    titles = root / "titles.txt"
    titles.write_text("".join(f"Scenario: {_title(k)}\n" for k in range(SCENARIOS)))
    return change


def _grep_seconds(root: Path, titles: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        ["grep", "-rF", "-f", str(titles), str(root / "tests")],
        stdout=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - t0


def _scan_seconds(root: Path, change: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    table = conformance(root, change, Scanner(root)).table
    return time.perf_counter() - t0, table.linked


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """The bench process's own objects (every earlier case's, and the libraries they loaded)
    out of the collector's sight while the scan is timed, as the server's are: it freezes what
    its start made (``ralph_lsp.bursts.loaded``), so the collections that catch up after a
    scan walk its own few objects. Unfrozen, a heap of 2 million objects made the same scan
    6 % slower (the catch-up falling in the next timed call), a cost of the bench, not of the
    scanner."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def scan_vs_grep(r: Results, reps: int) -> None:
    if shutil.which("grep") is None:
        r.skip(["conformance_scan_vs_grep", "conformance_rescan_ms"], "grep is not installed")
        return
    with scratch("conformance") as root, _frozen_heap():
        change = make_tree(root)
        titles = root / "titles.txt"
        _grep_seconds(root, titles), _scan_seconds(root, change)  # the page cache warm for both
        ratios, greps, scans = [], [], []
        for _ in range(reps):
            g = _grep_seconds(root, titles)
            s, linked = _scan_seconds(root, change)
            greps.append(g)
            scans.append(s)
            ratios.append(s / g)
        assert linked == SCENARIOS, linked
        r.put("conformance_scan_vs_grep", rnd(percentile(ratios, 50), 3), reps)
        r.details["conformance_scan_vs_grep"] = {
            "files": FILES,
            "scenarios": SCENARIOS,
            "scan_ms_p50": rnd(median(scans) * 1000, 1),
            "grep_ms_p50": rnd(median(greps) * 1000, 1),
        }
        _rescan(r, root, change, reps * 5)


def _rescan(r: Results, root: Path, change: Path, reps: int) -> None:
    scanner = Scanner(root)
    conformance(root, change, scanner)
    edited = root / "tests" / "pkg7" / "test_m700.py"
    rel = edited.relative_to(root).as_posix()
    updates, walks = [], []
    for n in range(reps):
        with open(edited, "a", encoding="utf-8") as f:
            f.write(f"# edit {n}\n")
        t0 = time.perf_counter()
        conformance(root, change, scanner, files=scanner.update([rel]))
        updates.append((time.perf_counter() - t0) * 1000)
        os.utime(edited)
        t0 = time.perf_counter()
        scanner.scan()
        walks.append((time.perf_counter() - t0) * 1000)
    r.put("conformance_rescan_ms", {"p50": rnd(percentile(updates, 50), 2)}, reps)
    r.details["conformance_rescan_ms"] = {
        "update_and_table_ms_p95": rnd(percentile(updates, 95), 2),
        "full_walk_rescan_ms_p50": rnd(percentile(walks, 50), 2),
    }


async def _demo_seconds(base: Path, n: int, require: str) -> float:
    from ralph_lsp.loop.engine import Engine
    from ralph_lsp.settings import Settings

    root = base / f"hello-{n}-{require}"
    shutil.copytree(REPO / "examples" / "hello", root, ignore=shutil.ignore_patterns(".ralph"))
    engine = Engine()
    settings = Settings(agent="demo", conformance_require=require)
    t0 = time.perf_counter()
    await engine.start(root, "add-greeting-cli", settings)
    status = await asyncio.wait_for(engine.wait(root, "add-greeting-cli"), 300)
    seconds = time.perf_counter() - t0
    assert status.state == "succeeded", status.reason
    assert ("scenarios verified" in status.reason) == (require != "off"), status.reason
    shutil.rmtree(root, ignore_errors=True)
    return seconds


async def gate_overhead(r: Results, reps: int) -> None:
    os.environ.setdefault("RALPH_DEMO_DELAY", "0")
    with scratch("conformance-gate") as base:
        await _demo_seconds(base, -1, "auto")  # warm-up
        on: list[float] = []
        off: list[float] = []
        for i in range(reps):
            sides = [(on, "auto"), (off, "off")]
            for times, require in sides if i % 2 == 0 else reversed(sides):
                times.append(await _demo_seconds(base, i, require))
    ratios = [a / b for a, b in zip(on, off, strict=True)]
    r.put("conformance_gate_overhead", rnd(percentile(ratios, 50), 3), reps)
    r.details["conformance_gate_overhead"] = {
        "gate_on_s_p50": rnd(median(on), 3),
        "gate_off_s_p50": rnd(median(off), 3),
    }
