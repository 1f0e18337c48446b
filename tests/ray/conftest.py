"""The session's Ray cluster: one real single-node head on 127.0.0.1 only (``cluster.py``),
started once for every Ray test and ended by its process group."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install 'ralph-lsp[ray]'")

from tests.lsp.conftest import client_profile, start_session  # noqa: F401 (fixtures)
from tests.ray.cluster import local_cluster
from tests.runner.conftest import runtime_dir  # noqa: F401 (fixture)

pytestmark = pytest.mark.ray


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    with local_cluster() as url:
        yield url
