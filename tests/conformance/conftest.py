"""A small git project whose `make test` runs pytest, with a change of three scenarios and four
tasks (SPEC §13's example): what the conformance tests run real agents and the CLI over."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.git.conftest import git, init_repo
from tests.tags import scratch

CHANGE = "add-shout"
SPEC = """## ADDED Requirements

### Requirement: Shouting
The `shout` function SHALL return its text in capitals with an exclamation mark.

#### Scenario: Shout once
- **WHEN** `shout("hi")` is called
- **THEN** it returns `HI!`

#### Scenario: Shout twice
- **WHEN** `shout("hi", 2)` is called
- **THEN** it returns `HI! HI!`

### Requirement: Empty input
The `shout` function SHALL refuse an empty text.

#### Scenario: Empty input
- **WHEN** `shout("")` is called
- **THEN** it raises ValueError
"""
TASKS = """## 1. Shout

- [ ] 1.1 Write shout.py with `shout(text, times=1)`
- [ ] 1.2 Refuse an empty text
- [ ] 1.3 Test it
- [ ] 1.4 Document it
"""


def write_project(root: Path) -> Path:
    change = root / "openspec" / "changes" / CHANGE
    (change / "specs" / "cli").mkdir(parents=True)
    (change / "proposal.md").write_text("## Why\nShouting.\n\n## What Changes\n- shout\n")
    (change / "specs" / "cli" / "spec.md").write_text(SPEC)
    (change / "tasks.md").write_text(TASKS)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    (root / "Makefile").write_text(
        f"test:\n\t{sys.executable} -m pytest -q -p no:cacheprovider tests\n"
    )
    (root / ".gitignore").write_text(".ralph/\n__pycache__/\n")
    return root


@pytest.fixture
def shout_project(tmp_path: Path) -> Path:
    root = write_project(init_repo(tmp_path / "shout"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the change, before any work")
    return root


@pytest.fixture
def spawn_log(shout_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake agents' log of their spawns, in the work tree (git-ignored)."""
    log = scratch(shout_project) / "spawns.jsonl"
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    return log
