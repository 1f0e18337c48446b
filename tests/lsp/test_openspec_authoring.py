"""Authoring help in spec files (SPEC §11) through a real client: document and workspace
symbols, completion of headers, snippets and main-spec names, definition and hover from a
delta's name to the main spec, and code actions whose result `validate --strict` accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.conftest import Session, StartSession
from tests.lsp.test_openspec_diagnostics import DELTA_OK, delta, do_edit, do_open

MAIN = (
    "# greeting\n\n## Purpose\nGreet people from a terminal, one name or several at once.\n\n"
    "## Requirements\n### Requirement: Shouting\nThe system SHALL shout.\n\n"
    "#### Scenario: Shout\n- **WHEN** x\n- **THEN** y\n\n"
    "### Requirement: Greeting command line\nThe system SHALL greet.\n\n"
    "#### Scenario: One name\n- **WHEN** x\n- **THEN** y\n"
)
WORDS = (
    "# words\n\n## Purpose\nCount the words of a text file, the way wc -w counts them here.\n\n"
    "## Requirements\n### Requirement: Word count\nThe tool SHALL count words.\n\n"
    "#### Scenario: Two\n- **WHEN** a b\n- **THEN** 2\n"
)


def main_spec(root: Path, capability: str = "greeting", text: str = MAIN) -> Path:
    file = root / "openspec" / "specs" / capability / "spec.md"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
    return file


def doc_id(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri)


async def opened(s: Session, root: Path, text: str) -> str:
    file = delta(root)
    file.write_text(text)
    do_open(s.client, file.as_uri(), text)
    return file.as_uri()


async def test_document_symbols_are_the_requirements_and_their_scenarios(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    uri = await opened(s, workspace, DELTA_OK)
    lines = DELTA_OK.split("\n")
    got = await s.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(doc_id(uri))
    )
    assert got is not None
    shape = [
        (
            x.name,
            x.detail,
            x.range.start.line,
            x.range.end.line,
            [(c.name, c.range.start.line, c.range.end.line) for c in x.children or []],
        )
        for x in got  # type: ignore[union-attr]
    ]
    req = lines.index("### Requirement: Shouting")
    assert shape == [
        (
            "Greeting command line",
            "ADDED",
            2,
            15,
            [("One name", 5, 7), ("Several names", 9, 11), ("No name", 13, 15)],
        ),
        ("Shouting", "ADDED", req, req + 5, [("Shout", req + 3, req + 5)]),
    ]
    assert got[1].selection_range.end.character == len("### Requirement: Shouting")  # type: ignore[union-attr]
    # The unsaved buffer counts (the disk still holds DELTA_OK), and a code fence hides what it
    # holds, as it does from the CLI.
    edited = (
        DELTA_OK + "\n### Requirement: Echo\nIt SHALL echo.\n\n```\n### Requirement: Not one\n```\n"
    )
    do_edit(s.client, uri, edited, 2)
    got = await s.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(doc_id(uri))
    )
    assert [x.name for x in got or []] == ["Greeting command line", "Shouting", "Echo"]


async def test_workspace_symbols_are_every_main_spec_requirement_filtered(
    start_session: StartSession, workspace: Path
) -> None:
    greeting, words = main_spec(workspace), main_spec(workspace, "words", WORDS)
    s = await start_session(workspace)

    async def query(q: str) -> list[tuple[str, str, int, str | None]]:
        got = await s.client.workspace_symbol_async(types.WorkspaceSymbolParams(query=q))
        return sorted(
            (x.name, x.location.uri, x.location.range.start.line, x.container_name)
            for x in got or []
        )  # type: ignore[union-attr]

    everything = await query("")
    assert everything == sorted(
        [
            ("Shouting", greeting.as_uri(), 6, "greeting"),
            ("Greeting command line", greeting.as_uri(), 13, "greeting"),
            ("Word count", words.as_uri(), 6, "words"),
        ]
    )
    assert await query("SHOUT") == [("Shouting", greeting.as_uri(), 6, "greeting")]
    assert [n for n, *_ in await query("count")] == ["Word count"]
    assert await query("nothing like it") == []


def labels(result: Any) -> list[str]:
    items = result.items if isinstance(result, types.CompletionList) else result or []
    return [i.label for i in items]


async def complete(s: Session, uri: str, line: int, character: int) -> list[types.CompletionItem]:
    got = await s.client.text_document_completion_async(
        types.CompletionParams(doc_id(uri), types.Position(line, character))
    )
    assert isinstance(got, types.CompletionList)
    return got.items


async def test_completion_offers_delta_sections_and_requirement_and_scenario_snippets(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    text = DELTA_OK + "\n##\n"
    uri = await opened(s, workspace, text)
    line = text.split("\n").index("##")
    items = await complete(s, uri, line, 2)
    assert [i.label for i in items] == [
        "## ADDED Requirements",
        "## MODIFIED Requirements",
        "## REMOVED Requirements",
        "## RENAMED Requirements",
        "### Requirement:",
        "#### Scenario:",
    ]
    req = items[4]
    assert req.insert_text_format == types.InsertTextFormat.Snippet
    assert isinstance(req.text_edit, types.TextEdit)
    assert req.text_edit.range == types.Range(types.Position(line, 0), types.Position(line, 2))
    body = req.text_edit.new_text.split("\n")
    assert body[0].startswith("### Requirement: ") and "SHALL" in body[1]
    assert body[3].startswith("#### Scenario: ")
    assert body[4].startswith("- **WHEN** ") and body[5].startswith("- **THEN** ")
    assert items[0].text_edit.new_text.startswith("## ADDED Requirements\n")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("section", "typed", "want"),
    [
        ("MODIFIED", "### Requirement: ", "### Requirement: Shouting"),
        ("REMOVED", "- ", "- `### Requirement: Shouting`"),
        ("RENAMED", "- FROM: ", "- FROM: `### Requirement: Shouting`"),
    ],
)
async def test_completion_offers_the_main_specs_names_where_a_delta_names_them(
    start_session: StartSession, workspace: Path, section: str, typed: str, want: str
) -> None:
    main_spec(workspace)
    s = await start_session(workspace)
    text = f"## {section} Requirements\n\n{typed}\n"
    uri = await opened(s, workspace, text)
    items = [
        i
        for i in await complete(s, uri, 2, len(typed))
        if i.kind == types.CompletionItemKind.Reference
    ]
    assert sorted(i.label for i in items) == ["Greeting command line", "Shouting"]
    shout = next(i for i in items if i.label == "Shouting")
    assert shout.text_edit.new_text == want  # type: ignore[union-attr]
    assert "The system SHALL shout." in str(shout.documentation)
    # ADDED names new requirements: the main spec's names are not offered there.
    text = "## ADDED Requirements\n\n### Requirement: \n"
    s.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    items = await complete(s, uri, 2, len("### Requirement: "))
    assert [i for i in items if i.kind == types.CompletionItemKind.Reference] == []


async def test_definition_and_hover_lead_from_a_delta_name_to_the_main_spec(
    start_session: StartSession, workspace: Path
) -> None:
    main = main_spec(workspace)
    s = await start_session(workspace)
    text = (
        "## MODIFIED Requirements\n\n### Requirement: Shouting\nThe system SHALL shout louder.\n\n"
        "#### Scenario: Shout\n- **WHEN** x\n- **THEN** y\n\n## RENAMED Requirements\n"
        "- FROM: `### Requirement: Greeting command line`\n- TO: `### Requirement: Greeting`\n"
    )
    uri = await opened(s, workspace, text)
    where = await s.client.text_document_definition_async(
        types.DefinitionParams(doc_id(uri), types.Position(2, 20))
    )
    assert isinstance(where, types.Location)
    assert (where.uri, where.range.start.line) == (main.as_uri(), 6)
    renamed = await s.client.text_document_definition_async(
        types.DefinitionParams(doc_id(uri), types.Position(10, 30))
    )
    assert isinstance(renamed, types.Location) and renamed.range.start.line == 13
    hover = await s.client.text_document_hover_async(
        types.HoverParams(doc_id(uri), types.Position(2, 20))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "The system SHALL shout.\n\n#### Scenario: Shout" in hover.contents.value
    assert "openspec/specs/greeting/spec.md" in hover.contents.value
    assert hover.range == types.Range(types.Position(2, 17), types.Position(2, 25))
    # The TO: name is new; the body is no name at all.
    for line in (11, 3):
        assert (
            await s.client.text_document_hover_async(
                types.HoverParams(doc_id(uri), types.Position(line, 5))
            )
            is None
        )
