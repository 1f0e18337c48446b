"""The project context of ``openspec/config.yaml`` (or ``config.yml``), as the OpenSpec CLI's
``openspec instructions apply`` gives it to an agent (SPEC §4 v2): the top-level ``context``
string, when it is a non-blank string of at most 50 KiB.

The CLI parses the whole file as YAML; ralph-lsp needs one top-level string and reads the ways
people write it — a block scalar (``|``, ``>``, with ``-``/``+`` chomping and an explicit indent),
a plain scalar (also continued on indented lines), a single- or double-quoted one — without a
YAML dependency. Anything else is reported, never guessed. ``tests/test_project_context.py``
compares the result with the real CLI's. The CLI's per-artifact ``rules`` are not part of what
``instructions apply`` gives, so they are not read here either.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ralph_lsp.openspec.tasks import NotARegularFile, open_regular

#: The OpenSpec CLI's own limit: a larger context is ignored with a warning.
MAX_CONTEXT_BYTES = 50 * 1024
_MAX_FILE_BYTES = 1024 * 1024

_KEY_RE = re.compile(r"context[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")
_BLOCK_RE = re.compile(r"([|>])([1-9]?)([+-]?)([1-9]?)[ \t]*(?:#.*)?$")
_COMMENT_RE = re.compile(r"[ \t]+#.*$")


class ContextError(ValueError):
    """The ``context`` is there but cannot be read as the string it should be."""


def config_path(root: Path) -> Path | None:
    for name in ("config.yaml", "config.yml"):
        path = root / "openspec" / name
        if path.is_file():
            return path
    return None


def read_project_context(root: Path) -> tuple[str | None, str | None]:
    """(context, warning): the context to give the agent, or None; and a line to log, if any."""
    path = config_path(root)
    if path is None:
        return None, None
    try:
        fd = open_regular(path, _MAX_FILE_BYTES)
        with os.fdopen(fd, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except (OSError, NotARegularFile) as exc:
        return None, f"{path} cannot be read ({exc}); the prompt has no project context"
    try:
        context = parse_context(text)
    except ContextError as exc:
        return None, f"{path}: {exc}; the prompt has no project context"
    if context is None or not context.strip():
        return None, None
    size = len(context.encode("utf-8"))
    if size > MAX_CONTEXT_BYTES:
        return None, (
            f"{path}: context is {size / 1024:.1f} KiB, over OpenSpec's 50 KiB limit; ignored"
            " (as openspec instructions apply ignores it)"
        )
    return context, None


def parse_context(text: str) -> str | None:
    """The top-level ``context`` string of a YAML text, None when there is none."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the text's final line break ends the last line: no line after it
    for i, line in enumerate(lines):
        m = _KEY_RE.match(line)
        if m is None:
            continue
        value = (m.group(1) or "").rstrip()
        rest = lines[i + 1 :]
        if value[:1] in ("|", ">"):
            return _block(value, rest)
        if value[:1] == '"':
            return _double_quoted(value)
        if value[:1] == "'":
            return _single_quoted(value)
        if value[:1] in ("[", "{", "&", "*", "!"):
            raise ContextError("context is not a plain string (flow, anchor or tag)")
        return _plain(_COMMENT_RE.sub("", value), rest)
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(header: str, rest: list[str]) -> str:
    m = _BLOCK_RE.match(header)
    if m is None:
        raise ContextError(f"cannot read the block scalar header {header!r}")
    style, ind1, chomp, ind2 = m.groups()
    body: list[str] = []
    for line in rest:
        if line.strip() and _indent(line) == 0:
            break  # the next top-level key
        body.append(line)
    n = len(body)
    while n and not body[n - 1].strip():
        n -= 1
    trailing = len(body) - n  # blank lines after the content (kept by `+`)
    explicit = ind1 or ind2
    firsts = [_indent(x) for x in body[:n] if x.strip()]
    indent = int(explicit) if explicit else (firsts[0] if firsts else 0)
    kept = [x[indent:] if x.strip() else "" for x in body[:n]]
    if not kept:
        return ""
    content = "\n".join(kept) if style == "|" else _fold(kept)
    if chomp == "-":
        return content
    if chomp == "+":
        return content + "\n" * (1 + trailing)
    return content + "\n"


def _fold(lines: list[str]) -> str:
    """YAML's folding of a ``>`` block: lines joined by spaces; an empty line is a newline;
    more-indented lines keep their breaks."""
    out = ""
    prev_more = False
    for i, line in enumerate(lines):
        more = line.startswith((" ", "\t"))
        if i == 0:
            out = line
        elif line == "":
            out += "\n"
        elif out.endswith("\n") or more or prev_more:
            out += ("" if out.endswith("\n") else "\n") + line
        else:
            out += " " + line
        prev_more = more
    return out


def _plain(first: str, rest: list[str]) -> str:
    parts = [first.strip()] if first.strip() else []
    for line in rest:
        if not line.strip():
            if parts:
                parts.append("\n")
            continue
        if _indent(line) == 0:
            break
        parts.append(_COMMENT_RE.sub("", line).strip())
    text = ""
    for part in parts:
        if part == "\n":
            text += "\n"
        elif text and not text.endswith("\n"):
            text += " " + part
        else:
            text += part
    return text.strip("\n")


def _double_quoted(value: str) -> str:
    end = value.rfind('"')
    if end <= 0:
        raise ContextError("a double-quoted context must end on the same line")
    try:
        parsed = json.loads(value[: end + 1])
    except ValueError as exc:
        raise ContextError(f"cannot read the double-quoted context ({exc})") from None
    if not isinstance(parsed, str):
        raise ContextError("context is not a string")
    return parsed


def _single_quoted(value: str) -> str:
    end = value.rfind("'")
    if end <= 0:
        raise ContextError("a single-quoted context must end on the same line")
    return value[1:end].replace("''", "'")
