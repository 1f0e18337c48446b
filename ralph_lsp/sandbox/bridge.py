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
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

#: This file, for the argv that runs it (``python3 -I -S BRIDGE_PATH ...``).
BRIDGE_PATH = Path(__file__).resolve()
#: The NO_PROXY the agent gets by default: its own loopback stays direct.
DEFAULT_NO_PROXY = "localhost,127.0.0.1,::1"
_PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_CHUNK = 256 * 1024


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


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await src.read(_CHUNK):
            dst.write(data)
            await dst.drain()
        if dst.can_write_eof() and not dst.is_closing():
            dst.write_eof()


async def _relay(
    socket_path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(socket_path, limit=_CHUNK)
    except OSError as exc:
        print(f"ralph-lsp bridge: cannot reach the proxy at {socket_path}: {exc}", file=sys.stderr)
        writer.close()
        return
    up = asyncio.ensure_future(_pipe(reader, up_writer))
    try:
        await _pipe(up_reader, writer)  # the proxy's side ending ends the connection
    except asyncio.CancelledError:
        pass  # the agent has exited: the bridge is closing
    finally:
        up.cancel()
        await asyncio.gather(up, return_exceptions=True)
        for w in (up_writer, writer):
            with contextlib.suppress(Exception):
                w.close()


async def run(
    listen_port: int,
    socket_path: str,
    command: Sequence[str],
    no_proxy: str,
    base_env: Mapping[str, str],
) -> int:
    """Listen, run ``command``, relay until it exits; its exit status (negative: its signal)."""
    server = await asyncio.start_server(
        lambda r, w: _relay(socket_path, r, w), "127.0.0.1", listen_port, limit=_CHUNK
    )
    port = server.sockets[0].getsockname()[1]
    env = {**base_env, **proxy_env(port, no_proxy)}
    try:
        child = await asyncio.create_subprocess_exec(*command, env=env)
    except OSError as exc:
        print(f"ralph-lsp bridge: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    loop = asyncio.get_running_loop()
    for sig in _FORWARDED:
        loop.add_signal_handler(sig, _forward, child, sig)
    status = await child.wait()
    server.close()
    return status


def _forward(child: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(sig)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bridge", description=__doc__.split("\n\n")[0])
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
