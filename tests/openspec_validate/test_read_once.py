"""One `validate_change` reads each file once, however many rules read it (a delta spec was
read by the delta rules and again by archive's dry run, its main spec twice more), and leaves
the caller's `overrides` (an editor's open documents) as they were."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ralph_lsp.openspec.validation import spec_rules
from ralph_lsp.openspec.validation.change_rules import validate_change

MAIN = """# Greeting

## Purpose
How the program greets the people who run it, in every language it knows.

## Requirements

### Requirement: Greets
The system SHALL greet.

#### Scenario: Hello
- **WHEN** asked
- **THEN** it greets
"""

DELTA = """## MODIFIED Requirements

### Requirement: Greets
The system SHALL greet loudly.

#### Scenario: Hello
- **WHEN** asked
- **THEN** it greets loudly
"""


def test_each_file_is_read_once_and_the_callers_texts_stay_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = tmp_path / "openspec" / "specs" / "greeting" / "spec.md"
    change = tmp_path / "openspec" / "changes" / "loud"
    delta = change / "specs" / "greeting" / "spec.md"
    for file, text in (
        (main, MAIN),
        (delta, DELTA),
        (change / "proposal.md", "## Why\nLouder.\n"),
        (change / "tasks.md", "## 1. Work\n- [ ] 1.1 Shout\n"),
        (change / ".openspec.yaml", "schema: spec-driven\n"),
    ):
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
    reads: Counter[Path] = Counter()
    real = spec_rules.read_regular

    def counting(path: Path, max_bytes: int) -> bytes:
        reads[path] += 1
        return real(path, max_bytes)

    monkeypatch.setattr(spec_rules, "read_regular", counting)
    overrides: dict[Path, str] = {}
    report = validate_change(change, overrides=overrides, project_root=tmp_path)
    assert report.valid, [i.message for i in report.issues]
    assert reads[delta] == 1 and reads[main] == 1, reads
    assert max(reads.values()) == 1, reads
    assert overrides == {}
