"""The port of the CLI's requirement-blocks parser: sections, fences, names, REMOVED, RENAMED."""

from __future__ import annotations

from ralph_lsp.openspec.archive_checks import main_spec_structure_issues
from ralph_lsp.openspec.spec_apply import around_requirements
from ralph_lsp.openspec.validation.blocks import (
    Block,
    extract_requirements_section,
    parse_delta_spec,
)
from ralph_lsp.openspec.validation.blocks import fold_name as fold_requirement_name
from ralph_lsp.openspec.validation.blocks import normalize_name as normalize_requirement_name
from ralph_lsp.openspec.validation.scenario_diff import (
    describe_balance as describe_scenario_balance,
)
from ralph_lsp.openspec.validation.scenario_diff import diff_scenarios as diff_scenario_names
from ralph_lsp.openspec.validation.text import contains_shall_or_must, count_scenarios
from ralph_lsp.openspec.validation.text import fence_mask as build_code_fence_mask
from ralph_lsp.openspec.validation.text import requirement_body as extract_requirement_body

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
    assert [(s.name, s.section, s.line) for s in plan.skipped_headers] == [
        ("Not a requirement", "ADDED Requirements", 12)
    ]
    assert [r.name for r in plan.removed] == ["Old one", "Starred", "Plussed"]
    assert [b.name for b in plan.removed_blocks] == ["Old one"]
    assert [(f.name, t.name) for f, t in plan.renamed] == [("A", "B"), ("C", "D")]
    assert [(u.side, u.name, u.line) for u in plan.unpaired_renames] == [
        ("FROM", "Lonely", 30),
        ("TO", "Stray", 33),
    ]
    assert [(o.name, o.section, o.line) for o in plan.orphans] == [("Orphan", "Notes", 36)]
    presence = plan.presence
    assert (presence["ADDED"], presence["MODIFIED"], presence["REMOVED"], presence["RENAMED"]) == (
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
    before, header_line, preamble, after = around_requirements(spec)
    assert before == "# Title\n\n## Purpose\nP\n\n"
    assert header_line == "## Requirements"
    assert preamble == "Intro"
    assert extract_requirements_section(spec).blocks == [
        Block("### Requirement: One", "One", "### Requirement: One\nA", 9),
        Block("### Requirement: Two", "Two", "### Requirement: Two\nB", 12),
    ]
    assert after == "\n## Other\nz\n"


def test_spec_without_requirements_section_gets_an_empty_one() -> None:
    assert around_requirements("# T\n\nText  \n\n") == (
        "# T\n\nText\n\n",
        "## Requirements",
        "",
        "\n",
    )
    assert around_requirements("")[0] == ""


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
    current = Block("h", "n", "### R\n#### Scenario: a\n#### Scenario: a\n#### b ##", 0)
    incoming = Block("h", "n", "### R\n#### Scenario: a\n#### c\n#### d\n#### e\n#### f", 0)
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
    assert [s.name for s in plan.skipped_headers] == ["Requırement: Dotless"]
    spec = "# T\n\n## Requirementſ\n\n### Requirement: One\nA\n"
    before, header_line, _preamble, _after = around_requirements(spec)
    assert (header_line, extract_requirements_section(spec).blocks) == ("## Requirements", [])
    assert before == "# T\n\n## Requirementſ\n\n### Requirement: One\nA\n\n"


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
