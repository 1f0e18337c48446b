"""Authoring help for OpenSpec files (SPEC §11), LSP side: document and workspace symbols,
completion, definition and hover of a requirement name, and quick fixes. The decisions are in
`openspec/validation/authoring.py`; this only translates."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ralph_lsp.openspec.validation import authoring
from ralph_lsp.openspec.validation.blocks import Block
from ralph_lsp.server.roots import path_of
from ralph_lsp.server.validation import SOURCE

if TYPE_CHECKING:
    from ralph_lsp.server.host import Host

_SNIPPETS = [
    ("## ADDED Requirements", "## ${1|ADDED,MODIFIED,REMOVED,RENAMED|} Requirements\n\n$0"),
    (
        "### Requirement:",
        "### Requirement: ${1:Name}\nThe system SHALL ${2:do something}.\n\n"
        "#### Scenario: ${3:Name}\n- **WHEN** ${4:condition}\n- **THEN** ${5:outcome}\n$0",
    ),
    (
        "#### Scenario:",
        "#### Scenario: ${1:Name}\n- **WHEN** ${2:condition}\n- **THEN** ${3:outcome}\n$0",
    ),
]


def _line_range(line: int, length: int = 0) -> types.Range:
    return types.Range(types.Position(line, 0), types.Position(line, length))


class Authoring:
    def __init__(self, ls: Host) -> None:
        self.ls = ls

    def _text(self, uri: str) -> tuple[Path, str] | None:
        path = path_of(uri)
        if path is None or not path.name.endswith(".md"):
            return None
        try:
            return path, self.ls.workspace.get_text_document(uri).source
        except Exception:
            return None

    def document_symbols(self, uri: str) -> list[types.DocumentSymbol]:
        found = self._text(uri)
        if found is None:
            return []

        def convert(s: authoring.Symbol) -> types.DocumentSymbol:
            kind = types.SymbolKind.Class if s.kind == "requirement" else types.SymbolKind.Event
            return types.DocumentSymbol(
                name=s.name,
                kind=kind,
                range=_line_range(s.end)
                if s.end < s.line
                else types.Range(types.Position(s.line, 0), types.Position(s.end, 0)),
                selection_range=_line_range(s.line),
                children=[convert(c) for c in s.children],
            )

        return [convert(s) for s in authoring.document_symbols(found[1])]

    def workspace_symbols(self, query: str) -> list[types.WorkspaceSymbol]:
        out = []
        overrides = self.ls.validation.overrides()
        for root in self.ls.roots.roots:
            for capability, file, block in authoring.workspace_requirements(root, overrides):
                if query.lower() in block.name.lower():
                    location = types.Location(file.as_uri(), _line_range(block.line - 1))
                    out.append(
                        types.WorkspaceSymbol(
                            name=block.name,
                            kind=types.SymbolKind.Class,
                            location=location,
                            container_name=capability,
                        )
                    )
        return out

    def completion(self, uri: str, position: types.Position) -> list[types.CompletionItem]:
        found = self._text(uri)
        if found is None:
            return []
        path, text = found
        items = [
            types.CompletionItem(
                label=label,
                kind=types.CompletionItemKind.Snippet,
                insert_text=body,
                insert_text_format=types.InsertTextFormat.Snippet,
            )
            for label, body in _SNIPPETS
        ]
        if authoring.section_at(text, position.line) in ("MODIFIED", "REMOVED", "RENAMED"):
            main = authoring.main_requirements(path, self.ls.validation.overrides())
            for block in main[1] if main else []:
                items.append(
                    types.CompletionItem(
                        label=f"### Requirement: {block.name}",
                        kind=types.CompletionItemKind.Reference,
                        detail="current requirement of the main spec",
                        documentation=block.raw,
                        insert_text=f"### Requirement: {block.name}",
                    )
                )
        return items

    def _named(self, uri: str, position: types.Position) -> tuple[Path, Block] | None:
        found = self._text(uri)
        if found is None:
            return None
        name = authoring.named_requirement(found[1], position.line)
        if name is None:
            return None
        return authoring.find_requirement(found[0], name, self.ls.validation.overrides())

    def definition(self, uri: str, position: types.Position) -> list[types.Location]:
        found = self._named(uri, position)
        if found is None:
            return []
        return [types.Location(found[0].as_uri(), _line_range(found[1].line - 1))]

    def hover(self, uri: str, position: types.Position) -> types.Hover | None:
        found = self._named(uri, position)
        if found is None:
            return None
        text = (
            f"**Current requirement** ({found[0].parent.name})\n\n```markdown\n{found[1].raw}\n```"
        )
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        found = self._text(uri)
        if found is None:
            return []
        path, text = found
        overrides = self.ls.validation.overrides()
        actions = []
        for diag in params.context.diagnostics:
            if diag.source != SOURCE or not isinstance(diag.code, str):
                continue
            for edit in authoring.fixes(diag.code, text, diag.range.start.line, path, overrides):
                change = types.TextEdit(
                    types.Range(types.Position(edit.start, 0), types.Position(edit.end, 0)),
                    edit.text + "\n",
                )
                actions.append(
                    types.CodeAction(
                        title=edit.title,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=types.WorkspaceEdit(changes={uri: [change]}),
                        is_preferred=True,
                    )
                )
        return actions
