"""`ralph-lsp run` in a real pseudo-terminal: the live status line fits the terminal's width
(a wrapped line leaves stale copies behind), shows the elapsed time, is coloured on a terminal
and never with NO_COLOR, and the final `<state>: <reason>` line is printed once."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import DEMO_RUN, copy_example

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def run_in_pty(tmp_path: Path, columns: int, env_extra: dict[str, str]) -> str:
    project = tmp_path / "hello"
    copy_example(project)
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {**os.environ, "RALPH_DEMO_DELAY": "0.3", **env_extra}
    env.pop("NO_COLOR", None) if "NO_COLOR" not in env_extra else None
    proc = subprocess.Popen(
        DEMO_RUN,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        cwd=project,
        env=env,
    )
    os.close(secondary)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            data = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(primary)
    assert proc.wait(10) == 0
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("colour", [True, False])
def test_the_status_line_fits_a_narrow_terminal(tmp_path: Path, colour: bool) -> None:
    out = run_in_pty(tmp_path, 50, {} if colour else {"NO_COLOR": "1"})
    # Every status line the cursor draws fits in 50 columns (log lines scroll and may wrap).
    pieces = [ANSI.sub("", p) for p in re.split(r"[\r\n]", out)]
    status = [p for p in pieces if re.match(r"\[[#.]{20}\] \d+/8", p)]
    assert len(status) > 5
    assert [p for p in status if len(p) > 49] == []
    assert ("\x1b[36m" in out) is colour  # the running state's colour
    wide = run_in_pty(tmp_path / "wide", 120, {})
    wide_status = [ANSI.sub("", p) for p in re.split(r"[\r\n]", wide) if "tasks · iter" in p]
    assert any(re.search(r" · running · \d+s$", p) for p in wide_status), wide_status[:3]
    finals = [p for p in pieces if p.startswith("succeeded: ")]
    assert finals == [
        "succeeded: every task is checked (8/8); verification passed (make test);"
        " 4/4 scenarios verified"
    ]


def test_the_server_started_by_hand_says_it_waits_for_a_client() -> None:
    """`ralph-lsp` typed in a terminal: one line on stderr; from an editor's pipe: nothing."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ralph_lsp"],
        stdin=secondary,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    os.close(secondary)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
    finally:
        proc.kill()
        proc.wait(10)
        os.close(primary)
    assert "waiting for an LSP client" in line and "--help" in line
    piped = subprocess.run(
        [sys.executable, "-m", "ralph_lsp"], input=b"", capture_output=True, timeout=30
    )
    assert b"waiting for an LSP client" not in piped.stderr
