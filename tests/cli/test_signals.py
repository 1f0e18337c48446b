"""Ctrl-C and SIGTERM for the commands that drive runs in this process (``run`` and a queue):
one helper, ``cli/signals.py``. The first signal stops gracefully and says so; a second one
kills at once; the handlers go when the command ends."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralph_lsp.cli.signals import stop_on_signals
from tests.cli.test_cli import CLI
from tests.queue.conftest import CHANGES, TOOLBOX
from tests.tags import terminal_signals


@pytest.fixture
def toolbox(tmp_path: Path) -> Path:
    root = tmp_path / "toolbox"
    shutil.copytree(TOOLBOX, root, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    return root


async def _deliver(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)
    await asyncio.sleep(0.05)  # the loop runs the handler


@pytest.fixture
def sigint_as(request: pytest.FixtureRequest) -> Iterator[None]:
    """SIGINT set as the test's parameter says (a terminal's, or ignored), then put back."""
    found = signal.signal(signal.SIGINT, request.param)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, found)


@pytest.mark.parametrize("sigint_as", [signal.default_int_handler], indirect=True)
def test_first_signal_stops_a_second_kills_and_the_handlers_go(sigint_as: None) -> None:
    said: list[str] = []
    calls: list[str] = []
    sigterm = signal.getsignal(signal.SIGTERM)

    async def main() -> None:
        with stop_on_signals(
            "queue", said.append, lambda: calls.append("stop"), lambda: calls.append("kill")
        ):
            await _deliver(signal.SIGTERM)
            assert said == ["SIGTERM: stopping the queue (again to kill at once)"]
            assert calls == ["stop"]
            await _deliver(signal.SIGINT)
            await _deliver(signal.SIGTERM)
        assert calls == ["stop", "kill", "kill"] and len(said) == 1

    asyncio.run(main())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == sigterm  # the one before, back


@pytest.mark.parametrize("sigint_as", [signal.SIG_IGN], indirect=True)
def test_a_sigint_the_process_ignores_stays_ignored(sigint_as: None) -> None:
    """Started in the background without job control, SIGINT is ignored: a Ctrl-C meant for
    the terminal's foreground job neither stops the run nor is turned back on after it."""
    calls: list[str] = []
    sigterm = signal.getsignal(signal.SIGTERM)

    async def main() -> None:
        with stop_on_signals("run", lambda text: None, lambda: calls.append("stop"), calls.clear):
            await _deliver(signal.SIGINT)
            assert calls == []
            await _deliver(signal.SIGTERM)
            assert calls == ["stop"]

    asyncio.run(main())
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) == sigterm


def test_sigint_stops_a_queue_and_says_so(toolbox: Path) -> None:
    env = {**os.environ, "RALPH_DEMO_DELAY": "1.5"}
    argv = [*CLI, "run", *CHANGES, "--root", str(toolbox), "--agent", "demo"]
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=terminal_signals,  # Ctrl-C as a terminal's foreground job gets it
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first run's status: the queue is under way
    assert "add-slugify 1/3" in first, first
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    out = first + rest
    assert "SIGINT: stopping the queue (again to kill at once)" in out, out + err
    assert proc.returncode != 0, out + err
    records = list((toolbox / ".ralph" / "queues").glob("*/record.json"))
    assert len(records) == 1 and '"stopped"' in records[0].read_text(), out
