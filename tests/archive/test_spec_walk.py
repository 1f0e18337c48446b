"""archive's walks of a change's ``specs/``: which delta specs it reads, which files it warns of."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.openspec.archive_checks import discover_spec_files, find_unread_delta_files

DELTA = "## ADDED Requirements\n### Requirement: X\nThe system SHALL x.\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_walks_skip_dot_entries_and_linked_folders(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    _write(specs / "spec.md", DELTA)  # no capability folder: no id
    _write(specs / "auth" / "spec.md", DELTA)
    _write(specs / "auth" / "notes.md", DELTA)  # delta sections archive never merges
    _write(specs / "auth" / "README.md", "# Just notes\n")
    _write(specs / "billing" / "invoices" / "spec.md", DELTA)
    _write(specs / "billing" / "invoices" / "extra.MD", DELTA)
    _write(specs / ".hidden" / "spec.md", DELTA)
    _write(specs / "auth" / ".draft.md", DELTA)
    _write(tmp_path / "elsewhere" / "spec.md", DELTA)
    _write(tmp_path / "elsewhere" / "more.md", DELTA)
    (specs / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (specs / "not-a-folder").mkdir()
    (specs / "not-a-folder" / "spec.md").mkdir()  # a folder named spec.md is no spec

    assert discover_spec_files(specs) == [
        ("auth", specs / "auth" / "spec.md"),
        ("billing/invoices", specs / "billing" / "invoices" / "spec.md"),
    ]
    assert find_unread_delta_files(specs) == ["auth/notes.md", "billing/invoices/extra.MD"]


def test_walks_of_a_missing_folder_find_nothing(tmp_path: Path) -> None:
    assert discover_spec_files(tmp_path / "none") == []
    assert find_unread_delta_files(tmp_path / "none") == []
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert discover_spec_files(tmp_path / "file") == []
