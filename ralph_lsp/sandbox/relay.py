"""The byte relay of the sandbox's network path (SPEC §10): :class:`Relay`, one end of a relayed
pair of connections, used by the egress proxy (``proxy.py``) and by the bridge (``bridge.py``),
and :func:`serve`, the bridge's relay from its 127.0.0.1 port to the proxy's Unix socket.

Standard library only and nothing of the project: the bridge loads this file by its path, inside
the sandbox under ``python -I -S``, once the agent has started (asyncio takes longer to import
than bubblewrap takes to start, so it is imported after the agent's spawn, not before).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import time

_CHUNK = 256 * 1024
_UNIX_BUFFER = 1024 * 1024


class Relay(asyncio.Protocol):
    """One end of a relayed pair of connections (also the proxy's, see ``proxy.py``).

    What one end receives is written to the other; an EOF is passed on (half-close) and both
    close once each side has sent its EOF; a full write buffer on one end pauses reading on the
    other (backpressure); either end lost closes the other once its buffered bytes are out.
    Bytes that arrive before :meth:`pair` wait in ``pending``.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: Relay | None = None
        self.pending = bytearray()
        self.got_eof = False
        self.last = time.monotonic()  # of the last bytes received, for an idle timeout

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=_CHUNK * 4)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family == socket.AF_UNIX:
            # A Unix socket's buffers do not grow by themselves as TCP's do: small ones mean a
            # wake-up every few kilobytes of a streamed reply.
            for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, option, _UNIX_BUFFER)

    def pair(self, peer: Relay) -> None:
        """Join this end and ``peer``; what either holds already goes across now."""
        self.peer, peer.peer = peer, self
        for side in (self, peer):
            if side.pending:
                data, side.pending = bytes(side.pending), bytearray()
                side.data_received(data)
            if side.got_eof:
                side.eof_received()

    def data_received(self, data: bytes) -> None:
        self.last = time.monotonic()
        other = self.peer.transport if self.peer is not None else None
        if other is None:
            self.pending += data
        elif not other.is_closing():
            other.write(data)

    def eof_received(self) -> bool:
        self.got_eof = True
        peer = self.peer
        if peer is None or peer.transport is None:
            return True
        if peer.got_eof:
            self.close()
        elif peer.transport.can_write_eof() and not peer.transport.is_closing():
            peer.transport.write_eof()
        return True  # keep our sending side open: the other way may still be flowing

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()

    def close(self) -> None:
        """Close both ends (each flushes what it holds first)."""
        for side in (self, self.peer):
            if side is not None and side.transport is not None:
                side.transport.close()


class LocalToUnix(Relay):
    """A connection to the bridge's port, relayed to the proxy's Unix socket."""

    def __init__(self, socket_path: str) -> None:
        super().__init__()
        self.socket_path = socket_path

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert self.transport is not None
        self.transport.pause_reading()  # until the proxy's end is there
        self._opening = asyncio.get_running_loop().create_task(self._open())

    async def _open(self) -> None:
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        try:
            _, up = await loop.create_unix_connection(Relay, self.socket_path)
        except OSError as exc:
            print(
                f"ralph-lsp bridge: cannot reach the proxy at {self.socket_path}: {exc}",
                file=sys.stderr,
            )
            self.transport.close()
            return
        if self.transport.is_closing():
            up.close()
            return
        self.pair(up)
        self.transport.resume_reading()


def serve(listener: int, socket_path: str, pid: int) -> int:
    """Relay connections to ``listener`` (a bound, listening socket's descriptor) to
    ``socket_path`` until the process ``pid`` (our child) exits; its exit status (negative: the
    signal that killed it)."""
    return asyncio.run(_serve(socket.socket(fileno=listener), socket_path, pid))


async def _serve(listener: socket.socket, socket_path: str, pid: int) -> int:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: LocalToUnix(socket_path), sock=listener)
    try:
        return await _exit_status(pid)
    finally:
        server.close()


async def _exit_status(pid: int) -> int:
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (old kernel, not Linux): a thread waits
        _, status = await loop.run_in_executor(None, os.waitpid, pid, 0)
        return os.waitstatus_to_exitcode(status)
    exited: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        await exited
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
