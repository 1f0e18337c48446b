"""OpenSpec diagnostics (SPEC §11) through a real client: the CLI's message on the line our
parser found, live on edits of an open delta (unsaved), on disk changes of the main spec it
targets, and `ralph.validation.strict` turning warnings into errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.conftest import CHANGE, StartSession, wait_until

DELTA_OK = (
    Path(__file__).resolve().parents[2]
    / "examples"
    / "hello"
    / "openspec"
    / "changes"
    / CHANGE
    / "specs"
    / "greeting"
    / "spec.md"
).read_text()
SCENARIO_AS_H3 = DELTA_OK.replace("#### Scenario: Shout", "### Scenario: Shout")
MISSING_SCENARIO = 'ADDED "Shouting" must include at least one scenario'
SKIPPED = (
    'Header "### Scenario: Shout" in ADDED Requirements is not a "### Requirement:" header and is '
    'ignored by validation. Use "### Requirement: Scenario: Shout" if it should be validated as a '
    "requirement."
)


def delta(root: Path) -> Path:
    return root / "openspec" / "changes" / CHANGE / "specs" / "greeting" / "spec.md"


def found(diags: list[types.Diagnostic]) -> list[tuple[int, str, str | int | None, str]]:
    return sorted((d.range.start.line, d.message, d.code, str(d.source)) for d in diags)


def do_open(client: object, uri: str, text: str) -> None:
    client.text_document_did_open(  # type: ignore[attr-defined]
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text))
    )


def do_edit(client: object, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(  # type: ignore[attr-defined]
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def test_an_open_delta_shows_the_clis_findings_live(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    uri = delta(workspace).as_uri()
    do_open(s.client, uri, SCENARIO_AS_H3)  # the disk still holds the valid delta
    line = SCENARIO_AS_H3.split("\n").index("### Scenario: Shout")
    req = SCENARIO_AS_H3.split("\n").index("### Requirement: Shouting")
    want = [
        (line, SKIPPED, "openspec.delta.skipped-header", "openspec"),
        (req, MISSING_SCENARIO, "openspec.requirement.no-scenario", "openspec"),
    ]
    await wait_until(lambda: found(s.diagnostics(uri)) == sorted(want), what="the delta's findings")
    severities = {d.code: d.severity for d in s.diagnostics(uri)}
    assert severities["openspec.requirement.no-scenario"] == types.DiagnosticSeverity.Error
    assert severities["openspec.delta.skipped-header"] == types.DiagnosticSeverity.Information
    do_edit(s.client, uri, DELTA_OK, 2)  # fixed in the buffer, never saved
    await wait_until(lambda: s.diagnostics(uri) == [], what="the findings to clear")


@pytest.mark.parametrize("watch", ["inotify", "poll"])
async def test_a_main_spec_changed_on_disk_revalidates_the_delta_targeting_it(
    start_session: StartSession, workspace: Path, watch: str
) -> None:
    file = delta(workspace)
    file.write_text(DELTA_OK.replace("## ADDED Requirements", "## MODIFIED Requirements"))
    # poll: where inotify cannot be had, watchfiles watches the tree
    s = await start_session(workspace, env={"RALPH_WATCH": watch})
    uri = file.as_uri()
    # No main spec yet: archive could not apply a MODIFIED (INFO), nothing fails.
    await wait_until(
        lambda: [d.code for d in s.diagnostics(uri)] == ["openspec.archive.would-refuse"],
        what="the archive note",
    )
    main = workspace / "openspec" / "specs" / "greeting" / "spec.md"
    main.parent.mkdir(parents=True, exist_ok=True)
    main.write_text(
        "# greeting\n\n## Purpose\nGreet people from a terminal, one name or several at once.\n\n"
        "## Requirements\n### Requirement: Shouting\nThe system SHALL shout.\n\n"
        "#### Scenario: Shout\n- **WHEN** x\n- **THEN** y\n\n#### Scenario: Whisper\n- **WHEN** a\n"
        "- **THEN** b\n\n### Requirement: Greeting command line\nThe system SHALL greet.\n\n"
        "#### Scenario: One name\n- **WHEN** x\n- **THEN** y\n"
    )
    loss = (
        'MODIFIED "Shouting" omits scenario(s) the current spec still has: "Whisper". The modified '
        "block has 1 scenario; the current spec has 2 scenarios. It adds none. Copy the omitted "
        "scenarios into the MODIFIED block (a MODIFIED requirement replaces the whole block, so "
        "archive refuses to drop them)."
    )
    line = file.read_text().split("\n").index("### Requirement: Shouting")
    await wait_until(
        lambda: [(d.range.start.line, d.message) for d in s.diagnostics(uri)] == [(line, loss)],
        what="the scenario loss on the delta",
    )


async def test_strict_shows_warnings_as_errors(
    start_session: StartSession, workspace: Path
) -> None:
    file = delta(workspace)
    file.write_text(DELTA_OK.replace("The system SHALL print", "The system prints"))
    s = await start_session(workspace, settings={"validation.strict": True})
    uri = file.as_uri()
    errors = [types.DiagnosticSeverity.Error]
    await wait_until(
        lambda: [d.severity for d in s.diagnostics(uri)] == errors, what="the warning as an error"
    )
    [d] = s.diagnostics(uri)
    shall = "should contain SHALL or MUST (RFC 2119 best practice for English specs)"
    assert d.message == f'ADDED "Shouting" {shall}'
    assert d.code == "openspec.requirement.no-shall"
