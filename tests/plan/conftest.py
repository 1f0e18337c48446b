"""What the planning tests share: the real OpenSpec CLI (installed from npm into .cache/)."""

from __future__ import annotations

import pytest

from tests.conftest import openspec_cli


@pytest.fixture(scope="session", name="openspec_cli")
def _openspec_cli() -> str:
    return openspec_cli()
