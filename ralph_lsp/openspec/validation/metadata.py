"""`.openspec.yaml`: the `skip_specs` marker as the CLI reads it (`readSkipSpecsMarker`)."""

from __future__ import annotations

import re
from pathlib import Path

from ralph_lsp.openspec.validation.spec_rules import read_text
from ralph_lsp.openspec.validation.text import LazyPattern

BUILT_IN_SCHEMAS = ("spec-driven",)
# `(.*?)[ \t]*$` was quadratic in a long run of spaces; the value is stripped anyway, so the
# group takes the line's end as it is. Each run is maximal (`X*(?!X)`, what `X*+` says in
# Python 3.11 and later: the package supports 3.10).
_KEY = LazyPattern(r"^([A-Za-z_][\w-]*(?![\w-]))[ \t]*(?![ \t]):[ \t]*(?![ \t])(.*)")
_DATE = LazyPattern(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)


class Marker:
    __slots__ = ("declared", "invalid_reason")

    def __init__(self, declared: bool, invalid_reason: str | None = None) -> None:
        self.declared, self.invalid_reason = declared, invalid_reason


def top_level_scalars(text: str) -> dict[str, str]:
    """The top-level `key: value` pairs of a small YAML mapping (the metadata files are flat)."""
    out: dict[str, str] = {}
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line or line[0] in " \t#-":
            continue
        m = _KEY.match(line)
        if m:
            value = m.group(2).split(" #", 1)[0].strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            out[m.group(1)] = value
    return out


def project_schemas(root_dir: Path) -> list[str]:
    folder = root_dir / "openspec" / "schemas"
    try:
        return sorted(p.name for p in folder.iterdir() if (p / "schema.yaml").is_file())
    except OSError:
        return []


def read_skip_specs(change_dir: Path, *, root_dir: Path, content: str | None = None) -> Marker:
    if content is None:
        try:
            content = read_text(change_dir / ".openspec.yaml")
        except FileNotFoundError:
            return Marker(False)
        except OSError as err:
            return Marker(False, _safe(f"the metadata file cannot be read ({err.strerror})"))
    keys = top_level_scalars(content)
    if "skip_specs" not in keys or keys["skip_specs"] == "false":
        return Marker(False)
    if keys["skip_specs"] != "true":
        return Marker(False, "skip_specs: Invalid input: expected boolean, received string")
    schema = keys.get("schema", "")
    if not schema:
        return Marker(
            False,
            "schema: schema is required"
            if "schema" in keys
            else "schema: Invalid input: expected string, received undefined",
        )
    if "created" in keys and not _DATE.match(keys["created"]):
        return Marker(False, "created: created must be YYYY-MM-DD format")
    if schema not in {*BUILT_IN_SCHEMAS, *project_schemas(root_dir)}:
        return Marker(False, _safe(f"schema: unknown schema '{schema}'"))
    return Marker(True)


def _safe(reason: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f]", "?", reason)
