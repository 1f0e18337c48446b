"""The CLI's fixed messages (OpenSpec 1.13.2 `core/validation/constants`), word for word."""

from __future__ import annotations

MIN_PURPOSE_LENGTH = 50
MAX_REQUIREMENT_TEXT_LENGTH = 500
MIN_WHY_SECTION_LENGTH = 50
MAX_WHY_SECTION_LENGTH = 1000
MAX_DELTAS_PER_CHANGE = 10
PLACEHOLDER_PREFIX = "TBD - created by archiving change "
PLACEHOLDER_SUFFIX = ". Update Purpose after archive."

REQUIREMENT_EMPTY = "Requirement text cannot be empty"
REQUIREMENT_NO_SCENARIOS = "Requirement must have at least one scenario"
SPEC_PURPOSE_EMPTY = "Purpose section cannot be empty"
SPEC_NO_REQUIREMENTS = "Spec must have at least one requirement"
CHANGE_NO_DELTAS = "Change must have at least one delta"
SKIP_SPECS_CONFLICT = (
    "skip_specs is set in .openspec.yaml but spec files exist under specs/. "
    "Remove skip_specs or delete the delta spec files"
)
SKIP_SPECS_ACCEPTED = (
    "skip_specs is set in .openspec.yaml: change declares no spec-level behavior changes, "
    "zero deltas accepted"
)
SKIP_SPECS_INVALID = (
    "skip_specs is set but .openspec.yaml is not valid change metadata, "
    "so the marker is not honored. Fix the metadata"
)
PURPOSE_TOO_BRIEF = f"Purpose section is too brief (less than {MIN_PURPOSE_LENGTH} characters)"
PURPOSE_IS_PLACEHOLDER = (
    "Purpose section is still a placeholder rather than a Purpose anyone wrote (the sentence "
    "`openspec archive` "
    "writes for a new capability, or a `TBD`/`TODO` marker left in its place). Replace it with "
    "what this "
    "capability is for, editing the main spec directly: a `## Purpose` in a delta is read only "
    "when the "
    "capability is created, so it cannot replace this one."
)
REQUIREMENT_TOO_LONG = (
    f"Requirement text is very long (>{MAX_REQUIREMENT_TEXT_LENGTH} characters). "
    "Consider breaking it down."
)
GUIDE_NO_DELTAS = (
    "No deltas found. Ensure your change has a specs/ directory with capability folders (e.g. "
    "specs/http-server/spec.md) containing .md files that use delta headers (## "
    "ADDED/MODIFIED/REMOVED/RENAMED "
    'Requirements) and that each requirement includes at least one "#### Scenario:" block. If '
    "this change "
    'intentionally modifies no specs (pure refactor, tooling, docs), set "skip_specs: true" in '
    "the change's "
    '.openspec.yaml instead. Tip: run "openspec change show <change-id> --json --deltas-only" '
    "to inspect parsed deltas."
)
GUIDE_MISSING_SPEC_SECTIONS = (
    'Missing required sections. Expected headers: "## Purpose" and "## Requirements". '
    "Example:\n## Purpose\n"
    "[brief purpose]\n\n## Requirements\n### Requirement: Clear requirement statement\nUsers "
    "SHALL ...\n\n"
    "#### Scenario: Descriptive name\n- **WHEN** ...\n- **THEN** ..."
)
GUIDE_MISSING_CHANGE_SECTIONS = (
    'Missing required sections. Expected headers: "## Why" and "## What Changes". '
    "Ensure deltas are documented in specs/ using delta headers."
)
GUIDE_SCENARIO_FORMAT = (
    "Scenarios must use level-4 headers. Convert bullet lists into:\n#### Scenario: Short name\n"
    "- **WHEN** ...\n- **THEN** ...\n- **AND** ..."
)
CHANGE_WHY_TOO_SHORT = f"Why section must be at least {MIN_WHY_SECTION_LENGTH} characters"
CHANGE_WHY_TOO_LONG = f"Why section should not exceed {MAX_WHY_SECTION_LENGTH} characters"
CHANGE_WHAT_EMPTY = "What Changes section cannot be empty"
CHANGE_TOO_MANY_DELTAS = f"Consider splitting changes with more than {MAX_DELTAS_PER_CHANGE} deltas"
DELTA_DESCRIPTION_TOO_BRIEF = "Delta description is too brief"
DELTA_MISSING_REQUIREMENTS = "Delta should include requirements"


def missing_shall(prefix: str, name: str, *, guidance: bool) -> str:
    from ralph_lsp.openspec.validation.text import contains_shall_or_must

    base = f"{prefix} {'should' if guidance else 'must'} contain SHALL or MUST"
    suffix = " (RFC 2119 best practice for English specs)" if guidance else ""
    if contains_shall_or_must(name):
        return (
            f"{base} in the requirement body, not only in the header. Move the SHALL/MUST "
            "statement to the line "
            f'immediately after the "### Requirement: ..." header.{suffix}'
        )
    return f"{base}{suffix}"
