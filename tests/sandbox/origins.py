"""Small real servers on 127.0.0.1 for the proxy tests: an HTTP origin and a raw echo server.

- :class:`Origin`: ``/hello`` → ``hello``; ``/stream?bytes=N`` → N bytes of server-sent events
  in chunked encoding (a model's streamed reply); ``/endless`` → events until the reader goes
  away (``gone`` is set then). Records each request head and counts connections.
- :class:`Echo`: echoes what it reads; after the client's EOF it writes ``bye:<bytes read>`` and
  closes (so a test sees that a half-close was passed on and the other way still flowed).
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import parse_qs, urlsplit

EVENT = b"event: content_block_delta\r\ndata: " + b'{"type":"text_delta","text":"' + b"x" * 900
EVENT += b'"}\r\n\r\n'


async def sse_body(writer: asyncio.StreamWriter, total: int) -> None:
    """``total`` bytes of SSE events, in HTTP chunks, then the last chunk."""
    sent = 0
    while sent < total:
        piece = EVENT[: total - sent]
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        sent += len(piece)
        if writer.transport.get_write_buffer_size() > 256 * 1024:
            await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
)


KEEP_ALIVE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n"
    b"Keep-Alive: timeout=5\r\nrequest-id: req_1\r\n\r\n"
)


class Origin:
    def __init__(self) -> None:
        self.heads: list[bytes] = []
        self.connections = 0
        self.gone = asyncio.Event()
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Origin:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            self.heads.append(head)
            target = urlsplit(head.split(b" ")[1].decode())
            if target.path == "/hello":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            elif target.path == "/keep-alive":  # as an HTTP/1.1 server that keeps connections
                writer.write(KEEP_ALIVE_HEAD + b"hello")
            elif target.path == "/stream":
                writer.write(STREAM_HEAD)
                await sse_body(writer, int(parse_qs(target.query)["bytes"][0]))
            elif target.path == "/endless":
                writer.write(STREAM_HEAD)
                while True:
                    writer.write(b"%x\r\n%s\r\n" % (len(EVENT), EVENT))
                    await writer.drain()
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            self.gone.set()
        finally:
            with contextlib.suppress(Exception):
                writer.close()


class Echo:
    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Echo:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        total = 0
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                total += len(data)
                writer.write(data)
                await writer.drain()
            writer.write(b"bye:%d" % total)
            await writer.drain()
        writer.close()


async def read_response(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """(status line + headers, the whole body to EOF) of an HTTP reply."""
    head = await reader.readuntil(b"\r\n\r\n")
    return head, await reader.read()


def dechunk(body: bytes) -> bytes:
    """The payload of a chunked body."""
    out, i = bytearray(), 0
    while True:
        end = body.index(b"\r\n", i)
        size = int(body[i:end], 16)
        if size == 0:
            return bytes(out)
        out += body[end + 2 : end + 2 + size]
        i = end + 2 + size + 2
