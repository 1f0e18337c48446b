"""SPEC §7: the final ``<state>: <reason>`` line is printed once (the engine's own ``■`` line is
not a second copy of it in the terminal)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import project, ralph  # noqa: F401  (the fixture)
from tests.engine.conftest import CHANGE


def test_the_final_state_line_is_printed_once(project: Path) -> None:  # noqa: F811
    out = ralph("run", CHANGE, "--root", str(project), "--agent", "demo", timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1].startswith("succeeded: "), lines[-3:]
    finals = [line for line in lines if "succeeded: every task is checked" in line]
    assert finals == [lines[-1]], finals
