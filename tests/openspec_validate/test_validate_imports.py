"""`ralph-lsp validate` starts lean (issue 38, the `validate_vs_openspec` bench): one call is
mostly process start, so the command imports only validation, not the LSP stack, asyncio, the
engine, agents, git, the workspace, the settings or the other subcommands' parser, nor
argparse, typing or dataclasses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SPEC = """# Demo

## Purpose
A small spec for checking what the validate command imports.

## Requirements

### Requirement: Greets
The system SHALL greet.

#### Scenario: Hello
- **WHEN** asked
- **THEN** it greets
"""


def test_validate_imports_only_what_validation_needs(tmp_path: Path) -> None:
    spec = tmp_path / "openspec" / "specs" / "demo" / "spec.md"
    spec.parent.mkdir(parents=True)
    spec.write_text(SPEC, encoding="utf-8")
    (tmp_path / "openspec" / "changes").mkdir()
    code = (
        "import io, sys\n"
        "from ralph_lsp.cli import main\n"
        "out, sys.stdout = sys.stdout, io.StringIO()\n"
        "code = main(['validate', '--all', '--json'])\n"
        "got, sys.stdout = sys.stdout.getvalue(), out\n"
        "heavy = ('pygls', 'lsprotocol', 'asyncio', 'ralph_lsp.loop', 'ralph_lsp.agents',"
        " 'ralph_lsp.git', 'ralph_lsp.server', 'ralph_lsp.openspec.workspace', 'subprocess',"
        " 'ralph_lsp.settings', 'ralph_lsp.cli.parser',"
        # nor what only its start would pay for: argparse (a plain command line), typing,
        # dataclasses (with inspect and ast), the tasks model, the process inspection
        " 'argparse', 'typing', 'dataclasses', 'inspect', 'shutil', 'ralph_lsp.openspec.tasks',"
        " 'ralph_lsp.proc.inspection')\n"
        "print(code, '\"passed\": 1' in got)\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    verdict, imported = done.stdout.strip().splitlines()[-2:]
    assert verdict == "0 True", done.stdout
    assert imported == "[]", imported
