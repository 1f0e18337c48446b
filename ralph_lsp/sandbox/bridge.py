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
CMD did), and with ``--status-file`` also writes how CMD ended there (:func:`write_status`), since
bubblewrap turns a death by signal into an exit status and a CMD that could not be executed
is only the bridge's exit 127. Standard library only: it runs with ``-I -S``, nothing of the
project on its path.

The agent starts first: the bridge binds its port with the C socket module, spawns CMD
(``posix_spawn``), and only then loads ``relay.py`` beside it (asyncio) to serve the port, so the
agent's start does not wait for asyncio's import (SPEC §10: the sandbox's spawn overhead).
Connections made in between wait in the listening socket's backlog.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: the agent's start waits for every import before it
    import signal
    from collections.abc import Mapping, Sequence
    from pathlib import Path
else:
    import _signal as signal  # the C module: ``signal`` imports enum first (~10 ms)

#: This file, for the argv that runs it (``python3 -I -S BRIDGE_PATH ...``).
BRIDGE_PATH = os.path.realpath(__file__)
#: The NO_PROXY the agent gets by default: its own loopback stays direct.
DEFAULT_NO_PROXY = "localhost,127.0.0.1,::1"
_PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_USAGE = (
    "bridge --listen 127.0.0.1:PORT --socket PATH [--no-proxy HOSTS] [--status-file PATH]"
    " -- CMD ARGS..."
)


def bridge_argv(
    python: str,
    socket_path: Path,
    command: Sequence[str],
    *,
    port: int = 0,
    no_proxy: str = DEFAULT_NO_PROXY,
    status_file: Path | None = None,
) -> list[str]:
    """The argv that runs ``command`` behind the bridge (``python``: an interpreter the sandbox
    can run; ``socket_path``: the proxy's socket as seen inside the sandbox; ``status_file``:
    where the bridge says how ``command`` ended, see :func:`write_status`)."""
    status = ["--status-file", str(status_file)] if status_file is not None else []
    return [
        python,
        "-I",
        "-S",
        BRIDGE_PATH,
        "--listen",
        f"127.0.0.1:{port}",
        "--socket",
        str(socket_path),
        "--no-proxy",
        no_proxy,
        *status,
        "--",
        *command,
    ]


def proxy_env(port: int, no_proxy: str = DEFAULT_NO_PROXY) -> dict[str, str]:
    """The variables that send an agent's traffic to the bridge on ``port``."""
    url = f"http://127.0.0.1:{port}"
    env = dict.fromkeys(_PROXY_VARS, url)
    env.update(NO_PROXY=no_proxy, no_proxy=no_proxy, NODE_USE_ENV_PROXY="1")
    return env


class _Child:
    """The agent's pid once spawned; a signal that comes before is passed on right after."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pending: list[int] = []

    def forward(self, sig: int, _frame: object = None) -> None:
        if self.pid is None:
            self.pending.append(sig)
            return
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def spawn(self, command: Sequence[str], env: Mapping[str, str]) -> None:
        # The child gets the default SIGPIPE/SIGXFSZ back, as subprocess gives it.
        restore = [s for s in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, s)]
        self.pid = os.posix_spawnp(
            command[0], list(command), env, setsigdef=[getattr(signal, s) for s in restore]
        )
        for sig in self.pending:
            self.forward(sig)


def _listen(port: int) -> tuple[int, int]:
    """A listening socket on 127.0.0.1:``port``: its descriptor (not inherited) and its port."""
    import _socket  # the C module: ``socket`` imports enum, selectors… first

    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    bound: int = sock.getsockname()[1]
    return sock.detach(), bound


def _relay() -> object:
    """``relay.py`` beside this file, loaded by its path (nothing of the project is importable)."""
    import importlib.util

    path = os.path.join(os.path.dirname(BRIDGE_PATH), "relay.py")
    spec = importlib.util.spec_from_file_location("ralph_lsp_sandbox_relay", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(
    listen_port: int,
    socket_path: str,
    command: Sequence[str],
    no_proxy: str,
    base_env: Mapping[str, str],
    status_file: str = "",
) -> int:
    """Listen, run ``command``, relay until it exits; its exit status (negative: its signal)."""
    listener, port = _listen(listen_port)
    child = _Child()
    for sig in _FORWARDED:
        signal.signal(sig, child.forward)
    try:
        child.spawn(command, {**base_env, **proxy_env(port, no_proxy)})
    except OSError as exc:
        print(f"ralph-lsp bridge: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        os.close(listener)
        write_status(status_file, {"error": exc.errno or 0, "message": exc.strerror or str(exc)})
        return 127
    assert child.pid is not None
    status: int = _relay().serve(listener, socket_path, child.pid)  # type: ignore[attr-defined]
    write_status(status_file, {"signal": -status} if status < 0 else {"exit": status})
    return status


def write_status(path: str, status: Mapping[str, object]) -> None:
    """How the command ended, as one JSON object, for the host: bubblewrap reports a death by
    signal n as exit 128 + n, like a shell, and a program that could not be executed as the
    bridge's own exit 127, so the host could tell neither from an exit. ``{"exit": n}``,
    ``{"signal": n}`` or ``{"error": errno, "message": text}``; a new file (never through a
    link), nothing when ``path`` is empty or cannot be written."""
    if not path:
        return
    import json  # after the command ended: its start waited for nothing

    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return
    try:
        os.write(fd, json.dumps(dict(status)).encode())
    finally:
        os.close(fd)


def _usage_error(message: str) -> SystemExit:
    print(f"usage: {_USAGE}\nbridge: error: {message}", file=sys.stderr)
    return SystemExit(2)


def _parse(argv: Sequence[str]) -> tuple[int, str, str, str, list[str]]:
    """``(port, socket path, no_proxy, status file, command)`` from the arguments
    :func:`bridge_argv` gives.

    By hand, not with argparse: everything imported here delays the agent's start.
    """
    options = {"--listen": "", "--socket": "", "--no-proxy": DEFAULT_NO_PROXY, "--status-file": ""}
    rest = list(argv)
    while rest and rest[0] != "--":
        name = rest.pop(0)
        if name in ("-h", "--help"):
            print(f"usage: {_USAGE}\n\n{(__doc__ or '').split(chr(10) * 2)[0]}")
            raise SystemExit(0)
        if name not in options or not rest:
            raise _usage_error(f"unexpected argument {name!r}")
        options[name] = rest.pop(0)
    command = rest[1:]
    for name in ("--listen", "--socket"):
        if not options[name]:
            raise _usage_error(f"the following arguments are required: {name}")
    host, _, port = options["--listen"].rpartition(":")
    if host != "127.0.0.1" or not port.isdigit() or int(port) > 65535:
        raise _usage_error(f"--listen must be 127.0.0.1:PORT, not {options['--listen']!r}")
    if not command:
        raise _usage_error("no command to run (give it after --)")
    return int(port), options["--socket"], options["--no-proxy"], options["--status-file"], command


def main(argv: Sequence[str] | None = None) -> int:
    port, socket_path, no_proxy, status_file, command = _parse(
        sys.argv[1:] if argv is None else argv
    )
    status = run(port, socket_path, command, no_proxy, os.environ, status_file)
    if status < 0:  # die of the same signal, so our parent sees what the agent did
        try:  # SIGKILL cannot be caught anyway
            signal.signal(-status, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), -status)
        return 128 - status
    return status


if __name__ == "__main__":
    sys.exit(main())
