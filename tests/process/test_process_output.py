"""Reading agent output: floods, huge lines, binary bytes and escapes never break the reader."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from ralph_lsp.proc.process import LINE_CAP, AgentProcess, LineSplitter, SpawnSpec


async def collect(proc: AgentProcess) -> list[tuple[str, str]]:
    return [item async for item in proc.lines()]


async def test_flood_of_lines_keeps_the_loop_responsive(spec: Callable[..., SpawnSpec]) -> None:
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    started = time.monotonic()
    proc = await AgentProcess.start(spec("flood.py", "lines", "100000"))
    lines = await collect(proc)
    elapsed = time.monotonic() - started
    stop.set()
    await tick
    assert await proc.wait() == 0
    assert len(lines) == 100_000
    assert lines[0] == ("stdout", "line 0 of the flood")
    assert lines[-1] == ("stdout", "line 99999 of the flood")
    assert [int(line.split()[1]) for _, line in lines] == list(range(100_000))
    assert elapsed < 20, elapsed
    assert max(gaps) < 1.0, max(gaps)  # the loop was never blocked for long (~10 ms here)


async def test_ten_megabyte_line_is_capped(spec: Callable[..., SpawnSpec]) -> None:
    raw: dict[str, int] = {"stdout": 0, "stderr": 0}

    def sink(stream: str, chunk: bytes) -> None:
        raw[stream] += len(chunk)

    proc = await AgentProcess.start(spec("flood.py", "long", "10"), raw_sink=sink)
    lines = await collect(proc)
    assert await proc.wait() == 0
    size = 10 * 1024 * 1024
    assert [line for _, line in lines][1:] == ["end"]
    first = lines[0][1]
    assert first == "x" * LINE_CAP + f" … [{size - LINE_CAP} more bytes]"
    assert raw == {"stdout": size + len("\nend\n"), "stderr": 0}  # the raw log gets everything


async def test_binary_and_invalid_utf8(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("flood.py", "binary"))
    lines = [line for _, line in await collect(proc)]
    assert await proc.wait() == 0
    assert lines[-1] == "end"
    assert "\ufffd\ufffd\ufffd(\x00bad\ufffd" in lines
    assert "\ufffd" in lines  # a truncated three-byte character on its own line


async def test_ansi_escapes_pass_through_as_text(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("flood.py", "ansi"))
    lines = [line for _, line in await collect(proc)]
    assert await proc.wait() == 0
    assert len(lines) == 1001
    assert lines[0] == "\x1b[31mred 0\x1b[0m \x1b[2K\x1b[1A\r\x1b]0;title\x07 done"


async def test_consumer_leaving_early_does_not_block_the_agent(
    spec: Callable[..., SpawnSpec],
) -> None:
    proc = await AgentProcess.start(spec("flood.py", "lines", "200000"))
    async for _item in proc.lines():
        break
    # The rest of the output is drained and dropped: the agent is never stuck on a full pipe.
    assert await asyncio.wait_for(proc.wait(), 10.0) == 0


async def test_failing_raw_sink_does_not_stop_reading(spec: Callable[..., SpawnSpec]) -> None:
    def sink(stream: str, chunk: bytes) -> None:
        raise RuntimeError("disk full")

    proc = await AgentProcess.start(spec("flood.py", "lines", "1000"), raw_sink=sink)
    assert len(await collect(proc)) == 1000
    assert await proc.wait() == 0


async def test_last_line_without_newline(spec: Callable[..., SpawnSpec]) -> None:
    import sys

    code = "import sys; sys.stdout.write('a\\r\\nb'); sys.stderr.write('c')"
    base = spec("crash.py")
    proc = await AgentProcess.start(
        SpawnSpec([sys.executable, "-c", code], base.cwd, base.env, None)
    )
    assert sorted(await collect(proc)) == [("stderr", "c"), ("stdout", "a"), ("stdout", "b")]


# -- the line splitter on its own --------------------------------------------------------------
def reference(data: bytes, cap: int) -> list[str]:
    """What the splitter must produce for ``data`` however it arrives in chunks."""
    out = []
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    for piece in pieces:
        if len(piece) > cap:
            head = piece[:cap]
            head = head[: len(head) - _cut_character(head)]
            out.append(f"{head.decode('utf-8', 'replace')} … [{len(piece) - len(head)} more bytes]")
        else:
            if piece.endswith(b"\r"):
                piece = piece[:-1]
            out.append(piece.decode("utf-8", "replace"))
    return out


def _cut_character(head: bytes) -> int:
    """How many bytes at the end of ``head`` begin a character that more bytes would complete."""
    for size in (1, 2, 3):
        tail = head[-size:]
        if len(tail) == size and _incomplete(tail):
            return size
    return 0


def _incomplete(tail: bytes) -> bool:
    """True when ``tail`` is the start of one UTF-8 character, cut short."""
    if _one_character(tail):
        return False
    for extra in range(1, 4 - len(tail) + 1):
        seconds = range(0x80, 0xC0) if len(tail) == 1 else [0x80]
        for second in seconds:
            filled = tail + bytes([second]) + b"\x80" * (extra - 1)
            if _one_character(filled):
                return True
    return False


def _one_character(data: bytes) -> bool:
    try:
        return len(data.decode("utf-8")) == 1
    except UnicodeDecodeError:
        return False


alphabet = st.sampled_from(
    [
        b"a",
        b"\n",
        b"\r",
        b"\xc3\xa9",
        b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80",
        b"\xe2",
        b"\xff",
        b"\x80",
        b"\x00",
        b"\x1b[0m",
    ]
)


@given(
    st.lists(alphabet, max_size=200).map(b"".join),
    st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=20),
    st.integers(min_value=1, max_value=12),
)
def test_splitter_is_independent_of_chunking(data: bytes, cuts: list[int], cap: int) -> None:
    splitter = LineSplitter(cap)
    out: list[str] = []
    position, index = 0, 0
    while position < len(data):
        size = cuts[index % len(cuts)]
        out.extend(splitter.feed(data[position : position + size]))
        position += size
        index += 1
    out.extend(splitter.finish())
    assert out == reference(data, cap)
