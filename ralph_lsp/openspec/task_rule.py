"""The CLI's task-line rule alone (SPEC §2): what :mod:`ralph_lsp.openspec.tasks` counts by, apart
so that a reader of one rule (``validate``'s task-file warnings) imports no more than it."""

from __future__ import annotations

import re

# JavaScript's `\s`: includes U+FEFF, no-break space, U+2028/U+2029; excludes U+0085 and
# U+001C–U+001F, which Python's `\s` would match.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
WS = "[" + re.escape(JS_WHITESPACE) + "]"
NOT_WS = "[^" + re.escape(JS_WHITESPACE) + "]"

# group 1: indent, group 2: bullet, group 3: the box's character (None for a box of spaces).
# A box character is one UTF-16 code unit: astral characters (two units) never match.
TASK_RE = re.compile(
    rf"({WS}*)([-*+]|[0-9]{{1,9}}[.)]){WS}*\["
    rf"{WS}*(?:(?!\])([^{re.escape(JS_WHITESPACE)}\U00010000-\U0010ffff]){WS}*)?\]"
)


def match_task(line: str) -> re.Match[str] | None:
    """The match of :data:`TASK_RE` when ``line`` is a task line by the CLI's rule, else None.

    Groups: 1 the indent, 2 the bullet, 3 the box's character (None for a box of spaces or
    ``[]``); the match ends at the box's ``]``.
    """
    m = TASK_RE.match(line)
    if m is None:
        return None
    # `[x](url)`, `[](url)` and `[x][ref]` are links, not tasks; only a box holding one or
    # more spaces and nothing else may be directly followed by `(` or `[`.
    if line[m.end() : m.end() + 1] in ("(", "[") and (
        m.group(3) is not None or line[m.end() - 2 : m.end()] == "[]"
    ):
        return None
    return m
