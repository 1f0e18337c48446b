"""Where a spec file sits in a project: a delta's main spec, and every main spec's requirements."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.openspec.validation.blocks import Block, extract_requirements_section, fold_name
from ralph_lsp.openspec.validation.items import list_spec_ids
from ralph_lsp.openspec.validation.spec_rules import read_text

Reader = Callable[[Path], str]  # a file's text: the editor's buffer when it is open


def _openspec_index(path: Path) -> int | None:
    parts = path.parts
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == "openspec":
            return i
    return None


def is_spec_file(path: Path) -> bool:
    """A main spec (`openspec/specs/**/spec.md`) or a delta (`changes/<c>/specs/**/spec.md`)."""
    return path.name == "spec.md" and _openspec_index(path) is not None and "specs" in path.parts


def delta_capability(path: Path) -> tuple[Path, str] | None:
    """(project root, capability) of a delta spec `openspec/changes/<c>/specs/<cap>/spec.md`
    (archived changes included); None for any other file."""
    i = _openspec_index(path)
    if i is None or path.name != "spec.md":
        parts: tuple[str, ...] = ()
    else:
        parts = path.parts[i + 1 : -1]
    if len(parts) < 4 or parts[0] != "changes":
        return None
    k = parts.index("specs", 2) if "specs" in parts[2:] else -1
    if k < 0 or k + 1 >= len(parts):
        return None
    return Path(*path.parts[:i]), "/".join(parts[k + 1 :])


def main_spec_of(delta: Path) -> Path | None:
    found = delta_capability(delta)
    if found is None:
        return None
    root, capability = found
    return root / "openspec" / "specs" / capability / "spec.md"


def disk_reader(path: Path) -> str:
    return read_text(path)


def main_requirements(main: Path, read: Reader = disk_reader) -> list[Block]:
    """The requirements of a main spec (none when it is missing or unreadable)."""
    try:
        text = read(main)
    except (OSError, UnicodeError):
        return []
    return extract_requirements_section(text).blocks


def find_requirement(blocks: list[Block], name: str) -> Block | None:
    key = fold_name(name)
    return next((b for b in blocks if fold_name(b.name) == key), None)


@dataclass(frozen=True)
class SpecRequirement:
    capability: str
    file: Path
    name: str
    line: int  # 0-based line of its header


def _matches(query: str, text: str) -> bool:
    text = text.lower()
    return all(word in text for word in query.lower().split())


def workspace_requirements(
    roots: Iterable[Path], query: str = "", read: Reader = disk_reader, limit: int = 1000
) -> list[SpecRequirement]:
    """Every requirement of every main spec of the roots whose name (or capability) holds each
    word of the query, case-insensitively; at most `limit`."""
    out: list[SpecRequirement] = []
    for root in roots:
        for capability in list_spec_ids(root):
            file = root / "openspec" / "specs" / capability / "spec.md"
            for block in main_requirements(file, read):
                if _matches(query, f"{block.name} {capability}"):
                    out.append(SpecRequirement(capability, file, block.name, block.line - 1))
                    if len(out) >= limit:
                        return out
    return out
