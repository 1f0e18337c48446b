"""Running a real program behind the egress proxy, in a network namespace of its own.

- :class:`ProxyThread`: an :class:`~ralph_lsp.sandbox.proxy.EgressProxy` on its own event loop in
  a thread, so that a test can run a CLI with ``subprocess.run`` while the proxy serves it.
- :func:`netns_prefix`: the argv prefix that starts a program in a new network namespace where
  only ``lo`` is up (bubblewrap when installed, else ``unshare -rn`` + ``ip``), or None.
- :func:`behind_proxy`: a command wrapped in that namespace and the bridge, so its only way out
  is the proxy's Unix socket.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from ralph_lsp.sandbox.bridge import DEFAULT_NO_PROXY, bridge_argv
from ralph_lsp.sandbox.proxy import EgressProxy, Refusal, private_socket_path


class ProxyThread:
    """``with ProxyThread(allowed) as proxy:`` → ``proxy.socket_path``, ``proxy.tcp_port``,
    ``proxy.counts`` (allowed connections by ``host:port``) and ``proxy.reported`` (what the
    refusal callback received)."""

    def __init__(self, allowed: Sequence[str], *, tcp: bool = False, **options: float) -> None:
        self.reported: list[Refusal] = []
        self.proxy = EgressProxy(allowed, self.reported.append, **options)  # type: ignore[arg-type]
        self.socket_path = private_socket_path()
        self._tcp = tcp
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.proxy.allowed_counts)

    @property
    def tcp_port(self) -> int:
        assert self.proxy.tcp_port is not None
        return self.proxy.tcp_port

    def __enter__(self) -> ProxyThread:
        self._thread.start()
        start = self.proxy.start(self.socket_path, 0 if self._tcp else None)
        asyncio.run_coroutine_threadsafe(start, self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        shutil.rmtree(self.socket_path.parent, ignore_errors=True)


def netns_prefix(kind: str | None = None) -> list[str] | None:
    """A prefix running a program in a fresh network namespace with only ``lo`` up, or None
    when it cannot be made here. ``kind``: ``"bwrap"`` (``bwrap --unshare-net``, which brings
    ``lo`` up itself) or ``"unshare"`` (``unshare -rn`` + ``ip link set lo up``); None: the
    first of the two that works."""
    bwrap = shutil.which("bwrap")
    base = [bwrap or "bwrap", "--dev-bind", "/", "/", "--unshare-net"]
    if kind in (None, "bwrap") and bwrap and _works([*base, "--", "true"]):
        return [*base, "--die-with-parent", "--"]
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if kind in (None, "unshare") and unshare and ip:
        prefix = [unshare, "-rn", "sh", "-c", f'{ip} link set lo up && exec "$@"', "sh"]
        if _works([*prefix, "true"]):
            return prefix
    return None


def _works(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=20, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def behind_proxy(
    prefix: list[str], socket_path: Path, command: Sequence[str], no_proxy: str = DEFAULT_NO_PROXY
) -> list[str]:
    """``command`` in a new network namespace, behind the bridge to ``socket_path``."""
    return [*prefix, *bridge_argv(sys.executable, socket_path, command, no_proxy=no_proxy)]
