"""What `openspec validate` can name: active changes and main spec ids, and near matches."""

from __future__ import annotations

import os
from pathlib import Path

from ralph_lsp.openspec.validation.discovery import discover_spec_files


def list_change_ids(root: Path) -> list[str]:
    try:
        entries = list(os.scandir(root / "openspec" / "changes"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(
        e.name for e in entries if e.is_dir() and e.name != "archive" and not e.name.startswith(".")
    )


def list_spec_ids(root: Path) -> list[str]:
    return [spec_id for spec_id, _ in discover_spec_files(root / "openspec" / "specs")]


def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def nearest_matches(name: str, candidates: list[str], limit: int = 5) -> list[str]:
    return sorted(candidates, key=lambda c: _levenshtein(name, c))[:limit]
