"""The names read back from ``.ralph/`` (run ids, queue ids, change names), checked against the
exact shapes ralph-lsp writes before any of them is joined into a path.

A repository can carry its own ``.ralph/``: every id in a live file or a record is a stranger's
input. An id that does not have the shape we generate (``r-20260101-120000-1a2b3c4``,
``q-…``), or a change name that is not one plain folder name, is refused as a damaged file: it
never becomes ``/etc/…`` or ``../../…``. :func:`child` joins a checked name under its folder and
checks the result stays there.
"""

from __future__ import annotations

import re
from pathlib import Path

# new_run_id / new_queue_id: "<r|q>-YYYYmmdd-HHMMSS-<pid hex><4 hex>".
_RUN_ID = re.compile(r"r-[0-9]{8}-[0-9]{6}-[0-9a-f]{5,24}")
_QUEUE_ID = re.compile(r"q-[0-9]{8}-[0-9]{6}-[0-9a-f]{5,24}")
_MAX_NAME = 255


class BadId(ValueError):
    """A name read from disk is not one ralph-lsp could have written."""


def is_run_id(value: object) -> bool:
    return isinstance(value, str) and _RUN_ID.fullmatch(value) is not None


def is_queue_id(value: object) -> bool:
    return isinstance(value, str) and _QUEUE_ID.fullmatch(value) is not None


def is_change_name(value: object) -> bool:
    """One plain folder name of ``openspec/changes/``, as ``resolve_change`` accepts: never a
    path (no ``/``), never ``.``/``..``, no NUL, never ``archive``."""
    return (
        isinstance(value, str)
        and 0 < len(value.encode("utf-8", "surrogateescape")) <= _MAX_NAME
        and "/" not in value
        and "\0" not in value
        and value not in (".", "..", "archive")
    )


def run_id(value: object) -> str:
    """``value`` when it is a run id (or a queue's id, which names a queue's live file the same
    way); raises :class:`BadId`."""
    if is_run_id(value) or is_queue_id(value):
        return str(value)
    raise BadId(f"not a run id: {str(value)[:80]!r}")


def change_name(value: object) -> str:
    """``value`` when it is a plain change name; raises :class:`BadId`."""
    if is_change_name(value):
        return str(value)
    raise BadId(f"not a change name: {str(value)[:80]!r}")


def child(folder: Path, *names: str) -> Path:
    """``folder/names…`` where each name is one plain component (no ``/``, ``.``, ``..``,
    NUL, never absolute), so the result is inside ``folder``; raises :class:`BadId`."""
    path = folder
    for name in names:
        if not name or "/" in name or "\0" in name or name in (".", ".."):
            raise BadId(f"not a plain name under {folder}: {name[:80]!r}")
        path = path / name
    if path.parent != folder and folder not in path.parents:  # pragma: no cover - by the above
        raise BadId(f"{path} is not inside {folder}")
    return path
