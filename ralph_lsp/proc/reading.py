"""An agent's output, read: chunks from its pipes split into capped lines (a 10 MB line costs
bounded memory), handed out in batches (the lines of one read) or one at a time, with the raw
bytes teed to the run's log."""

from __future__ import annotations

import asyncio
import codecs
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Literal

log = logging.getLogger(__name__)


Stream = Literal["stdout", "stderr"]


RawSink = Callable[[str, bytes], None]


LINE_CAP = 256 * 1024


CHUNK = 64 * 1024


class LineSplitter:
    """Bytes in, decoded lines out: UTF-8 with replacement, no line ending, at most ``cap`` bytes.

    Splits on ``\\n`` and drops one ``\\r`` before it. A longer line keeps its first ``cap`` bytes
    (cut at a character boundary) followed by ``… [N more bytes]``; the rest is counted, not kept.
    """

    def __init__(self, cap: int = LINE_CAP) -> None:
        self.cap = cap
        self._buf = bytearray()
        self._dropped = 0

    def feed(self, data: bytes) -> list[str]:
        first = data.find(b"\n")
        if first < 0:
            self._append(data)
            return []
        self._append(data[:first])
        out = [self._emit()]
        last = data.rfind(b"\n")
        if last > first:
            middle = data[first + 1 : last]
            if len(middle) <= self.cap:  # every middle line fits: decode them in one go
                text = middle.decode("utf-8", "replace")
                lines = text.split("\n")
                if "\r" in text:
                    out.extend(line[:-1] if line.endswith("\r") else line for line in lines)
                else:
                    out.extend(lines)
            else:
                for piece in middle.split(b"\n"):
                    self._append(piece)
                    out.append(self._emit())
        self._append(data[last + 1 :])
        return out

    def finish(self) -> list[str]:
        """The last line, if the stream did not end with a newline."""
        return [self._emit()] if self._buf or self._dropped else []

    def _append(self, piece: bytes) -> None:
        room = self.cap - len(self._buf)
        if len(piece) <= room:
            self._buf += piece
        else:
            self._buf += piece[: max(room, 0)]
            self._dropped += len(piece) - max(room, 0)

    def _emit(self) -> str:
        raw = bytes(self._buf)
        dropped = self._dropped
        self._buf.clear()
        self._dropped = 0
        if not dropped:
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            return raw.decode("utf-8", "replace")
        # Decode as if more were coming, so a character cut in half at the cap is left out
        # (and counted) rather than shown as a replacement character.
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(raw, final=False)
        dropped += len(decoder.getstate()[0])
        return f"{text} … [{dropped} more bytes]"


class OutputReading:
    """The output half of an ``AgentProcess``."""

    _queue: asyncio.Queue[tuple[Stream, list[str]] | None]
    _discard: bool
    _lines_taken: bool
    _raw_sink: RawSink | None
    _sink_failed: bool
    _line_cap: int
    _tasks: list[asyncio.Task[None]]

    async def batches(self) -> AsyncGenerator[tuple[Stream, list[str]], None]:
        """``(stream, lines)`` as the agent writes them, until both stdout and stderr are closed:
        the lines one read of that stream completed (never empty), in order within each stream.

        Lines are decoded as UTF-8 with replacement, without their line ending, capped at
        ``line_cap`` bytes. One consumer only (of ``batches`` or ``lines``). Leaving the loop
        early discards the rest.

        Read it to the end (or call ``aclose``): unread output is held back, so an agent that
        writes much more than is read blocks on its full pipe, as it would under any reader.
        """
        if self._lines_taken:
            raise RuntimeError("AgentProcess.lines() may be iterated only once")
        self._lines_taken = True
        open_streams = 2
        try:
            while open_streams:
                batch = await self._queue.get()
                if batch is None:
                    open_streams -= 1
                    continue
                yield batch
                await asyncio.sleep(0)  # a flood must not starve the rest of the event loop
        finally:
            if open_streams:
                self._discard = True
                while not self._queue.empty():
                    self._queue.get_nowait()

    async def lines(self) -> AsyncIterator[tuple[Stream, str]]:
        """``(stream, line)`` one at a time: ``batches()`` flattened (same rules)."""
        batches = self.batches()
        try:
            async for name, lines in batches:
                for line in lines:
                    yield name, line
        finally:
            await batches.aclose()

    async def _pump(self, name: Stream, reader: asyncio.StreamReader) -> None:
        splitter = LineSplitter(self._line_cap)
        try:
            while True:
                chunk = await reader.read(CHUNK)
                if not chunk:
                    break
                self._sink(name, chunk)
                lines = splitter.feed(chunk)
                if lines:
                    await self._put((name, lines))
                await asyncio.sleep(0)
            tail = splitter.finish()
            if tail:
                await self._put((name, tail))
        finally:
            await self._put(None)

    async def _put(self, batch: tuple[Stream, list[str]] | None) -> None:
        if not self._discard:
            await self._queue.put(batch)

    def _sink(self, name: Stream, chunk: bytes) -> None:
        if self._raw_sink is None:
            return
        try:
            self._raw_sink(name, chunk)
        except Exception:
            if not self._sink_failed:
                self._sink_failed = True
                log.exception("the raw output sink failed; output is still read")
