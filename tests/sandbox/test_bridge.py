"""The bridge (``ralph_lsp/sandbox/bridge.py``) as the sandbox runs it: ``python -I -S <file>``,
with and without a network namespace of its own, relaying to a real proxy's Unix socket."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralph_lsp.sandbox.bridge import bridge_argv

from .origins import Origin
from .proxied import ProxyThread, behind_proxy, netns_prefix

# A client as an agent is: it knows nothing of the bridge, only the proxy variables.
FETCH = """
import os, sys, urllib.request
print(os.environ["HTTPS_PROXY"], os.environ["NO_PROXY"] or "-", os.environ["NODE_USE_ENV_PROXY"])
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())
except Exception as exc:
    print("failed:", exc)
sys.exit(int(sys.argv[2]))
"""
# The same target without the proxy: what a hostile agent would try first.
DIRECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    print("direct: connected")
except OSError as exc:
    print("direct: refused", exc.errno)
"""


@pytest.fixture
def origin_port() -> Iterator[int]:
    """An HTTP origin on the host's 127.0.0.1, served from a thread of its own."""
    loop = asyncio.new_event_loop()
    origin = Origin()
    loop.run_until_complete(origin.__aenter__())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield origin.port
    asyncio.run_coroutine_threadsafe(origin.__aexit__(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, **kw)  # type: ignore[call-overload,no-any-return]


def test_without_a_namespace_the_agent_gets_the_proxy_variables_and_its_exit_status(
    origin_port: int,
) -> None:
    with ProxyThread([f"127.0.0.1:{origin_port}"]) as proxy:
        url = f"http://127.0.0.1:{origin_port}/hello"
        argv = bridge_argv(
            sys.executable, proxy.socket_path, [sys.executable, "-c", FETCH, url, "7"], no_proxy=""
        )
        proc = _run(argv, stdin=subprocess.DEVNULL)
    assert proc.returncode == 7, proc.stderr
    proxy_url, no_proxy, node = proc.stdout.split("\n")[0].split(" ")
    assert proxy_url.startswith("http://127.0.0.1:") and no_proxy == "-" and node == "1"
    assert proc.stdout.split("\n")[1] == "hello"
    assert proxy.counts == {f"127.0.0.1:{origin_port}": 1}


@pytest.mark.parametrize("kind", ["bwrap", "unshare"])
def test_in_a_network_namespace_the_proxy_is_the_only_way_out(origin_port: int, kind: str) -> None:
    prefix = netns_prefix(kind)
    if prefix is None:
        pytest.skip(f"no network namespace from {kind} here")
    with ProxyThread([f"127.0.0.1:{origin_port}"]) as proxy:
        url = f"http://127.0.0.1:{origin_port}/hello"
        direct = _run([*prefix, sys.executable, "-c", DIRECT, str(origin_port)])
        via = _run(
            behind_proxy(prefix, proxy.socket_path, [sys.executable, "-c", FETCH, url, "0"], "")
        )
        refused = _run(
            behind_proxy(
                prefix, proxy.socket_path, [sys.executable, "-c", FETCH, "http://example.com/", "0"]
            )
        )
    assert direct.stdout.startswith("direct: refused"), direct.stdout + direct.stderr
    assert via.returncode == 0 and via.stdout.split("\n")[1] == "hello", via.stdout + via.stderr
    assert "failed: HTTP Error 403" in refused.stdout, refused.stdout
    assert proxy.counts == {f"127.0.0.1:{origin_port}": 1}
    assert [(r.host, r.port) for r in proxy.reported] == [("example.com", 80)]


def test_stdin_is_the_agents_and_signals_reach_it(tmp_path: Path) -> None:
    socket_path = tmp_path / "nothing-listens.sock"
    echo = _run(bridge_argv(sys.executable, socket_path, ["cat"]), input="prompt text")
    assert echo.returncode == 0 and echo.stdout == "prompt text"
    marker = tmp_path / "got-term"
    child = (
        "import signal, sys, time, pathlib\n"
        "def bye(*_):\n"
        f"    pathlib.Path({str(marker)!r}).write_text('term'); sys.exit(5)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        bridge_argv(sys.executable, socket_path, [sys.executable, "-c", child]),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 5
    assert marker.read_text() == "term"


def test_an_agent_killed_by_a_signal_kills_the_bridge_with_it(tmp_path: Path) -> None:
    proc = _run(bridge_argv(sys.executable, tmp_path / "s.sock", ["sh", "-c", "kill -KILL $$"]))
    assert proc.returncode == -signal.SIGKILL
    missing = _run(bridge_argv(sys.executable, tmp_path / "s.sock", ["no-such-agent-program"]))
    assert missing.returncode == 127 and "cannot run 'no-such-agent-program'" in missing.stderr


def test_bad_arguments_are_a_clear_error(tmp_path: Path) -> None:
    argv = bridge_argv(sys.executable, tmp_path / "s.sock", ["true"])
    argv[argv.index("--listen") + 1] = "0.0.0.0:8080"
    proc = _run(argv)
    assert proc.returncode == 2 and "--listen must be 127.0.0.1:PORT" in proc.stderr
    started = time.monotonic()
    proc = _run(bridge_argv(sys.executable, tmp_path / "s.sock", [])[:-1])
    assert proc.returncode == 2 and "no command to run" in proc.stderr
    assert time.monotonic() - started < 30
    assert os.path.basename(argv[3]) == "bridge.py"


# The agent's start must not wait for asyncio (issue 36's spawn overhead: importing it took far
# longer than bubblewrap's own start): at the agent's spawn, none of these is imported yet.
SPAWN_SPY = """
import os, sys
heavy = ("asyncio", "socket", "selectors", "argparse", "enum", "pathlib", "collections")
seen = []
real = os.posix_spawnp
def spy(*args, **kwargs):
    seen.append(sorted(m for m in heavy if m in sys.modules))
    return real(*args, **kwargs)
os.posix_spawnp = spy
path = sys.argv[1]
sys.argv = sys.argv[1:]
namespace = {"__name__": "bridge", "__file__": path}
exec(compile(open(path).read(), path, "exec"), namespace)
status = namespace["main"]()
print("imported at the spawn:", seen, "status:", status)
"""


def test_the_agent_is_spawned_before_the_relay_imports_asyncio(tmp_path: Path) -> None:
    argv = bridge_argv(sys.executable, tmp_path / "s.sock", ["sh", "-c", "echo agent; exit 3"])
    python, flags, path, rest = argv[0], argv[1:3], argv[3], argv[4:]
    proc = _run([python, *flags, "-c", SPAWN_SPY, path, *rest])
    assert proc.stdout.splitlines() == ["agent", "imported at the spawn: [[]] status: 3"], (
        proc.stdout + proc.stderr
    )
