"""`ralph-lsp validate ITEM` resolves an item as `openspec validate` does: an unknown name and a
name both a change and a spec are refused with the CLI's JSON and exit code (checked beside the
real CLI), `--type` settles the ambiguity, and the human output says what the CLI says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openspec_validate.test_fuzz_live import CLI_ENV
from tests.test_openspec_differential import openspec  # noqa: F401  (the fixture)

SPEC = """# twin

## Purpose
A capability whose id is also the name of an active change, for the ambiguity.

## Requirements
### Requirement: Twin
The system SHALL exist.

#### Scenario: Exists
- **WHEN** asked
- **THEN** it is there
"""


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / "openspec" / "changes" / "twin" / "specs" / "twin").mkdir(parents=True)
    delta = "## ADDED Requirements\n" + SPEC.split("## Requirements\n", 1)[1]
    (root / "openspec" / "changes" / "twin" / "specs" / "twin" / "spec.md").write_text(delta)
    (root / "openspec" / "specs" / "twin").mkdir(parents=True)
    (root / "openspec" / "specs" / "twin" / "spec.md").write_text(SPEC)
    return root


def run(argv: list[str], root: Path) -> tuple[int, str, str]:
    env = {**os.environ, **CLI_ENV}
    done = subprocess.run(
        argv,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stdout, done.stderr


OURS = [sys.executable, "-m", "ralph_lsp", "validate"]


@pytest.mark.parametrize("args", [["nope", "--json"], ["twin", "--json"], ["twn", "--json"]])
def test_refusals_match_the_real_cli(openspec: str, tmp_path: Path, args: list[str]) -> None:  # noqa: F811
    root = project(tmp_path)
    rc, out, _ = run([*OURS, *args], root)
    their_rc, their_out, _ = run([openspec, "validate", *args], root)
    assert (rc, json.loads(out)) == (their_rc, json.loads(their_out))
    assert rc == 1


def test_type_settles_the_ambiguity_and_the_human_output(tmp_path: Path) -> None:
    root = project(tmp_path)
    rc, out, err = run([*OURS, "twin", "--type", "spec"], root)
    assert (rc, out, err) == (0, "Specification 'twin' is valid\n", "")
    (root / "openspec" / "specs" / "twin" / "spec.md").write_text(SPEC.replace("SHALL ", ""))
    rc, out, err = run([*OURS, "twin", "--type", "spec", "--strict"], root)
    assert rc == 1 and out == ""
    assert err.startswith("Specification 'twin' has issues\n⚠ [WARNING] requirements[0]: ")
    assert "Next steps:" in err
