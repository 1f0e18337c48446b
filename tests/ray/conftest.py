"""The session's Ray cluster: one real single-node head on 127.0.0.1 only (``cluster.py``),
started once for every Ray test and ended by its process group."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install 'ralph-lsp[ray]'")

from tests.ray.cluster import local_cluster

pytestmark = pytest.mark.ray


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    with local_cluster() as url:
        yield url
