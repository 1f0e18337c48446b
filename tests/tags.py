"""Finding the suite's processes by a tag in their environment, and the fake agents' folder.

Every process the suite starts inherits two variables from it (``tests/conftest.py`` sets
them): ``RALPH_TEST_SESSION``, one value for the whole pytest session, and ``RALPH_TEST_TAG``,
one value per test. A sandbox keeps the environment, and ``/proc/<pid>/environ`` is read by the
host with the host's pids, so a tag finds an agent's processes where the pids it writes cannot
(inside its PID namespace they are the namespace's). A process that escaped into its own
session keeps its tag too: that is how the session ends what it started (``kill_session``).

The fake agents write their logs in the work tree they are given, the one folder a sandboxed
run may write, under ``.fake-agent/``: that folder ignores itself (its ``.gitignore`` says
``*``), so checkpoints, the changed files and merges never see it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

SESSION_VAR = "RALPH_TEST_SESSION"
TEST_VAR = "RALPH_TEST_TAG"
FAKE_AGENTS = Path(__file__).resolve().parent / "fake_agents"
SCRATCH = ".fake-agent"


def tagged(value: str, var: str = TEST_VAR) -> list[int]:
    """Live processes, other than this one and its parents, whose environment has
    ``var=value``."""
    needle = f"{var}={value}".encode()
    spared = _self_and_parents()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in spared:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        if alive(int(name)):
            found.append(int(name))
    return found


def running(needle: str, value: str | None = None) -> list[int]:
    """This test's (or tag ``value``'s) live processes whose command line has ``needle``: a
    program, the children it forked without exec, and the bubblewrap that runs it."""
    tag = value if value is not None else os.environ[TEST_VAR]
    return [pid for pid in tagged(tag) if needle.encode() in _cmdline(pid)]


def programs(script: Path | str, value: str, var: str = TEST_VAR) -> list[int]:
    """Live processes tagged ``var=value`` that run ``script`` themselves (``python script``):
    the program and the children it forked, not the bubblewrap or bridge that started it."""
    wanted = str(script).encode()
    return [pid for pid in tagged(value, var) if _cmdline(pid).split(b"\0")[1:2] == [wanted]]


def fake_agent_processes(value: str | None = None) -> list[int]:
    """This test's live processes running a fake agent (each names ``tests/fake_agents``)."""
    return running(str(FAKE_AGENTS), value)


def wait_for(count: int, value: str | None = None, timeout: float = 20.0) -> list[int]:
    """Wait until at least ``count`` fake agent processes of this test are alive; them."""
    deadline = time.monotonic() + timeout
    while len(found := fake_agent_processes(value)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def gone_within(pids: list[int], timeout: float) -> list[int]:
    """The ``pids`` still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_tagged(value: str, var: str = TEST_VAR) -> list[str]:
    """SIGKILL every live process tagged ``var=value``; each described (pid and command)."""
    described = []
    for pid in tagged(value, var):
        command = _cmdline(pid).replace(b"\0", b" ").decode(errors="replace")
        described.append(f"{pid} {command}")
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return described


def scratch(work_tree: Path) -> Path:
    """``work_tree/.fake-agent/``, made if missing, ignored by git: where fake agents log."""
    folder = work_tree / SCRATCH
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".gitignore").write_text("*\n")
    return folder


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 :].split()[0] != b"Z"


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _self_and_parents() -> set[int]:
    spared, pid = set(), os.getpid()
    while pid > 1 and pid not in spared:
        spared.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return spared


def terminal_signals() -> None:
    """(A ``preexec_fn``) the child's SIGINT as a terminal's program has it: the default, not
    blocked, whatever this test process inherited or was left (a child inherits an ignored or
    blocked SIGINT, and a test of Ctrl-C then signals nothing)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
