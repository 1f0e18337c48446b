"""The watchdog's building blocks on their own: finding a tree, signalling it, naming errors."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time

import pytest
from proc_helpers import alive

from ralph_lsp.proc import inspection, tree, watchdog


def test_descendants_finds_the_whole_tree(agent_env: dict[str, str], inspection: str) -> None:
    shell = subprocess.Popen(
        ["sh", "-c", "sleep 60 & sh -c 'sleep 60 & wait' & wait"],
        env=agent_env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 3
        while len(tree.descendants(os.getpid())) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        found = tree.descendants(os.getpid())
        assert shell.pid in found and len(found) == 4
        assert all(tree.is_alive(pid) for pid in found)
        assert tree.signal_tree(os.getpid(), signal.SIGKILL) == 4
        shell.wait()
    finally:
        shell.kill()
        shell.wait()
    for pid in found:
        deadline = time.monotonic() + 3
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not alive(pid)


def test_without_proc_only_the_fallback_group_is_signalled(
    agent_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inspection.LinuxProc, "table", lambda self: {})
    child = subprocess.Popen(["sleep", "60"], env=agent_env, start_new_session=True)
    try:
        assert tree.signal_tree(os.getpid(), signal.SIGKILL, (child.pid,)) == 0
        assert child.wait(timeout=3) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()


def test_read_stat_copes_with_odd_process_names() -> None:
    code = (
        "import sys, time; open('/proc/self/comm', 'w').write('a) b (c'); "
        "sys.stdout.write('ok\\n'); sys.stdout.flush(); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ok\n"
        with open(f"/proc/{child.pid}/comm") as f:
            assert f.read() == "a) b (c\n"  # a name holding spaces and parentheses
        stat = tree.read_stat(child.pid)
        assert stat is not None and stat[1] == os.getpid()
    finally:
        child.kill()
        child.wait()
    assert tree.read_stat(child.pid) is None
    assert not tree.is_alive(child.pid)


@pytest.mark.parametrize(
    ("code", "kind", "words"),
    [
        (errno.ENOENT, "not_found", "#!"),
        (errno.EACCES, "not_executable", "chmod +x"),
        (errno.ENOEXEC, "not_executable", "'#!' line"),
        (errno.E2BIG, "os_error", "{promptFile}"),
        (errno.EIO, "os_error", "could not start"),
    ],
)
def test_start_errors_say_what_to_do(code: int, kind: str, words: str) -> None:
    got_kind, message = watchdog.describe_start_error(
        OSError(code, os.strerror(code)), "claude", "/opt/claude"
    )
    assert got_kind == kind
    assert words in message
    assert "'claude'" in message


def test_usage_error_without_command() -> None:
    with pytest.raises(SystemExit):
        watchdog.main(["--control", "3", "--status", "4"])
