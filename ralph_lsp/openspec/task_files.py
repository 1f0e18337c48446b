"""A change's task files, chosen by its OpenSpec schema as the CLI 1.13.2 chooses them (SPEC §11).

The schema's name: ``schema`` of the change's ``.openspec.yaml``, else of ``openspec/config.yaml``,
else the built-in ``spec-driven``. Its folder: ``openspec/schemas/<name>/`` of the project, then
the user's data folder (``$XDG_DATA_HOME/openspec/schemas``, else ``%LOCALAPPDATA%\\openspec\\
schemas`` on Windows, else ``~/.local/share/openspec/schemas``), then the built-in. The tracked
artifact is the one whose ``generates`` equals ``apply.tracks`` (the artifact ``tasks`` when the
schema names none), and its ``generates`` (a file name or a glob, relative to the change) gives
the files. No schema, a schema that does not load, or no file: ``tasks.md``, as the CLI falls back.

Reads files only. A file's content is cached per state (its modification time and size), and
what a root's ``config.yaml`` and schema folders say is looked at again after
:data:`RECHECK_SECONDS`, so a listing of thousands of changes stats one file per change.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.tasks import read_regular

#: The largest schema or config YAML read.
MAX_SCHEMA_BYTES = 4 << 20

DEFAULT_TASKS = "tasks.md"
BUILT_IN = "spec-driven"
#: The built-in schemas and the ``generates`` of the artifact their ``apply.tracks`` names.
_BUILT_IN_TRACKS = {BUILT_IN: DEFAULT_TASKS}


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=4096)
def _read_yaml(path: str, stamp: tuple[int, int] | None) -> Any:
    """A YAML file's content read with every scalar a string (None when absent or unreadable)."""
    if stamp is None:
        return None
    import yaml  # type: ignore[import-untyped]  # (no stubs needed: one call); only when needed

    try:
        # Only a regular file: a named pipe in a stranger's openspec/ must not hang anyone.
        text = read_regular(Path(path), MAX_SCHEMA_BYTES).decode("utf-8", errors="replace")
        return yaml.load(text, Loader=yaml.BaseLoader)  # BaseLoader: every scalar a string
    except (OSError, yaml.YAMLError):
        return None


def _yaml(path: str) -> Any:
    return _read_yaml(path, _stamp(path))


def _schema_field(path: str) -> str | None:
    data = _yaml(path)
    if isinstance(data, dict):
        value = data.get("schema")
        if isinstance(value, str) and value:
            return value
    return None


def schema_name(root: Path, change_dir: Path) -> str:
    """The change's schema: ``.openspec.yaml``'s, else ``openspec/config.yaml``'s, else built-in."""
    return (
        _schema_field(os.path.join(change_dir, ".openspec.yaml"))
        or _schema_field(os.path.join(root, "openspec", "config.yaml"))
        or BUILT_IN
    )


def user_schemas_dir(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The user's schema folder, as the CLI's ``getGlobalDataDir`` computes it."""
    env = os.environ if env is None else env
    platform = platform or sys.platform
    if env.get("XDG_DATA_HOME"):
        return Path(env["XDG_DATA_HOME"]) / "openspec" / "schemas"
    if platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "openspec" / "schemas"
    return Path.home() / ".local" / "share" / "openspec" / "schemas"


@lru_cache(maxsize=8)
def _user_dir(xdg: str | None, local: str | None, home: str | None) -> str:
    """:func:`user_schemas_dir` as a string, computed once per environment."""
    return str(user_schemas_dir())


def _valid_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def _tracked_generates(schema: Any) -> str | None:
    """The ``generates`` of the artifact the schema's ``apply.tracks`` names (or ``tasks``)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("artifacts"), list):
        return None
    artifacts = [a for a in schema["artifacts"] if isinstance(a, dict)]
    apply = schema.get("apply")
    tracks = apply.get("tracks") if isinstance(apply, dict) else None
    if isinstance(tracks, str) and tracks not in ("", "~", "null", "Null", "NULL"):
        found = next((a for a in artifacts if a.get("generates") == tracks), None)
    else:
        found = next((a for a in artifacts if a.get("id") == "tasks"), None)
    generates = found.get("generates") if found else None
    return generates if isinstance(generates, str) and generates else None


@dataclass
class _RootView:
    """What a root's schemas say, looked at once per :data:`RECHECK_SECONDS` at most."""

    at: float
    config_schema: str | None
    patterns: dict[str, str | None] = field(default_factory=dict)


#: How long what a root's config.yaml and schema folders say is trusted before it is read again:
#: a listing of 10,000 changes then costs one stat per change (its .openspec.yaml), not four.
RECHECK_SECONDS = 0.5
_ROOTS: dict[str, _RootView] = {}


def forget() -> None:
    """Read every root's config and schemas afresh on the next question."""
    _ROOTS.clear()


def _root_view(root: str) -> _RootView:
    now = time.monotonic()
    view = _ROOTS.get(root)
    if view is None or now - view.at > RECHECK_SECONDS:
        config = _schema_field(os.path.join(root, "openspec", "config.yaml"))
        view = _ROOTS[root] = _RootView(now, config)
    return view


def _resolve(root: str, name: str) -> str | None:
    if name.endswith(".yaml"):
        name = name[: -len(".yaml")]
    elif name.endswith(".yml"):
        name = name[: -len(".yml")]
    if not _valid_name(name):
        return None
    env = os.environ
    user = _user_dir(env.get("XDG_DATA_HOME"), env.get("LOCALAPPDATA"), env.get("HOME"))
    for folder in (os.path.join(root, "openspec", "schemas"), user):
        path = os.path.join(folder, name, "schema.yaml")
        stamp = _stamp(path)
        if stamp is not None:
            return _tracked_generates(_read_yaml(path, stamp))
    return _BUILT_IN_TRACKS.get(name)


def tracked_pattern(root: Path, change_dir: Path) -> str | None:
    """What the change's schema tracks (a file name or glob relative to the change), if it loads."""
    view = _root_view(str(root))
    name = _schema_field(os.path.join(change_dir, ".openspec.yaml")) or view.config_schema
    name = name or BUILT_IN
    if name not in view.patterns:
        view.patterns[name] = _resolve(str(root), name)
    return view.patterns[name]


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[{")


def task_files(root: Path, change_dir: Path) -> list[Path]:
    """The change's task files, existing ones only; ``[change/tasks.md]`` when there are none."""
    pattern = tracked_pattern(root, change_dir)
    found: list[Path] = []
    if pattern == DEFAULT_TASKS:  # the usual case: found or not, the answer is tasks.md
        pass
    elif pattern and not _is_glob(pattern):
        candidate = change_dir / pattern
        inside = os.path.normpath(candidate).startswith(os.path.normpath(change_dir) + os.sep)
        if inside and candidate.is_file():
            found = [candidate]
    elif pattern:
        import glob  # a schema's glob: rare, and not at the server's start

        matches = glob.glob(pattern.replace("\\", "/"), root_dir=change_dir, recursive=True)
        found = sorted(
            change_dir / m for m in matches if (change_dir / m).is_file() and ".." not in m
        )
    return found or [change_dir / DEFAULT_TASKS]


def tasks_file_name(root: Path, change_dir: Path) -> str:
    """The file name a change's tasks live in (its first task file's path relative to it)."""
    first = task_files(root, change_dir)[0]
    return str(first.relative_to(change_dir))
