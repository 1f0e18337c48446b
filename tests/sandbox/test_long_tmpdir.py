"""A long ``TMPDIR`` (a test runner's, a CI's: pytest-xdist's folders made one here) does not
fail a sandboxed run: a Unix socket's path is at most 107 bytes, so the run sockets' private
folder is the first place that leaves room for their names (ralph_lsp/sandbox/sockets.py), and
the run's egress proxy and control sockets bind there. Before, the run failed at once with
"the sandbox's egress proxy cannot start: AF_UNIX path too long"."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ralph_lsp.runner.control import socket_path
from ralph_lsp.sandbox.sockets import MAX_SOCKET_PATH, private_folder, proxy_folder
from tests.conftest import DEMO_RUN, copy_example


def _long_tmpdir(tmp_path: Path) -> Path:
    long = tmp_path / ("a-long-temporary-folder-" * 4)
    long.mkdir()
    assert len(os.fsencode(long)) > 80
    return long


def test_the_private_folder_leaves_room_for_every_socket_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(_long_tmpdir(tmp_path)))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr("tempfile.tempdir", None)  # gettempdir() reads TMPDIR again
    folder = private_folder()
    assert not str(folder).startswith(str(tmp_path)), folder  # too long: the next place
    control = socket_path(tmp_path, "alpha", "r-20261203-000000-0123abcd")
    proxy = proxy_folder() / "proxy.sock"
    try:
        for path in (control, proxy):
            assert len(os.fsencode(path)) <= MAX_SOCKET_PATH, path
            with socket.socket(socket.AF_UNIX) as s:
                s.bind(str(path))  # binds: the name fits
            path.unlink()
    finally:
        shutil.rmtree(proxy.parent, ignore_errors=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux sandbox")
def test_a_sandboxed_demo_run_succeeds_under_a_long_tmpdir(tmp_path: Path) -> None:
    root = tmp_path / "hello"
    copy_example(root)
    env = {k: v for k, v in os.environ.items() if k not in ("RALPH_SANDBOX", "XDG_RUNTIME_DIR")}
    env.update({"TMPDIR": str(_long_tmpdir(tmp_path)), "RALPH_DEMO_DELAY": "0"})
    out = subprocess.run(
        DEMO_RUN,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert any(line.startswith("sandbox: bwrap") for line in out.stdout.splitlines()), out.stdout
    assert out.stdout.rstrip().splitlines()[-1].startswith("succeeded: every task is checked")
