"""The scan of a project's test files (SPEC §13 "Linked"): incremental, confined to the root,
regular files only, and the table it makes with the change's scenarios."""

from __future__ import annotations

import os
from pathlib import Path

from ralph_lsp.conformance.check import conformance
from ralph_lsp.conformance.gate import effective, first_unmet, prompt_section
from ralph_lsp.conformance.junit import Case
from ralph_lsp.conformance.scan import MAX_DEPTH, MAX_TEST_FILE_BYTES, Scanner
from ralph_lsp.conformance.table import Table
from tests.conformance.conftest import CHANGE, write_project

LINKED = 'def test_shout():\n    """Scenario: Shout once"""\n'


def test_a_rescan_reads_only_the_files_that_changed(tmp_path: Path) -> None:
    for n in range(20):
        (tmp_path / "tests").mkdir(exist_ok=True)
        (tmp_path / "tests" / f"test_{n}.py").write_text(f"def test_{n}():\n    pass\n")
    scanner = Scanner(tmp_path)
    assert scanner.scan() == {} and scanner.reads == 20
    assert scanner.scan() == {} and scanner.reads == 0
    (tmp_path / "tests" / "test_3.py").write_text(LINKED)
    found = scanner.scan()
    assert scanner.reads == 1 and list(found) == ["tests/test_3.py"]
    (tmp_path / "tests" / "test_3.py").unlink()
    assert scanner.scan() == {} and "tests/test_3.py" not in scanner.files


def test_the_scan_stays_in_the_root_and_reads_only_small_regular_test_files(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_out.py").write_text(LINKED)
    root = tmp_path / "root"
    for folder in ("tests", "node_modules/pkg/tests", ".venv/lib/tests", "build/tests", ".ralph"):
        (root / folder).mkdir(parents=True)
        (root / folder / "test_x.py").write_text(LINKED)
    (root / "tests" / "linked_dir").symlink_to(outside)
    (root / "tests" / "test_link.py").symlink_to(outside / "test_out.py")
    os.mkfifo(root / "tests" / "test_fifo.py")
    with open(root / "tests" / "test_huge.py", "wb") as f:
        f.truncate(MAX_TEST_FILE_BYTES + 1)
    scanner = Scanner(root)
    assert list(scanner.scan()) == ["tests/test_x.py"]
    assert len(scanner.warnings) == 1 and "test_huge.py" in scanner.warnings[0]


def test_a_file_read_again_after_a_change_of_kind_and_folders_too_deep_are_said(
    tmp_path: Path,
) -> None:
    """The walk opens each folder from its parent's descriptor: a cached file replaced by a
    link is dropped, not followed, and a tree deeper than the limit is named, not walked."""
    (tmp_path / "tests").mkdir()
    target = tmp_path / "tests" / "test_a.py"
    target.write_text(LINKED)
    scanner = Scanner(tmp_path)
    assert list(scanner.scan()) == ["tests/test_a.py"] and scanner.reads == 1
    (tmp_path / "elsewhere.py").write_text(LINKED)
    target.unlink()
    target.symlink_to(tmp_path / "elsewhere.py")
    assert scanner.scan() == {} and scanner.reads == 0
    deep = tmp_path / "tests" / "/".join(f"d{n}" for n in range(MAX_DEPTH + 2))
    deep.mkdir(parents=True)
    (deep / "test_deep.py").write_text(LINKED)
    (tmp_path / "tests" / "d0" / "test_shallow.py").write_text(LINKED)
    assert list(scanner.scan()) == ["tests/d0/test_shallow.py"]
    assert len(scanner.warnings) == 1 and f"deeper than {MAX_DEPTH}" in scanner.warnings[0]


def test_a_root_reached_through_a_link_is_scanned(tmp_path: Path) -> None:
    (tmp_path / "real" / "tests").mkdir(parents=True)
    (tmp_path / "real" / "tests" / "test_a.py").write_text(LINKED)
    (tmp_path / "via").symlink_to(tmp_path / "real")
    assert list(Scanner(tmp_path / "via").scan()) == ["tests/test_a.py"]


def test_custom_globs_replace_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "shout_check.py").write_text(LINKED)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(LINKED)
    assert list(Scanner(tmp_path, ["checks/*_check.py"]).scan()) == ["checks/shout_check.py"]


def _table(root: Path, cases: list[Case]) -> Table:
    change = root / "openspec" / "changes" / CHANGE
    return conformance(root, change, Scanner(root), cases).table


def test_the_table_says_each_scenarios_state_from_the_links_and_the_report(
    tmp_path: Path,
) -> None:
    root = write_project(tmp_path)
    (root / "tests" / "test_shout.py").write_text(
        LINKED + "\n\ndef test_twice():\n    # Scenario: Shout twice\n    pass\n"
    )
    cases = [
        Case("tests.test_shout", "test_shout", "", "passed"),
        Case("tests.test_shout", "test_twice", "", "failed"),
    ]
    table = _table(root, cases)
    assert [(r.title, r.state, r.test) for r in table.rows] == [
        ("Shout once", "verified", "tests/test_shout.py::test_shout"),
        ("Shout twice", "failing", "tests/test_shout.py::test_twice"),
        ("Empty input", "unlinked", None),
    ]
    assert table.summary() == "1/3 scenarios verified" and table.verified == 1
    assert _table(root, []).rows[0].state == "not-run"
    assert table.render_markdown().splitlines()[:3] == [
        "| scenario | state | test |",
        "| --- | --- | --- |",
        "| cli/Shouting/Shout once | ✓ verified | `tests/test_shout.py::test_shout` |",
    ]
    assert Table.from_json(table.to_json()) == table
    assert effective("auto", table) == "verified"
    assert effective("auto", _table(write_project(tmp_path / "bare"), [])) == "off"
    assert first_unmet(table, "verified") == (
        "The test for *Shout twice*, tests/test_shout.py::test_twice, fails (and 1 more unmet)"
    )
    assert first_unmet(table, "linked") == (
        f"Scenario *Empty input* has no test that names it"
        f" (openspec/changes/{CHANGE}/specs/cli/spec.md:17)"
    )
    section = prompt_section(table, "verified")
    assert section[0] == "## Conformance" and section[1] == "1/3 scenarios verified. Not yet met:"
    assert prompt_section(table, "off") == []


def test_a_test_naming_a_main_spec_scenario_turns_the_auto_gate_on(tmp_path: Path) -> None:
    root = write_project(tmp_path)
    main = root / "openspec" / "specs" / "greeting"
    main.mkdir(parents=True)
    main.joinpath("spec.md").write_text(
        "# greeting\n\n## Requirements\n\n### Requirement: Hello\nIt SHALL greet.\n\n"
        "#### Scenario: Hello world\n- **WHEN** x\n- **THEN** y\n"
    )
    (root / "tests" / "test_hello.py").write_text(
        'def test_h():\n    """Scenario: Hello world"""\n'
    )
    found = conformance(root, root / "openspec" / "changes" / CHANGE, Scanner(root))
    assert found.table.linked == 0 and found.project_linked
    assert effective("auto", found.table, found.project_linked) == "verified"


def test_an_update_of_the_changed_files_agrees_with_a_full_scan(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(LINKED)
    scanner = Scanner(tmp_path)
    scanner.scan()
    (tmp_path / "tests" / "test_b.py").write_text(LINKED.replace("once", "twice"))
    (tmp_path / "tests" / "test_a.py").unlink()
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "test_c.py").write_text(LINKED)
    changed = ["tests/test_a.py", "tests/test_b.py", "node_modules/test_c.py", "README.md"]
    updated = scanner.update(changed)
    assert scanner.reads == 1 and list(updated) == ["tests/test_b.py"]
    assert updated == Scanner(tmp_path).scan()
