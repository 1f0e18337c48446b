"""The authoring domain (`openspec/authoring/`) on its own: where a delta's main spec is, the
outline the CLI's reader sees (fences, CRLF), and what completion offers where."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.openspec.authoring.assist import complete
from ralph_lsp.openspec.authoring.fixes import fixes
from ralph_lsp.openspec.authoring.outline import outline, refs
from ralph_lsp.openspec.authoring.specs import is_spec_file, main_spec_of

ROOT = Path("/p")


def test_a_delta_targets_the_main_spec_of_its_capability_nested_or_not() -> None:
    d = ROOT / "openspec/changes/c1/specs/auth/login/spec.md"
    assert main_spec_of(d) == ROOT / "openspec/specs/auth/login/spec.md"
    archived = ROOT / "openspec/changes/archive/2026-01-01-c1/specs/auth/spec.md"
    assert main_spec_of(archived) == ROOT / "openspec/specs/auth/spec.md"
    assert main_spec_of(ROOT / "openspec/specs/auth/spec.md") is None
    assert main_spec_of(ROOT / "openspec/changes/c1/proposal.md") is None
    assert is_spec_file(ROOT / "openspec/specs/auth/spec.md") and is_spec_file(d)
    assert not is_spec_file(ROOT / "docs/specs/spec.md")


def test_the_outline_ignores_fenced_headers_and_reads_crlf() -> None:
    text = (
        "## MODIFIED Requirements\r\n\r\n### Requirement: Login\r\nIt SHALL log in.\r\n\r\n"
        "#### Scenario: Ok\r\n- **WHEN** a\r\n- **THEN** b\r\n\r\n```\r\n### Requirement: Fake\r\n"
        "#### Scenario: Fake\r\n```\r\n\r\n## REMOVED Requirements\r\n- `### Requirement: Old`\r\n"
    )
    o = outline(text)
    assert [(r.name, r.line, r.end, r.delta_key) for r in o.requirements] == [
        ("Login", 2, 13, "MODIFIED")  # the fence is part of its block, as for the CLI
    ]
    assert [(s.name, s.line, s.end) for s in o.requirements[0].scenarios] == [("Ok", 5, 13)]
    assert [(r.name, r.line, r.key, r.start) for r in refs(o)] == [
        ("Login", 2, "MODIFIED", 17),
        ("Old", 15, "REMOVED", 20),
    ]


def test_completion_offers_names_only_where_a_delta_names_the_main_spec(tmp_path: Path) -> None:
    main = tmp_path / "openspec/specs/auth/spec.md"
    main.parent.mkdir(parents=True)
    main.write_text("## Purpose\nx\n\n## Requirements\n### Requirement: Login\nIt SHALL.\n")
    d = tmp_path / "openspec/changes/c/specs/auth/spec.md"
    text = "## ADDED Requirements\n\n## RENAMED Requirements\n- TO: x\n"
    added = complete(d, text, 1, "")
    assert [c.kind for c in added] == ["section"] * 4 + ["snippet"] * 2
    renamed = [(c.label, c.new_text) for c in complete(d, text, 3, "- FR")]
    assert renamed == [("Login", "- FROM: `### Requirement: Login`")]
    assert complete(d, text, 3, "- TO: ") == []  # the new name is the author's
    # A main spec has no delta sections to offer, and no main spec of its own to name.
    assert [c.label for c in complete(main, "", 0, "#")] == ["### Requirement:", "#### Scenario:"]


def test_no_fix_is_offered_for_a_valid_requirement() -> None:
    text = (
        "## ADDED Requirements\n### Requirement: A\nIt SHALL a.\n\n#### Scenario: s\n- **WHEN** a\n"
    )
    assert fixes(ROOT / "openspec/changes/c/specs/x/spec.md", text, 0, 10) == []
