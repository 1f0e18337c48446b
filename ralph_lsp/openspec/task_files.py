"""A change's task files, chosen by its OpenSpec schema as the CLI 1.13.2 chooses them (SPEC §11).

The schema's name: ``schema`` of the change's ``.openspec.yaml``, else of ``openspec/config.yaml``,
else the built-in ``spec-driven``. Its folder: ``openspec/schemas/<name>/`` of the project, then
the user's data folder (``$XDG_DATA_HOME/openspec/schemas``, else ``%LOCALAPPDATA%\\openspec\\
schemas`` on Windows, else ``~/.local/share/openspec/schemas``), then the built-in. The tracked
artifact is the one whose ``generates`` equals ``apply.tracks`` (the artifact ``tasks`` when the
schema names none), and its ``generates`` (a file name or a glob, relative to the change) gives
the files. No schema, a schema that does not load, or no file: ``tasks.md``, as the CLI falls back.

Reads files only. Results are cached per file state (the files' modification times), so a listing
of thousands of changes reads each schema once.
"""

from __future__ import annotations

import glob
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # (no stubs needed: one call)

DEFAULT_TASKS = "tasks.md"
BUILT_IN = "spec-driven"
#: The built-in schemas and the ``generates`` of the artifact their ``apply.tracks`` names.
_BUILT_IN_TRACKS = {BUILT_IN: DEFAULT_TASKS}


def _stamp(path: Path) -> float | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


@lru_cache(maxsize=4096)
def _read_yaml(path: Path, _stamp: float | None) -> Any:
    """A YAML file's content read with every scalar a string (None when absent or unreadable)."""
    if _stamp is None:
        return None
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
        return yaml.load(text, Loader=yaml.BaseLoader)  # BaseLoader: every scalar a string
    except (OSError, yaml.YAMLError):
        return None


def _yaml(path: Path) -> Any:
    return _read_yaml(path, _stamp(path))


def _schema_field(path: Path) -> str | None:
    data = _yaml(path)
    if isinstance(data, dict):
        value = data.get("schema")
        if isinstance(value, str) and value:
            return value
    return None


def schema_name(root: Path, change_dir: Path) -> str:
    """The change's schema: ``.openspec.yaml``'s, else ``openspec/config.yaml``'s, else built-in."""
    return (
        _schema_field(change_dir / ".openspec.yaml")
        or _schema_field(root / "openspec" / "config.yaml")
        or BUILT_IN
    )


def user_schemas_dir(env: dict[str, str] | None = None, platform: str | None = None) -> Path:
    """The user's schema folder, as the CLI's ``getGlobalDataDir`` computes it."""
    env = dict(os.environ) if env is None else env
    platform = platform or sys.platform
    if env.get("XDG_DATA_HOME"):
        return Path(env["XDG_DATA_HOME"]) / "openspec" / "schemas"
    if platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "openspec" / "schemas"
    return Path.home() / ".local" / "share" / "openspec" / "schemas"


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


def tracked_pattern(root: Path, change_dir: Path) -> str | None:
    """What the change's schema tracks (a file name or glob relative to the change), if it loads."""
    name = schema_name(root, change_dir)
    if name.endswith(".yaml"):
        name = name[: -len(".yaml")]
    elif name.endswith(".yml"):
        name = name[: -len(".yml")]
    if not _valid_name(name):
        return None
    for folder in (root / "openspec" / "schemas", user_schemas_dir()):
        path = folder / name / "schema.yaml"
        if path.exists():
            return _tracked_generates(_yaml(path))
    return _BUILT_IN_TRACKS.get(name)


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[{")


def task_files(root: Path, change_dir: Path) -> list[Path]:
    """The change's task files, existing ones only; ``[change/tasks.md]`` when there are none."""
    pattern = tracked_pattern(root, change_dir)
    found: list[Path] = []
    if pattern and not _is_glob(pattern):
        candidate = change_dir / pattern
        inside = os.path.normpath(candidate).startswith(os.path.normpath(change_dir) + os.sep)
        if inside and candidate.is_file():
            found = [candidate]
    elif pattern:
        matches = glob.glob(pattern.replace("\\", "/"), root_dir=change_dir, recursive=True)
        found = sorted(
            change_dir / m for m in matches if (change_dir / m).is_file() and ".." not in m
        )
    return found or [change_dir / DEFAULT_TASKS]


def tasks_file_name(root: Path, change_dir: Path) -> str:
    """The file name a change's tasks live in (its first task file's path relative to it)."""
    first = task_files(root, change_dir)[0]
    return str(first.relative_to(change_dir))
