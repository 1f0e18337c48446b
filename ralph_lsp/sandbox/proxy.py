"""The egress proxy a sandboxed agent reaches its model API through (SPEC §10, Network).

It listens on a Unix socket (mode 0600, in a folder only its owner can enter; that socket is what
the sandbox is handed, see :mod:`ralph_lsp.sandbox.bridge`) and, optionally, on a 127.0.0.1 TCP
port. It speaks two things:

- ``CONNECT host:port HTTP/1.1`` (HTTPS and any tunnel): ``200`` then raw bytes both ways;
- absolute-URI plain HTTP (``GET http://host:port/path HTTP/1.1``): the request goes upstream in
  origin form with ``Connection: close`` and a ``Host:`` naming the host that was checked (the
  client's own is dropped: no fronting another site through an allowed one), and the reply
  streams back with its head saying ``Connection: close`` too (:class:`_Reply`): the proxy
  closes the client's connection after one reply, and a client told nothing would keep it for
  its next request and, when the close crosses that request, see the connection reset.

A target is reached only when :class:`~ralph_lsp.sandbox.allowlist.Allowlist` allows it; else the
client gets ``403`` with a one-line body naming the host and the reason, and ``on_refusal`` is
called with a :class:`Refusal` (for the run's history). Once allowed, the two connections are
joined by :class:`~ralph_lsp.sandbox.relay.Relay` protocols: bytes go straight from one
transport to the other, with backpressure (a full write buffer pauses reading on the other end)
and half-close (an EOF one way is passed on while the other way keeps flowing). Connections
are bounded (``max_connections``; past it: ``503``), the request head and the upstream connect
have timeouts, a tunnel idle for ``idle_timeout`` seconds is closed, and nothing raises out of
a connection's handling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ralph_lsp.sandbox.allowlist import DEFAULT_PORTS, Allowlist, split_host_port
from ralph_lsp.sandbox.relay import Relay
from ralph_lsp.sandbox.sockets import proxy_folder

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
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

    @property
    def entry(self) -> str:
        """The ``ralph.sandbox.allowedDomains`` entry that would allow it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port in DEFAULT_PORTS else f"{host}:{self.port}"

    def to_json(self) -> dict[str, str]:
        """For the run's history, in the shape of an agent's refused tool call
        (``runs.records.RefusalRecord``): tool ``Network``, input ``host:port``, and as the rule
        the allowlist entry that would allow it."""
        return {"tool": "Network", "input": f"{self.host}:{self.port}", "rule": self.entry}


class _Reject(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def private_socket_path() -> Path:
    """A fresh path for the proxy's socket, in a new folder of its own only this user can enter
    (0700, a random name) inside the user's private folder, which no sandbox sees
    (:func:`~ralph_lsp.sandbox.sockets.proxy_folder`; the run's agent gets only its own bound
    in), short enough for a Unix socket address."""
    return proxy_folder() / "proxy.sock"


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
        self._servers: list[asyncio.Server] = []
        self._clients: set[_Client] = set()
        self._sweeper: asyncio.Task[None] | None = None

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
        loop = asyncio.get_running_loop()
        if socket_path is not None:
            folder = socket_path.parent
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if folder.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ValueError(f"the proxy socket's folder {folder} is open to other users")
            with contextlib.suppress(FileNotFoundError):
                socket_path.unlink()
            server = await loop.create_unix_server(lambda: _Client(self), str(socket_path))
            os.chmod(socket_path, 0o600)
            self._servers.append(server)
            self.socket_path = socket_path
        if tcp_port is not None:
            server = await loop.create_server(lambda: _Client(self), "127.0.0.1", tcp_port)
            self._servers.append(server)
            self.tcp_port = server.sockets[0].getsockname()[1]
        self._sweeper = loop.create_task(self._sweep())

    async def close(self) -> None:
        """Stop listening, end every open connection, remove the socket file."""
        for server in self._servers:
            server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        for client in list(self._clients):
            client.abort()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        self._servers.clear()
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                self.socket_path.unlink()

    async def _sweep(self) -> None:
        """Close the tunnels idle for ``idle_timeout`` seconds."""
        while True:
            await asyncio.sleep(min(30.0, self.idle_timeout / 4))
            now = time.monotonic()
            for client in list(self._clients):
                peer = client.peer
                if peer is not None and now - max(client.last, peer.last) > self.idle_timeout:
                    client.close()

    def _refuse(self, refusal: Refusal) -> None:
        self.refusals.append(refusal)
        if self._on_refusal is not None:
            try:
                self._on_refusal(refusal)
            except Exception:  # a broken callback must not break the proxy
                log.exception("egress proxy: the refusal callback failed")

    async def _open(self, client: _Client, head: bytes) -> None:
        """Check the request, connect upstream, join the two ends; answer a refusal or a
        failure on the client's connection instead. Never raises."""
        assert client.transport is not None
        try:
            host, port, upstream_head = _parse_head(head)
            reason = self.allowlist.check(host, port)
            if reason is not None:
                refusal = Refusal(host, port, reason)
                self._refuse(refusal)
                raise _Reject(
                    "403 Forbidden",
                    f"ralph-lsp sandbox: connection to {host}:{port} refused ({reason}); "
                    f'allow it with ralph.sandbox.allowedDomains: ["{refusal.entry}"]\n',
                )
            up = await self._connect(host, port, plain=upstream_head is not None)
        except _Reject as rej:
            client.answer(_response(rej.status, rej.message))
            return
        except Exception as exc:  # never out of a connection's handling
            log.warning("egress proxy: connection failed: %r", exc)
            client.abort()
            return
        if client.transport.is_closing():
            up.close()
            return
        self.allowed_counts[f"{host}:{port}"] += 1
        if upstream_head is None:
            client.transport.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            assert up.transport is not None
            up.transport.write(upstream_head)
        client.pair(up)
        client.transport.resume_reading()

    async def _connect(self, host: str, port: int, *, plain: bool = False) -> Relay:
        loop = asyncio.get_running_loop()
        kind = _Reply if plain else Relay
        try:
            _, up = await asyncio.wait_for(
                loop.create_connection(kind, host.strip("[]"), port), self.connect_timeout
            )
        except (OSError, TimeoutError) as exc:
            raise _Reject(
                "502 Bad Gateway", f"ralph-lsp proxy: cannot reach {host}:{port}: {exc}\n"
            ) from None
        return up


class _Client(Relay):
    """A client's connection: its request head first, then (once allowed) a relay upstream."""

    def __init__(self, proxy: EgressProxy) -> None:
        super().__init__()
        self.proxy = proxy
        self.head = bytearray()
        self.opening: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        proxy = self.proxy
        proxy.active += 1
        proxy._clients.add(self)
        if proxy.active > proxy.max_connections:
            self.answer(_response("503 Service Unavailable", "proxy busy\n"))
            return
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(proxy.head_timeout, self.close)

    def data_received(self, data: bytes) -> None:
        if self.opening is not None or self.peer is not None:
            super().data_received(data)
            return
        self.head += data
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            if len(self.head) > HEAD_LIMIT:
                self.answer(_response("431 Request Header Fields Too Large", "head too large\n"))
            return
        assert self.transport is not None
        if self.timer is not None:
            self.timer.cancel()
        self.transport.pause_reading()  # until the upstream end is there
        self.pending += self.head[end + 4 :]
        head, self.head = bytes(self.head[: end + 4]), bytearray()
        self.opening = asyncio.get_running_loop().create_task(self.proxy._open(self, head))

    def eof_received(self) -> bool:
        if self.opening is None:  # the client gave up before its request was complete
            self.close()
            return False
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.proxy.active -= 1
        self.proxy._clients.discard(self)
        if self.timer is not None:
            self.timer.cancel()
        if self.opening is not None and not self.opening.done():
            self.opening.cancel()

    def answer(self, data: bytes) -> None:
        """Say ``data`` and close (a refusal, an error)."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
            self.transport.close()

    def abort(self) -> None:
        for side in (self, self.peer):
            if side is not None and side.transport is not None:
                side.transport.abort()


class _Reply(Relay):
    """The upstream end of a plain-HTTP request: the reply's head is relayed with its
    ``Connection`` and ``Keep-Alive`` headers replaced by ``Connection: close`` (a head past
    ``HEAD_LIMIT`` goes across as it is); then the body's bytes, as any relay's."""

    def __init__(self) -> None:
        super().__init__()
        self.head: bytearray | None = bytearray()  # None once the head went across

    def data_received(self, data: bytes) -> None:
        if self.head is None:
            super().data_received(data)
            return
        self.head += data
        end = self.head.find(b"\r\n\r\n")
        if end < 0 and len(self.head) <= HEAD_LIMIT:
            return
        held, self.head = bytes(self.head), None
        if end >= 0:
            held = _closing_head(held[: end + 4]) + held[end + 4 :]
        super().data_received(held)

    def eof_received(self) -> bool:
        if self.head:  # a reply cut short inside its head: what came goes across
            held, self.head = bytes(self.head), None
            super().data_received(held)
        return super().eof_received()


def _closing_head(head: bytes) -> bytes:
    """A reply's head saying ``Connection: close`` (its own connection headers dropped)."""
    lines = head[:-4].split(b"\r\n")
    kept = [
        line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    return b"\r\n".join([lines[0], *kept, b"Connection: close", b"", b""])


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
    kept = [line for line in lines[1:] if line and not _is_dropped(line)]
    first = f"{method} {path} {version}".encode("latin-1")
    checked = _host_header(url.hostname, url.port)
    return host, port, b"\r\n".join([first, checked, *kept, b"Connection: close", b"", b""])


def _host_header(host: str, port: int | None) -> bytes:
    """The ``Host:`` sent upstream: the host the allowlist checked, never the client's own (a
    ``Host:`` naming another site would reach it through an allowed front: domain fronting)."""
    shown = f"[{host}]" if ":" in host else host
    return f"Host: {shown}{'' if port is None else ':' + str(port)}".encode("latin-1")


def _is_dropped(line: bytes) -> bool:
    """A hop-by-hop header, or the client's ``Host:`` (replaced by the checked one)."""
    name = line.split(b":", 1)[0].strip().lower()
    return name in _HOP_HEADERS or name == b"host"
