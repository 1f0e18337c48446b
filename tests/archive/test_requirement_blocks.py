"""The port of the CLI's requirement-blocks parser: sections, fences, names, REMOVED, RENAMED."""

from __future__ import annotations

from ralph_lsp.openspec.archive_checks import main_spec_structure_issues
from ralph_lsp.openspec.requirement_blocks import (
    RenamePair,
    RequirementBlock,
    UnpairedRename,
    build_code_fence_mask,
    contains_shall_or_must,
    count_scenarios,
    describe_scenario_balance,
    diff_scenario_names,
    extract_requirement_body,
    extract_requirements_section,
    fold_requirement_name,
    normalize_requirement_name,
    parse_delta_spec,
)

DELTA = """\ufeff# Delta\r
\r
## ADDED Requirements\r
\r
### Requirement: New thing ###\r
The system SHALL do it.\r
\r
#### Scenario: works\r
- WHEN x\r
- THEN y\r
\r
### Not a requirement\r
\r
```md\r
### Requirement: Fenced example\r
```\r
\r
## Added Requirements\r
### Requirement: Second copy\r
Body MUST.\r
\r
## REMOVED Requirements\r
### Requirement: Old one\r
* `### Requirement: Starred`\r
+ ### Requirement: Plussed\r
\r
## RENAMED Requirements\r
- FROM: `### Requirement: A`\r
- TO: `### Requirement: B`\r
- FROM: `### Requirement: Lonely`\r
- FROM: `### Requirement: C`\r
TO: ### Requirement: D\r
- TO: `### Requirement: Stray`\r
\r
## Notes\r
### Requirement: Orphan\r
"""


def test_delta_sections_merge_case_variants_and_skip_fences() -> None:
    plan = parse_delta_spec(DELTA)
    assert [b.name for b in plan.added] == ["New thing", "Second copy"]
    assert plan.added[0].raw.startswith("### Requirement: New thing ###\nThe system SHALL")
    assert plan.added[0].raw.endswith("```")  # trimmed at the end, fences kept in the block
    assert [(s.header, s.section, s.line) for s in plan.skipped_headers] == [
        ("Not a requirement", "ADDED Requirements", 12)
    ]
    assert plan.removed == ["Old one", "Starred", "Plussed"]
    assert [b.name for b in plan.removed_blocks] == ["Old one"]
    assert plan.renamed == [RenamePair("A", "B"), RenamePair("C", "D")]
    assert plan.unpaired_renames == [
        UnpairedRename("FROM", "Lonely", 30),
        UnpairedRename("TO", "Stray", 33),
    ]
    assert [(o.name, o.section, o.line) for o in plan.orphaned_requirements] == [
        ("Orphan", "Notes", 36)
    ]
    presence = plan.section_presence
    assert (presence.added, presence.modified, presence.removed, presence.renamed) == (
        True,
        False,
        True,
        True,
    )


def test_names_normalise_like_the_cli() -> None:
    assert normalize_requirement_name("  Foo ###  ") == "Foo"
    assert normalize_requirement_name("C#") == "C#"
    assert normalize_requirement_name("X\u00a0##") == "X\u00a0##"  # NBSP does not close
    assert fold_requirement_name("Big   Thing ##") == "big thing"


def test_requirements_section_split_and_rejoin_parts() -> None:
    spec = (
        "# Title\n\n## Purpose\nP\n\n## Requirements\nIntro\n\n"
        "### Requirement: One\nA\n\n### Requirement: Two\nB\n\n## Other\nz\n"
    )
    parts = extract_requirements_section(spec)
    assert parts.before == "# Title\n\n## Purpose\nP\n\n"
    assert parts.header_line == "## Requirements"
    assert parts.preamble == "Intro"
    assert parts.body_blocks == [
        RequirementBlock("### Requirement: One", "One", "### Requirement: One\nA"),
        RequirementBlock("### Requirement: Two", "Two", "### Requirement: Two\nB"),
    ]
    assert parts.after == "\n## Other\nz\n"


def test_spec_without_requirements_section_gets_an_empty_one() -> None:
    parts = extract_requirements_section("# T\n\nText  \n\n")
    assert (parts.before, parts.header_line, parts.preamble, parts.after) == (
        "# T\n\nText\n\n",
        "## Requirements",
        "",
        "\n",
    )
    assert extract_requirements_section("").before == ""


def test_fence_mask_needs_a_long_enough_closing_fence() -> None:
    lines = ["````", "```", "x", "````", "y", "~~~ js", "~~~"]
    assert build_code_fence_mask(lines) == [True, True, True, True, False, True, True]


def test_requirement_text_helpers() -> None:
    body = ["**ID**: 1", "", "The system SHALL", "  work.", "#### Scenario: s", "- WHEN"]
    assert extract_requirement_body(body) == "The system SHALL\nwork."
    assert extract_requirement_body(["**Constraint**: MUST"]) == "**Constraint**: MUST"
    assert contains_shall_or_must("it MUST go") and not contains_shall_or_must("MUSTARD")
    assert count_scenarios(["#### A", "text", "#### B", "", "#### C"]) == 1
    assert count_scenarios(["```", "#### Fenced", "text", "```"]) == 0
    assert count_scenarios(["#### A", "", "```", "#### not a header", "```"]) == 1


def test_scenario_diff_is_multiplicity_aware() -> None:
    current = RequirementBlock("h", "n", "### R\n#### Scenario: a\n#### Scenario: a\n#### b ##")
    incoming = RequirementBlock("h", "n", "### R\n#### Scenario: a\n#### c\n#### d\n#### e\n#### f")
    diff = diff_scenario_names(current, incoming)
    assert diff.missing == ["a", "b"]
    assert diff.added == ["c", "d", "e", "f"]
    assert describe_scenario_balance(diff) == (
        "The modified block has 5 scenarios; the current spec has 3 scenarios. "
        'It adds 4 scenarios not in the current spec: "c", "d", "e" and 1 more.'
    )


def test_headers_fold_case_as_javascript_does_not_as_unicode() -> None:
    # JavaScript's case-insensitive match (no `u` flag) never folds a non-ASCII letter onto an
    # ASCII one, so the CLI reads none of these as `Requirement:`/`Requirements` (Python's
    # Unicode re.IGNORECASE would: dotless ı ~ i, long ſ ~ s, Kelvin K ~ k)
    delta = "## ADDED Requirements\n### Requırement: Dotless\nThe system SHALL x.\n"
    plan = parse_delta_spec(delta)
    assert plan.added == []
    assert [s.header for s in plan.skipped_headers] == ["Requırement: Dotless"]
    spec = "# T\n\n## Requirementſ\n\n### Requirement: One\nA\n"
    parts = extract_requirements_section(spec)
    assert (parts.header_line, parts.body_blocks) == ("## Requirements", [])
    assert parts.before == "# T\n\n## Requirementſ\n\n### Requirement: One\nA\n\n"


def test_main_spec_structure_folds_case_as_javascript_does() -> None:
    spec = (
        "# T\n\n## Purpose\nP\n\n## Requirements\n\n### Requirement: One\nA\n\n"
        "## MODıFIED Requirements\n\n### Requırement: Two\nB\n\n## MODIFIED requirements\n"
    )
    # neither dotless-ı line is a delta or requirement header to the CLI; the ASCII one is
    assert main_spec_structure_issues(spec) == [
        (
            16,
            'Main spec contains delta header "## MODIFIED requirements". Delta headers are only '
            "valid inside openspec/changes/<name>/specs/<capability-path>/spec.md and truncate "
            "the parsed ## Requirements section.",
        )
    ]
