"""The egress proxy a sandboxed agent reaches its model API through (SPEC §10, Network).

It listens on a Unix socket (mode 0600, in a folder only its owner can enter; that socket is what
the sandbox is handed, see :mod:`ralph_lsp.sandbox.bridge`) and, optionally, on a 127.0.0.1 TCP
port. It speaks two things:

- ``CONNECT host:port HTTP/1.1`` (HTTPS and any tunnel): ``200`` then raw bytes both ways;
- absolute-URI plain HTTP (``GET http://host:port/path HTTP/1.1``): the request goes upstream in
  origin form with ``Connection: close``, and the reply streams back.

A target is reached only when :class:`~ralph_lsp.sandbox.allowlist.Allowlist` allows it; else the
client gets ``403`` with a one-line body naming the host and the reason, and ``on_refusal`` is
called with a :class:`Refusal` (for the run's history). Bytes stream in both directions with
backpressure (a read waits for the other side's drain) and half-close (an EOF one way is passed
on while the other way keeps flowing). Connections are bounded (``max_connections``; past it:
``503``), the request head and the upstream connect have timeouts, a tunnel idle for
``idle_timeout`` seconds is closed, and no handler raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ralph_lsp.sandbox.allowlist import Allowlist, split_host_port

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
CHUNK = 256 * 1024
_HOP_HEADERS = frozenset(
    {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive", b"te"}
)


@dataclass(frozen=True)
class Refusal:
    """A connection the proxy refused: the target and why."""

    host: str
    port: int
    reason: str

    def __str__(self) -> str:
        return f"{self.host}:{self.port}: {self.reason}"


class _Reject(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def private_socket_path(prefix: str = "ralph-proxy-") -> Path:
    """A fresh path for the proxy's socket, in a new folder only this user can enter (0700),
    short enough for a Unix socket address."""
    return Path(tempfile.mkdtemp(prefix=prefix)) / "proxy.sock"


def _response(status: str, body: str) -> bytes:
    data = body.encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + data


class EgressProxy:
    """An allowlisting HTTP proxy. ``allowed``: allowlist entries (see
    :mod:`ralph_lsp.sandbox.allowlist`; ``ValueError`` for a malformed one); ``on_refusal``:
    called once per refused connection, never allowed to break the proxy."""

    def __init__(
        self,
        allowed: Sequence[str],
        on_refusal: Callable[[Refusal], None] | None = None,
        *,
        max_connections: int = 256,
        head_timeout: float = 30.0,
        connect_timeout: float = 30.0,
        idle_timeout: float = 900.0,
    ) -> None:
        self.allowlist = Allowlist(allowed)
        self._on_refusal = on_refusal
        self.max_connections = max_connections
        self.head_timeout = head_timeout
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.socket_path: Path | None = None
        self.tcp_port: int | None = None
        #: Connections let through, by ``host:port``; and every refusal, in order.
        self.allowed_counts: Counter[str] = Counter()
        self.refusals: list[Refusal] = []
        self.active = 0
        self.peak_active = 0
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> str:
        """Where clients connect: ``unix:<path>`` and/or ``http://127.0.0.1:<port>``."""
        parts = []
        if self.socket_path is not None:
            parts.append(f"unix:{self.socket_path}")
        if self.tcp_port is not None:
            parts.append(f"http://127.0.0.1:{self.tcp_port}")
        return " ".join(parts)

    async def start(self, socket_path: Path | None = None, tcp_port: int | None = None) -> None:
        """Listen on ``socket_path`` (its folder is created 0700 when missing, and must not be
        open to others) and/or 127.0.0.1:``tcp_port`` (0: any free port)."""
        if socket_path is None and tcp_port is None:
            raise ValueError("EgressProxy.start needs a socket path, a TCP port, or both")
        if socket_path is not None:
            folder = socket_path.parent
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if folder.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ValueError(f"the proxy socket's folder {folder} is open to other users")
            with contextlib.suppress(FileNotFoundError):
                socket_path.unlink()
            server = await asyncio.start_unix_server(
                self._handle, path=str(socket_path), limit=HEAD_LIMIT
            )
            os.chmod(socket_path, 0o600)
            self._servers.append(server)
            self.socket_path = socket_path
        if tcp_port is not None:
            server = await asyncio.start_server(
                self._handle, "127.0.0.1", tcp_port, limit=HEAD_LIMIT
            )
            self._servers.append(server)
            self.tcp_port = server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stop listening, end every open connection, remove the socket file."""
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        self._servers.clear()
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                self.socket_path.unlink()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.active += 1
        self.peak_active = max(self.peak_active, self.active)
        try:
            if self.active > self.max_connections:
                await _send(writer, _response("503 Service Unavailable", "proxy busy\n"))
            else:
                await self._serve(reader, writer)
        except (asyncio.CancelledError, Exception) as exc:  # never out of a handler
            if not isinstance(exc, (asyncio.CancelledError, ConnectionError, TimeoutError)):
                log.warning("egress proxy: connection failed: %r", exc)
        finally:
            self.active -= 1
            await _close(writer)
            if task is not None:
                self._tasks.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.head_timeout)
            host, port, upstream_head = _parse_head(head)
            reason = self.allowlist.check(host, port)
            if reason is not None:
                self._refuse(Refusal(host, port, reason))
                raise _Reject(
                    "403 Forbidden",
                    f"ralph-lsp sandbox: connection to {host}:{port} refused ({reason}); "
                    "allow it with ralph.sandbox.allowedDomains\n",
                )
            up_reader, up_writer = await self._connect(host, port)
        except _Reject as rej:
            await _send(writer, _response(rej.status, rej.message))
            return
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            return  # no complete head in time or in size: nothing to answer
        self.allowed_counts[f"{host}:{port}"] += 1
        try:
            if upstream_head is None:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                up_writer.write(upstream_head)
            await self._pipe_both(reader, writer, up_reader, up_writer)
        finally:
            await _close(up_writer)

    async def _connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(host.strip("[]"), port, limit=CHUNK), self.connect_timeout
            )
        except (OSError, TimeoutError) as exc:
            raise _Reject(
                "502 Bad Gateway", f"ralph-lsp proxy: cannot reach {host}:{port}: {exc}\n"
            ) from None

    def _refuse(self, refusal: Refusal) -> None:
        self.refusals.append(refusal)
        if self._on_refusal is not None:
            try:
                self._on_refusal(refusal)
            except Exception:  # a broken callback must not break the proxy
                log.exception("egress proxy: the refusal callback failed")

    async def _pipe_both(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        up = asyncio.ensure_future(_pipe(reader, up_writer, self.idle_timeout))
        down = asyncio.ensure_future(_pipe(up_reader, writer, self.idle_timeout))
        try:
            # The reply ending ends the exchange; the request side ending is passed on as EOF.
            await down
        finally:
            up.cancel()
            await asyncio.gather(up, return_exceptions=True)


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, idle: float) -> None:
    """Copy until EOF, then half-close ``dst``; one chunk in flight at a time (backpressure)."""
    try:
        while True:
            data = await asyncio.wait_for(src.read(CHUNK), idle)
            if not data:
                break
            dst.write(data)
            await dst.drain()
        if dst.can_write_eof() and not dst.is_closing():
            dst.write_eof()
    except (ConnectionError, TimeoutError, OSError):
        pass


def _parse_head(head: bytes) -> tuple[str, int, bytes | None]:
    """(host, port, the head to send upstream, or None for CONNECT) from a request head;
    :class:`_Reject` with a 4xx/5xx answer when the request is not one a proxy serves."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise _Reject("400 Bad Request", "ralph-lsp proxy: malformed request line\n")
    method, target, version = (p.decode("latin-1") for p in parts)
    try:
        if method.upper() == "CONNECT":
            host, port = split_host_port(target)
            if port is None:
                raise ValueError("CONNECT needs host:port")
            return host, port, None
        url = urlsplit(target)
        if url.scheme.lower() != "http" or not url.hostname:
            raise ValueError("a proxy request needs an absolute http:// URL (https: use CONNECT)")
        host, port = url.hostname, url.port or 80
    except ValueError as exc:
        raise _Reject("400 Bad Request", f"ralph-lsp proxy: {exc}\n") from None
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    kept = [line for line in lines[1:] if line and not _is_hop_header(line)]
    first = f"{method} {path} {version}".encode("latin-1")
    return host, port, b"\r\n".join([first, *kept, b"Connection: close", b"", b""])


def _is_hop_header(line: bytes) -> bool:
    return line.split(b":", 1)[0].strip().lower() in _HOP_HEADERS


async def _send(writer: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        writer.write(data)
        await writer.drain()


async def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 5)
