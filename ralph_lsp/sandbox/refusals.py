"""What a sandboxed process's output says the sandbox refused (SPEC §10: refusals reach the
history). The kernel's own words for a write to a read-only path and for a network that is not
there; a hidden path reads as empty or missing, which no line can tell from a real absence."""

from __future__ import annotations

import re

# The kernel's words are ASCII: the patterns fold ASCII case only (re.A), so that any line one
# of them matches holds one of _WORDS once lower-cased, and a batch of lines holding none of
# them is passed over at once (an agent may print 100,000 lines a second).
_SIGNS = (
    (re.compile(r"read-only file system", re.I | re.A), "write"),
    # a rename over a file bound read-only (git config's lock file dance)
    (re.compile(r"device or resource busy", re.I | re.A), "write"),
    (re.compile(r"network is unreachable|\bENETUNREACH\b", re.I | re.A), "connect"),
    (re.compile(r"temporary failure in name resolution|\bEAI_AGAIN\b", re.I | re.A), "connect"),
)
_WORDS = (
    "read-only file system",
    "device or resource busy",
    "network is unreachable",
    "enetunreach",
    "temporary failure in name resolution",
    "eai_again",
)
LONGEST = 200


def may_say_refused(text: str) -> bool:
    """False when no line of ``text`` can be a refusal (:func:`refused` would say None for
    each); True when one may be."""
    low = text.lower()
    return any(word in low for word in _WORDS)


def refused(line: str) -> tuple[str, str] | None:
    """``(what, line)`` when ``line`` says the sandbox refused something: ``what`` is
    ``write`` or ``connect``, ``line`` the words that said it (shortened)."""
    for pattern, what in _SIGNS:
        if pattern.search(line):
            text = line.strip()
            return what, text if len(text) <= LONGEST else text[: LONGEST - 1] + "…"
    return None
