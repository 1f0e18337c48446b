"""The paths an archive writes or moves, checked before its first byte: no link on the way.

An archive writes ``openspec/specs/<cap>/spec.md`` and moves ``openspec/changes/<name>`` into
``openspec/changes/archive/``. A cloned repository (or a run) can have made any component of
those paths a symbolic link: a linked ``spec.md`` would rewrite another project's file, a
dangling one create its target, a linked ``archive/`` carry the change out of the repository.
So every component below the root must be a real folder (the last one: a real folder or
regular file) or not exist yet; :func:`path_refusal` names the first that is not.
``archiving/`` opens the same components with ``O_NOFOLLOW`` when it writes, so a link swapped
in after this check is refused there too.

Read-only: :mod:`ralph_lsp.openspec` never writes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

#: The words every refusal of a link ends with.
NO_LINKS = "archive writes nothing through links"

#: Where archive writes main specs, and where it moves a change (below the root).
SPECS_PARTS = ("openspec", "specs")
CHANGES_PARTS = ("openspec", "changes")
ARCHIVE_PARTS = (*CHANGES_PARTS, "archive")


def spec_parts(spec_id: str) -> tuple[str, ...]:
    """The components of main spec ``spec_id``'s folder below the root."""
    return (*SPECS_PARTS, *spec_id.split("/"))


def link_message(shown: str) -> str:
    """The refusal for the link ``shown`` (a path relative to the root)."""
    return f"{shown} is a symbolic link: {NO_LINKS}"


def not_a_folder_message(shown: str) -> str:
    """The refusal for ``shown`` (relative to the root) being in the way of a folder."""
    return f"{shown} is not a folder: archive writes nothing there"


def refusal_code(problem: str) -> str:
    """The ``--json`` blocker code of a refusal of :func:`path_refusal`: a link (or a name no
    plain name), else something that is no folder in the way."""
    return "archive_path_symlink" if problem.endswith(NO_LINKS) else "archive_path_not_a_folder"


def path_refusal(root: Path, parts: Sequence[str], *, last_is_file: bool = False) -> str | None:
    """Why archive may not write at ``root/parts``, or None: the first component that is a
    symbolic link, a name that is no plain name, or (but for a last file) not a folder. A
    component that does not exist ends the check (archive makes it, and what is below it)."""
    here = root
    for i, name in enumerate(parts):
        shown = "/".join(parts[: i + 1])
        if name in ("", ".", "..") or "/" in name:
            return f"{shown} is not a plain name: {NO_LINKS}"
        here = here / name
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{shown} cannot be looked at ({exc.strerror})"
        if stat.S_ISLNK(mode):
            return link_message(shown)
        last = i == len(parts) - 1
        if not (last and last_is_file) and not stat.S_ISDIR(mode):
            return not_a_folder_message(shown)
    return None
