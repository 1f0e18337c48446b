from __future__ import annotations

import contextlib
import gc
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests check answers, not speed (bench/ measures speed): on a loaded machine one
# example can take longer than hypothesis' default 200 ms deadline, which failed a test once
# and passed on its replay. No deadline, and no "too slow" health check, for the whole suite.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

# The suite's fake agents are mechanics probes: they log their spawns and pids outside the work
# tree and the tests follow those pids, which a sandbox (its own PID namespace, a read-only
# system) would hide. So the suite runs them unsandboxed, as a user can (said in each run's
# first lines); the sandbox itself is tested for real in tests/sandbox, which turns it back on.
os.environ.setdefault("RALPH_SANDBOX", "off")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
EXAMPLE = REPO / "examples" / "hello"


@pytest.fixture(params=["linux", "portable"])
def inspection(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per process inspection (ralph_lsp/proc/inspection.py): ``RALPH_PROC`` is
    set
    for this process and every process the test starts (the fixtures that build the test's
    environment take it first)."""
    monkeypatch.setenv("RALPH_PROC", request.param)
    return str(request.param)


def take_inspection(request: pytest.FixtureRequest) -> None:
    """Set up ``inspection`` now if the test uses it, before an environment is copied."""
    if "inspection" in request.fixturenames:
        request.getfixturevalue("inspection")


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 :].split()[0] != b"Z"


def shared_path(*parts: str) -> Path:
    """A path in the shared folder beside the checkout; skips the test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared material not found beside the checkout: {path}")
    return path


@pytest.fixture(autouse=True)
def _reap_adopted_orphans() -> Iterator[None]:
    """This test process becomes a child subreaper once an in-process run starts an agent (as
    the CLI and the server do, SPEC §3): from then on any orphan of a later test's process
    trees (a detached runner whose CLI exited, a server's leftovers) is re-parented here, and
    nothing here waits for it. Reap such zombies after each test (never one that a live Popen
    still owns), so a long session cannot fill the process table."""
    yield
    reap_adopted_orphans()


def reap_adopted_orphans() -> int:
    me = os.getpid()
    zombies = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if rest[0] == b"Z" and int(rest[1]) == me:
            zombies.append(int(name))
    if not zombies:
        return 0
    owned = {
        o.pid for o in gc.get_objects() if isinstance(o, subprocess.Popen) and o.returncode is None
    }
    reaped = 0
    for pid in zombies:
        if pid not in owned:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
                reaped += 1
    return reaped
