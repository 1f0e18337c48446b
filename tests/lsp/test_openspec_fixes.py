"""Code actions for the common errors of a delta (SPEC §11) through a real client: each fixture
has exactly one rule failing; the action the server offers for that finding, applied, leaves a
change that the validator accepts with `--strict`, and the squiggle goes away."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from ralph_lsp.openspec.validation.change_rules import validate_change
from tests.lsp.conftest import CHANGE, StartSession, wait_until
from tests.lsp.test_openspec_authoring import MAIN, main_spec
from tests.lsp.test_openspec_diagnostics import SCENARIO_AS_H3, delta, do_edit, do_open

SHALL_IN_HEADER = (
    "## ADDED Requirements\n\n### Requirement: The system SHALL whisper\n\n"
    "#### Scenario: Whisper\n- **WHEN** the user runs `hello --whisper Ada`\n"
    "- **THEN** it prints `hello, ada`\n"
)
SHALL_ONLY_IN_HEADER_WITH_BODY = SHALL_IN_HEADER.replace(
    "whisper\n\n####", "whisper\nWhispering is quiet.\n\n####"
)
MISSING_TO = "## RENAMED Requirements\n\n- FROM: `### Requirement: Shouting`\n"
EMPTY_MODIFIED = "## MODIFIED Requirements\n\n### Requirement: Shouting\n"
DROPS_A_SCENARIO = (
    "## MODIFIED Requirements\n\n### Requirement: Shouting\nThe system SHALL shout louder.\n\n"
    "#### Scenario: Shout\n- **WHEN** x\n- **THEN** y\n"
)
TWO_SCENARIOS = MAIN.replace(
    "- **THEN** y\n\n### Requirement: Greeting",
    "- **THEN** y\n\n#### Scenario: Whisper\n- **WHEN** a\n- **THEN** b\n\n"
    "### Requirement: Greeting",
)
CASES = {
    "scenario-under-h3": (SCENARIO_AS_H3, "openspec.delta.skipped-header", "####"),
    "shall-in-header": (SHALL_IN_HEADER, "openspec.requirement.no-text", "SHALL/MUST"),
    "shall-not-in-body": (
        SHALL_ONLY_IN_HEADER_WITH_BODY,
        "openspec.requirement.no-shall",
        "SHALL/MUST",
    ),
    "missing-to": (MISSING_TO, "openspec.renamed.unpaired", "TO:"),
    "empty-modified": (EMPTY_MODIFIED, "openspec.requirement.no-text", "Copy"),
    "scenario-loss": (DROPS_A_SCENARIO, "openspec.modified.scenario-loss", "omitted scenarios"),
}


def apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def at(p: types.Position) -> int:
        return offsets[p.line] + p.character

    for e in sorted(edits, key=lambda e: at(e.range.start), reverse=True):
        text = text[: at(e.range.start)] + e.new_text + text[at(e.range.end) :]
    return text


def failing(change: Path) -> list[str]:
    report = validate_change(change, strict=True)
    return sorted({i.code for i in report.issues if i.level != "INFO" or "skipped" in i.code})


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_quick_fix_leaves_a_change_that_validates_strictly(
    start_session: StartSession, workspace: Path, case: str
) -> None:
    text, code, title = CASES[case]
    main_spec(workspace, text=TWO_SCENARIOS if case == "scenario-loss" else MAIN)
    file, change = delta(workspace), workspace / "openspec" / "changes" / CHANGE
    file.write_text(text)
    assert code in failing(change)  # the fixture fails that rule ...
    s = await start_session(workspace)
    uri = file.as_uri()
    do_open(s.client, uri, text)
    diags = await wait_until(
        lambda: [d for d in s.diagnostics(uri) if d.code == code], what=f"the {code} finding"
    )
    finding = diags[0]
    actions = await s.client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            finding.range,
            types.CodeActionContext(diagnostics=[finding]),
        )
    )
    fixes = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.kind == "quickfix"]
    assert len(fixes) == 1, [a.title for a in actions or []]
    fix = fixes[0]
    assert title in fix.title and list(fix.diagnostics or []) == [finding] and fix.is_preferred
    assert fix.edit is not None and fix.edit.changes is not None
    fixed = apply(text, fix.edit.changes[uri])
    file.write_text(fixed)
    assert failing(change) == []  # ... and the fixed one passes --strict
    do_edit(s.client, uri, fixed, 2)
    await wait_until(
        lambda: (
            not [
                d
                for d in s.diagnostics(uri)
                if d.severity != types.DiagnosticSeverity.Information or d.code == code
            ]
        ),
        what="the squiggle to go",
    )


async def test_a_modified_requirement_can_be_reset_to_the_main_specs_text(
    start_session: StartSession, workspace: Path
) -> None:
    main_spec(workspace)
    text = (
        "## MODIFIED Requirements\n\n### Requirement: Shouting\nThe system SHALL whisper.\n\n"
        "#### Scenario: Shout\n- **WHEN** x\n- **THEN** a whisper\n"
    )
    file = delta(workspace)
    file.write_text(text)
    s = await start_session(workspace)
    uri = file.as_uri()
    do_open(s.client, uri, text)
    at = types.Range(types.Position(2, 20), types.Position(2, 20))
    actions = await s.client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri), at, types.CodeActionContext(diagnostics=[])
        )
    )
    refactors = [
        a for a in actions or [] if isinstance(a, types.CodeAction) and a.kind == "refactor.rewrite"
    ]
    assert [a.title for a in refactors] == ["Replace with the main spec's current requirement"]
    assert refactors[0].edit is not None and refactors[0].edit.changes is not None
    fixed = apply(text, refactors[0].edit.changes[uri])
    assert fixed == (
        "## MODIFIED Requirements\n\n### Requirement: Shouting\nThe system SHALL shout.\n\n"
        "#### Scenario: Shout\n- **WHEN** x\n- **THEN** y\n"
    )
    only = await s.client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            at,
            types.CodeActionContext(diagnostics=[], only=["quickfix"]),
        )
    )
    assert only is not None and len(only) == 0
