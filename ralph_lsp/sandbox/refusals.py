"""What a sandboxed process's output says the sandbox refused (SPEC §10: refusals reach the
history). The kernel's own words for a write to a read-only path and for a network that is not
there; a hidden path reads as empty or missing, which no line can tell from a real absence."""

from __future__ import annotations

import re

_SIGNS = (
    (re.compile(r"read-only file system", re.I), "write"),
    # a rename over a file bound read-only (git config's lock file dance)
    (re.compile(r"device or resource busy", re.I), "write"),
    (re.compile(r"network is unreachable|\bENETUNREACH\b", re.I), "connect"),
    (re.compile(r"temporary failure in name resolution|\bEAI_AGAIN\b", re.I), "connect"),
)
LONGEST = 200


def refused(line: str) -> tuple[str, str] | None:
    """``(what, line)`` when ``line`` says the sandbox refused something: ``what`` is
    ``write`` or ``connect``, ``line`` the words that said it (shortened)."""
    for pattern, what in _SIGNS:
        if pattern.search(line):
            text = line.strip()
            return what, text if len(text) <= LONGEST else text[: LONGEST - 1] + "…"
    return None
