"""A run of another process's runner that has just ended: its lens is not "running elsewhere".

Seen under load in the Neovim test: the runner sent the run's final status, the server drew
the lenses before the runner let go of the change's claim, and the lens stayed "● running
elsewhere · iteration 4" after the run had succeeded (nothing draws it again when a claim goes).
Here a real second process holds the claim, as the runner does in that moment."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ralph_lsp.runs.claims import running_elsewhere
from ralph_lsp.server.publishing import _elsewhere
from tests.lsp.test_units import status

_HOLD = """
import sys, time
from pathlib import Path
from ralph_lsp.runs.claims import ChangeClaim
claim = ChangeClaim.take(Path(sys.argv[1]), "c", sys.argv[2])
print("held", flush=True)
time.sleep(60)
"""


def _holder(root: Path, run_id: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(root), run_id], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    deadline = time.monotonic() + 10
    while running_elsewhere(root, "c") is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def test_the_ended_run_holding_its_claim_a_moment_longer_is_not_elsewhere(
    tmp_path: Path,
) -> None:
    proc = _holder(tmp_path, "r-1")
    try:
        owner = running_elsewhere(tmp_path, "c")
        assert owner is not None and owner.pid == proc.pid and owner.run_id == "r-1"
        # the session has the run's final status: the claim is that run's last moment
        assert _elsewhere(tmp_path, "c", status("succeeded", run_id="r-1")) is None
        # a status of an earlier run, or of this one still running, does not hide it
        assert _elsewhere(tmp_path, "c", status("succeeded", run_id="r-0")) is not None
        assert _elsewhere(tmp_path, "c", status("running", run_id="r-1")) is not None
        assert _elsewhere(tmp_path, "c", None) is not None
    finally:
        proc.kill()
        proc.wait()
