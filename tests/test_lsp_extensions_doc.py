"""docs/lsp-extensions.md describes every command the server registers (its
executeCommandProvider, read from a real server) and every custom notification method it sends,
each under a heading of its own."""

from __future__ import annotations

import re
from pathlib import Path

from ralph_lsp.server import create_server
from ralph_lsp.server.queues import QUEUE_STATUS
from ralph_lsp.server.run_progress import RUN_STATUS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "lsp-extensions.md"


def documented() -> set[str]:
    return set(re.findall(r"^### `([\w./]+)`", DOC.read_text(), re.M))


def test_every_registered_command_is_documented() -> None:
    server = create_server()
    commands = set(server.protocol.fm.commands)
    assert commands, "the server registered no command: the test reads the wrong place"
    assert commands - documented() == set()
    # ...and the page describes nothing the server does not have.
    assert {d for d in documented() if d.startswith("ralph.")} == commands


def test_every_custom_notification_is_documented() -> None:
    sent = set()
    for path in (ROOT / "ralph_lsp").rglob("*.py"):
        sent.update(re.findall(r'"(ralph/\w+)"', path.read_text()))
    assert sent == {RUN_STATUS, QUEUE_STATUS}
    assert sent <= documented()
