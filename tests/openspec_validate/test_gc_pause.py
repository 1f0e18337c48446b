"""A main spec's validation pauses the cyclic garbage collector while its readers run (their
allocations set it off again and again, each full pass walking the whole heap) and leaves it as
it found it, even when a reader raises."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralph_lsp.openspec.validation import spec_rules

SPEC = """# Greeting

## Purpose
How the program greets the people who run it, in every language it knows.

## Requirements

### Requirement: Greets
The system SHALL greet.

#### Scenario: Hello
- **WHEN** asked
- **THEN** it greets
"""


@pytest.fixture
def collecting() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_paused_while_reading_and_enabled_after(
    collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = spec_rules.parse_spec

    def watching(text: str) -> object:
        seen.append(gc.isenabled())
        return real(text)

    monkeypatch.setattr(spec_rules, "parse_spec", watching)
    report = spec_rules.validate_spec(Path("openspec/specs/greeting/spec.md"), content=SPEC)
    assert report.valid, [i.message for i in report.issues]
    assert seen == [False]
    assert gc.isenabled()


def test_enabled_again_when_a_reader_raises(
    collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(text: str) -> object:
        raise RuntimeError("reader failed")

    monkeypatch.setattr(spec_rules, "parse_spec", failing)
    with pytest.raises(RuntimeError):
        spec_rules.spec_issues(SPEC, None)
    assert gc.isenabled()


def test_a_paused_collector_stays_paused(collecting: None) -> None:
    gc.disable()
    spec_rules.spec_issues(SPEC, None)
    assert not gc.isenabled()
