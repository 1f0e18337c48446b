"""Seeded SIGKILLs of the foreground run, a detached runner and the server, at random moments
of a run: after each, no process is left, no live leftover once a reader ran, history readable,
tasks.md changed only in its boxes, the user's other files byte-identical, and a re-run
succeeds (tests/faults/crash_trials.py; ``make soak`` runs a hundred such trials)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.crash_trials import KINDS, Plan, run_trial

SEEDS = range(1, 7)  # two of each kind: cli, runner, server


def test_the_seeds_cover_every_kind_of_host() -> None:
    assert {Plan.of(s).kind for s in SEEDS} == set(KINDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_sigkill_at_a_seeded_moment_leaves_a_consistent_project(
    seed: int, tmp_path: Path
) -> None:
    problems = run_trial(seed, tmp_path)
    assert problems == [], f"{Plan.of(seed)}:\n" + "\n".join(problems)
