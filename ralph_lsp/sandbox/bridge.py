"""Runs inside the sandbox: relays 127.0.0.1:<port> to the egress proxy's Unix socket, and runs
the agent with the proxy variables pointing there.

Inside the sandbox's own network namespace the host's 127.0.0.1 (where the proxy would listen)
is out of reach; the proxy's Unix socket is bound into the sandbox instead, and this program
makes it a local HTTP proxy again::

    python3 -I -S <path of this file> --listen 127.0.0.1:0 --socket <unix path> -- CMD ARGS...

It binds the port first (``0``: any free one), then starts CMD as its child with stdin, stdout
and stderr inherited and, in its environment, ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY`` (and
their lowercase forms) set to ``http://127.0.0.1:<the bound port>``, ``NO_PROXY``/``no_proxy``
set to ``--no-proxy`` (default: the sandbox's own loopback, ``localhost,127.0.0.1,::1``), and
``NODE_USE_ENV_PROXY=1`` (Node's own fetch honours the variables only then). SIGTERM, SIGINT and
SIGHUP are passed on to CMD; the bridge exits with CMD's status (dying of the same signal when
CMD did). Standard library only: it runs with ``-I -S``, nothing of the project on its path.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

#: This file, for the argv that runs it (``python3 -I -S BRIDGE_PATH ...``).
BRIDGE_PATH = Path(__file__).resolve()
#: The NO_PROXY the agent gets by default: its own loopback stays direct.
DEFAULT_NO_PROXY = "localhost,127.0.0.1,::1"
_PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_CHUNK = 256 * 1024
_UNIX_BUFFER = 1024 * 1024


def bridge_argv(
    python: str,
    socket_path: Path,
    command: Sequence[str],
    *,
    port: int = 0,
    no_proxy: str = DEFAULT_NO_PROXY,
) -> list[str]:
    """The argv that runs ``command`` behind the bridge (``python``: an interpreter the sandbox
    can run; ``socket_path``: the proxy's socket as seen inside the sandbox)."""
    return [
        python,
        "-I",
        "-S",
        str(BRIDGE_PATH),
        "--listen",
        f"127.0.0.1:{port}",
        "--socket",
        str(socket_path),
        "--no-proxy",
        no_proxy,
        "--",
        *command,
    ]


def proxy_env(port: int, no_proxy: str = DEFAULT_NO_PROXY) -> dict[str, str]:
    """The variables that send an agent's traffic to the bridge on ``port``."""
    url = f"http://127.0.0.1:{port}"
    env = dict.fromkeys(_PROXY_VARS, url)
    env.update(NO_PROXY=no_proxy, no_proxy=no_proxy, NODE_USE_ENV_PROXY="1")
    return env


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


class _Local(Relay):
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


async def run(
    listen_port: int,
    socket_path: str,
    command: Sequence[str],
    no_proxy: str,
    base_env: Mapping[str, str],
) -> int:
    """Listen, run ``command``, relay until it exits; its exit status (negative: its signal)."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Local(socket_path), "127.0.0.1", listen_port)
    port = server.sockets[0].getsockname()[1]
    env = {**base_env, **proxy_env(port, no_proxy)}
    try:
        child = await asyncio.create_subprocess_exec(*command, env=env)
    except OSError as exc:
        print(f"ralph-lsp bridge: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    for sig in _FORWARDED:
        loop.add_signal_handler(sig, _forward, child, sig)
    status = await child.wait()
    server.close()
    return status


def _forward(child: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(sig)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bridge", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--listen", required=True, help="127.0.0.1:PORT to listen on (0: any)")
    p.add_argument("--socket", required=True, help="the egress proxy's Unix socket")
    p.add_argument("--no-proxy", default=DEFAULT_NO_PROXY, help="the agent's NO_PROXY")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    args = p.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    host, _, port = args.listen.rpartition(":")
    if host != "127.0.0.1" or not port.isdigit() or int(port) > 65535:
        p.error(f"--listen must be 127.0.0.1:PORT, not {args.listen!r}")
    if not args.command:
        p.error("no command to run (give it after --)")
    args.port = int(port)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    status = asyncio.run(run(args.port, args.socket, args.command, args.no_proxy, os.environ))
    if status < 0:  # die of the same signal, so our parent sees what the agent did
        with contextlib.suppress(OSError, ValueError):  # SIGKILL cannot be caught anyway
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        return 128 - status
    return status


if __name__ == "__main__":
    sys.exit(main())
