"""Reading agent output a read at a time: ``batches()`` gives what ``lines()`` gives, grouped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from ralph_lsp.proc.process import AgentProcess, LineSplitter, SpawnSpec


async def test_batches_hold_every_line_in_order(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("flood.py", "lines", "50000"))
    batches = [item async for item in proc.batches()]
    assert await proc.wait() == 0
    assert all(lines for _stream, lines in batches)  # never an empty batch
    assert {stream for stream, _ in batches} == {"stdout"}
    flat = [line for _, lines in batches for line in lines]
    assert flat == [f"line {i} of the flood" for i in range(50_000)]
    assert len(batches) < 50_000 / 100  # many lines per read, not one item per line


async def test_one_consumer_only(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("flood.py", "lines", "10"))
    assert len([line async for line in proc.lines()]) == 10
    with pytest.raises(RuntimeError):
        async for _ in proc.batches():
            pass
    assert await proc.wait() == 0


async def test_leaving_batches_early_does_not_block_the_agent(
    spec: Callable[..., SpawnSpec],
) -> None:
    proc = await AgentProcess.start(spec("flood.py", "lines", "200000"))
    async for _batch in proc.batches():
        break
    assert await asyncio.wait_for(proc.wait(), 10.0) == 0


def test_splitter_strips_carriage_returns_only_before_newlines() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b"a\r\nb\r\nc\rd\ne\r") == ["a", "b", "c\rd"]
    assert splitter.feed(b"\nplain\nlines\n") == ["e", "plain", "lines"]
    assert splitter.finish() == []
