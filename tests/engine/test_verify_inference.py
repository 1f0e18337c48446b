"""Verification commands inferred on real layouts: the manifests of public repositories that keep
OpenSpec changes (tests/fixtures/verify_inference/README.md names each repository and commit)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ralph_lsp.loop.verify import infer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "verify_inference"

EXPECTED = {
    "openspec-cli": ["pnpm test"],
    "norish": ["pnpm test"],
    "openspec-webui": ["npm test"],
    "openspec-flow": ["npm test"],
    "hyperfleet-cli": ["make test"],  # its test target runs `go test ./...`: not twice
    "rcal": ["cargo test"],
    "ralphtool": ["cargo test"],
    # package.json without a test script (npm test would not exist), pytest with uv.lock
    "obsidian-llm-wiki": ["uv run pytest -q"],
    "fpf-governance-mcp": [],  # Maven: no rule, so no command rather than a wrong one
}


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_inferred_command(name: str) -> None:
    assert [c.line for c in infer(FIXTURES / name)] == EXPECTED[name]


def test_the_package_manager_field_wins_over_a_lock_file(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "norish", tmp_path / "p")
    (tmp_path / "p" / "pnpm-lock.yaml").unlink()
    (tmp_path / "p" / "package-lock.json").write_text("{}")
    assert [c.line for c in infer(tmp_path / "p")] == ["pnpm test"]


def test_a_makefile_that_does_not_run_go_test_leaves_it_inferred(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "hyperfleet-cli", tmp_path / "p")
    (tmp_path / "p" / "Makefile").write_text("test:\n\t./scripts/e2e.sh\n")
    assert [c.line for c in infer(tmp_path / "p")] == ["make test", "go test ./..."]
