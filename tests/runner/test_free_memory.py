"""A hosted run gives the C heap's free pages back after every iteration (runner/host.py
``return_free_memory``): what an iteration allocated and freed does not stay in the process's
RSS (the 1,000-iteration soak of docs/benchmarks.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Allocate 64 MiB in 2 KiB blocks, keep one in 16 (so the freed ones sit between live ones:
# the heap cannot shrink from its top), free the rest; RSS before and after the call.
PROBE = r"""
import sys
from ralph_lsp.runner.host import return_free_memory

def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

blocks = [bytes(2048) for _ in range(32 * 1024)]
kept = blocks[::16]
del blocks
before = rss_kib()
return_free_memory()
print(before, rss_kib(), len(kept))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_pages_go_back_to_the_system() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    before, after = int(out[0]), int(out[1])
    # About 60 MiB of the 64 were freed; without the trim RSS keeps them.
    assert before - after > 30 * 1024, f"RSS {before} KiB -> {after} KiB"
