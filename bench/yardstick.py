"""A machine yardstick, measured in the same run as the benchmarks.

Machines (and one machine under other load) differ by 3-4x: a bare ``import pygls`` took 248 ms
on one idle run and 901 ms on another. An absolute time alone cannot be compared across runs, so
``make bench`` also times this fixed piece of work, made of what the server spends its time on
(Python bytecode, regular expressions over text, JSON, hashing, a process start), before and after
the cases, and reports every absolute-time key in units of it as well (``in_yardsticks`` in
``bench/results.json``). A slower machine's run is judged by those units.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time

_LINE = re.compile(r"^\s*-\s*\[( |x|X)\]\s+(\S.*)$")
_TEXT = "\n".join(f"- [{'x' if i % 3 else ' '}] {i}.{i % 7} task number {i}" for i in range(20_000))
_DOC = {
    "runs": [
        {"n": i, "cost": i / 7, "files": [f"src/f{j}.py" for j in range(5)]} for i in range(2_000)
    ]
}


def _work() -> None:
    total = 0
    for i in range(300_000):
        total += i * i % 7
    checked = sum(
        1 for line in _TEXT.splitlines() if (m := _LINE.match(line)) and m.group(1) != " "
    )
    json.loads(json.dumps(_DOC))
    hashlib.sha256(_TEXT.encode() * 20).hexdigest()
    subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)
    assert checked and total


def measure(reps: int = 5) -> float:
    """The fastest of ``reps`` timings of the yardstick's work, in milliseconds."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        _work()
        best = min(best, (time.perf_counter() - t0) * 1000)
    return round(best, 1)
