"""A named pipe planted at ``.ralph/locks/<change>.lock`` never blocks the server: code lenses
answer within a second (issue 25 fault 6; found in review: the first code-lens request blocked
the event loop for good)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.lsp.conftest import CHANGE, StartSession


async def test_code_lens_answers_within_a_second_with_a_named_pipe_lock(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    locks = workspace / ".ralph" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    os.mkfifo(locks / f"{CHANGE}.lock")
    lenses = await asyncio.wait_for(s.lenses(), 1.0)
    assert any("Run change" in title for _, title, _, _ in lenses), lenses
    # …and the server still answers afterwards (nothing is left blocked on the pipe).
    again = await asyncio.wait_for(s.command("ralph.changes"), 1.0)
    assert CHANGE in str(again)
