"""Reading a regular file up to a cap (``openspec/regular_files.py``): the bytes exactly, a file
over the cap refused, and no read allocating the cap itself (a 64 MiB buffer per small spec
was an mmap, mremap and munmap each, most of a validation's reading)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from ralph_lsp.openspec.regular_files import GROWTH_CHUNK, NotARegularFile, read_regular

CAP = 64 << 20


@pytest.mark.parametrize("size", [0, 1, 9_000, GROWTH_CHUNK, GROWTH_CHUNK + 1, 300_000])
def test_the_bytes_of_a_file_exactly(tmp_path: Path, size: int) -> None:
    path = tmp_path / "spec.md"
    data = bytes(i % 251 for i in range(size))
    path.write_bytes(data)
    assert read_regular(path, CAP) == data


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(NotARegularFile):
        read_regular(path, 1000)
    path.write_bytes(b"x" * 1000)
    assert len(read_regular(path, 1000)) == 1000


def test_a_small_file_is_read_without_allocating_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_bytes(b"## Purpose\n" * 800)
    tracemalloc.start()
    try:
        read_regular(path, CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak:,} bytes allocated to read a 8,800-byte file"
