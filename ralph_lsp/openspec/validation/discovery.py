"""Finding delta and main spec files as the CLI does (`discoverSpecFiles`), and reading them."""

from __future__ import annotations

import os
from pathlib import Path

from ralph_lsp.openspec.validation.spec_rules import read_text

Overrides = dict[Path, str]


def discover_spec_files(specs_root: Path) -> list[tuple[str, Path]]:
    """Every `spec.md` below a capability folder, as (id, file), sorted by id."""
    found: list[tuple[str, Path]] = []

    def walk(folder: str | Path, segments: list[str]) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, [*segments, entry.name])  # (a Path only for what is found)
            elif entry.name == "spec.md" and segments and entry.is_file():
                found.append(("/".join(segments), Path(entry.path)))

    walk(specs_root, [])
    return sorted(found, key=lambda f: f[0])


def read_once(file: Path, texts: Overrides) -> str:
    """The text standing for `file` in `texts` (an editor's), else the disk's, which `texts`
    then keeps. `validate_change` passes its own copy of the editor's texts through its rules,
    so that one call reads each file once, however many rules read it (a delta spec was read
    twice, its main spec up to three times)."""
    text = texts.get(file)
    if text is None:
        text = texts[file] = read_text(file)
    return text


def read_with(file: Path, overrides: Overrides) -> str:
    """The text standing for `file`: an override (an open editor's) or the disk's."""
    return overrides[file] if file in overrides else read_text(file)
