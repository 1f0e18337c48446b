from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, settings

from tests.tags import SESSION_VAR, TEST_VAR, kill_tagged
from tests.tags import alive as alive  # the one reader of /proc/<pid>/stat, re-exported

# Property tests check answers, not speed (bench/ measures speed): on a loaded machine one
# example can take longer than hypothesis' default 200 ms deadline, which failed a test once
# and passed on its replay. No deadline, and no "too slow" health check, for the whole suite.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

# The suite runs what users run: the sandbox on (``ralph.sandbox: "auto"``, the default). The
# fake agents log in the work tree (``tests/tags.py``), and tests find a run's processes by the
# tag every process inherits, never by the pids an agent writes (its PID namespace's). The few
# tests about the unsandboxed path say so, each with its reason (``unsandboxed`` below).
os.environ.pop("RALPH_SANDBOX", None)
# One tag for the session: what it started is found, and ended, by it (``_end_the_session``).
os.environ[SESSION_VAR] = uuid.uuid4().hex

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
EXAMPLE = REPO / "examples" / "hello"
# The demo's run, as a user types it in a copy of the example (``copy_example``).
DEMO_RUN = (sys.executable, "-m", "ralph_lsp", "run", "add-greeting-cli", "--agent", "demo")


def copy_example(dest: Path) -> Path:
    """A fresh copy of ``examples/hello`` at ``dest``, without a run's ``.ralph/`` or caches."""
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    return dest


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


def openspec_cli() -> str:
    """The real OpenSpec CLI's path, installed once by ``scripts/install-openspec.sh`` (the
    differential and planning tests compare with it); skips the test where it cannot be had."""
    try:
        out = subprocess.run(
            [str(REPO / "scripts" / "install-openspec.sh")],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the npm registry did not answer in time: cannot install the OpenSpec CLI")
    if out.returncode != 0:
        pytest.skip(f"cannot install the OpenSpec CLI: {out.stderr[-500:]}")
    return out.stdout.strip().splitlines()[-1]


def shared_path(*parts: str) -> Path:
    """A path in the shared folder beside the checkout; skips the test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared material not found beside the checkout: {path}")
    return path


def _sigint_state() -> tuple[object, bool]:
    """This process's SIGINT: its handler, and whether it is blocked."""
    return signal.getsignal(signal.SIGINT), signal.SIGINT in signal.pthread_sigmask(
        signal.SIG_BLOCK, []
    )


@pytest.fixture(autouse=True)
def _sigint_said(request: pytest.FixtureRequest) -> Iterator[None]:
    """A warning with the test's id when a test leaves SIGINT otherwise than it found it (a
    handler or a block that would leak into the tests after it). A run started in the
    background without job control (``make test &`` from a script) has SIGINT ignored from
    the start, in every test and child: the Ctrl-C tests give their own children a terminal's
    SIGINT (``tests.tags.terminal_signals``)."""
    found = _sigint_state()
    yield
    left = _sigint_state()
    if left != found:
        warnings.warn(
            f"{request.node.nodeid}: SIGINT {left[0]!r} (blocked: {left[1]}) at the end, where"
            f" it found {found[0]!r} (blocked: {found[1]})",
            stacklevel=1,
        )


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


@pytest.fixture(autouse=True)
def process_tag(monkeypatch: pytest.MonkeyPatch) -> str:
    """This test's tag (``RALPH_TEST_TAG``), inherited by every process it starts: how the test
    finds them (``tests/tags.py``), sandboxed or not, whatever pids they say they have."""
    tag = uuid.uuid4().hex
    monkeypatch.setenv(TEST_VAR, tag)
    return tag


@pytest.fixture(autouse=True)
def _unsandboxed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``@pytest.mark.unsandboxed("why")``: this test runs with ``RALPH_SANDBOX=off``, as a user
    may choose. Only for tests about the unsandboxed path, and each says why."""
    marker = request.node.get_closest_marker("unsandboxed")
    if marker is None:
        return
    if not marker.args or not str(marker.args[0]).strip():
        pytest.fail('an unsandboxed test says why: @pytest.mark.unsandboxed("reason")')
    monkeypatch.setenv("RALPH_SANDBOX", "off")


def _end_the_session() -> None:
    """SIGKILL whatever this session started that is still alive (a detached runner, an agent
    in its own session, a server): nothing of the suite outlives it, however it ends."""
    left = kill_tagged(os.environ[SESSION_VAR], SESSION_VAR)
    if left:
        print(f"\nthe session ended {len(left)} process(es) it had left:", file=sys.stderr)
        for line in left:
            print(f"  {line[:160]}", file=sys.stderr)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    """SIGTERM or SIGHUP (a timeout, a closed terminal): end the session's processes now, then
    stop as Ctrl-C does, so that fixtures tear down and pytest reports what ran."""
    _end_the_session()
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def pytest_configure(config: pytest.Config) -> None:
    if sys.platform.startswith("linux"):
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _interrupted)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if sys.platform.startswith("linux"):
        _end_the_session()
