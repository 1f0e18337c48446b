"""What the planning tests share: the real OpenSpec CLI (installed from npm into .cache/)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def openspec_cli() -> str:
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
