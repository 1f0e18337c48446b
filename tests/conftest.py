from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
EXAMPLE = REPO / "examples" / "hello"


@pytest.fixture(params=["linux", "portable"])
def inspection(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per process inspection (ralph_lsp/proc/inspection.py): ``RALPH_PROC`` is
    set
    for this process and every process the test starts (the fixtures that build the test's
    environment take it first)."""
    monkeypatch.setenv("RALPH_PROC", request.param)
    return str(request.param)


def take_inspection(request: pytest.FixtureRequest) -> None:
    """Set up ``inspection`` now if the test uses it, before an environment is copied."""
    if "inspection" in request.fixturenames:
        request.getfixturevalue("inspection")


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 :].split()[0] != b"Z"


def shared_path(*parts: str) -> Path:
    """A path in the shared folder beside the checkout; skips the test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared material not found beside the checkout: {path}")
    return path
