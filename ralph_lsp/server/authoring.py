"""Authoring help in spec files (SPEC §11): document and workspace symbols, completion,
definition, hover and code actions. The answers come from `openspec/authoring/`; this module only
reads the document (the open buffer, else the disk) and converts lines and columns."""

# No `from __future__ import annotations`: pygls reads the handlers' annotations at run time.

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from ralph_lsp.openspec.authoring import assist, fixes, outline, specs
from ralph_lsp.openspec.validation.spec_rules import read_text
from ralph_lsp.server.render import column
from ralph_lsp.server.roots import path_of
from ralph_lsp.server.server import RalphLanguageServer

_KINDS = {
    "section": types.CompletionItemKind.Module,
    "snippet": types.CompletionItemKind.Snippet,
    "requirement": types.CompletionItemKind.Reference,
}


class Doc:
    """One spec file as the editor shows it, with conversions to the client's positions."""

    def __init__(self, ls: RalphLanguageServer, path: Path, text: str) -> None:
        self.ls, self.path, self.text = ls, path, text
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.encoding = ls.workspace.position_encoding

    def pos(self, line: int, index: int, lines: list[str] | None = None) -> types.Position:
        lines = lines or self.lines
        line = min(line, len(lines) - 1)
        return types.Position(line, column(lines[line], index, self.encoding))

    def line_range(self, line: int, end: int | None = None) -> types.Range:
        last = min(max((end or line + 1) - 1, line), len(self.lines) - 1)
        return types.Range(self.pos(line, 0), self.pos(last, len(self.lines[last])))

    def index(self, position: types.Position) -> int:
        """The client's column as an index into the line's text: the first index whose column
        reaches it. One pass over the line, each character's width added to the last: the
        column of every index computed afresh was quadratic in a long line (a completion at
        the end of a 40 KB line took seconds on the event loop)."""
        text = self.lines[min(position.line, len(self.lines) - 1)]
        if self.encoding == types.PositionEncodingKind.Utf32:
            return max(0, min(position.character, len(text)))
        at = 0
        for i, char in enumerate(text):
            if at >= position.character:
                return i
            at += column(char, 1, self.encoding)
        return len(text)


def reader(ls: RalphLanguageServer) -> Callable[[Path], str]:
    def read(path: Path) -> str:
        if ls.docs.is_open(path):
            try:
                return str(ls.workspace.get_text_document(ls.docs.uri_for(path)).source)
            except Exception:  # closed meanwhile: the disk has it
                pass
        return read_text(path)

    return read


def open_spec(ls: RalphLanguageServer, uri: str) -> Doc | None:
    path = path_of(uri)
    if path is None or not specs.is_spec_file(path):
        return None
    try:
        return Doc(ls, path, reader(ls)(path))
    except (OSError, UnicodeError):
        return None


def document_symbols(ls: RalphLanguageServer, uri: str) -> list[types.DocumentSymbol] | None:
    doc = open_spec(ls, uri)
    if doc is None:
        return None
    out = []
    for r in outline.outline(doc.text).requirements:
        children = [
            types.DocumentSymbol(
                name=s.name or "(unnamed scenario)",
                kind=types.SymbolKind.Event,
                range=doc.line_range(s.line, s.end),
                selection_range=doc.line_range(s.line),
            )
            for s in r.scenarios
        ]
        out.append(
            types.DocumentSymbol(
                name=r.name,
                detail=r.delta_key or "",
                kind=types.SymbolKind.Class,
                range=doc.line_range(r.line, r.end),
                selection_range=doc.line_range(r.line),
                children=children,
            )
        )
    return out


def workspace_symbols(ls: RalphLanguageServer, query: str) -> list[types.SymbolInformation]:
    found = specs.workspace_requirements(ls.roots.roots, query, reader(ls))
    return [
        types.SymbolInformation(
            name=f.name,
            kind=types.SymbolKind.Class,
            location=types.Location(
                ls.docs.uri_for(f.file),
                types.Range(types.Position(f.line, 0), types.Position(f.line, 0)),
            ),
            container_name=f.capability,
        )
        for f in found
    ]


def completion(
    ls: RalphLanguageServer, params: types.CompletionParams
) -> types.CompletionList | None:
    doc = open_spec(ls, params.text_document.uri)
    if doc is None:
        return None
    line = min(params.position.line, len(doc.lines) - 1)
    prefix = doc.lines[line][: doc.index(params.position)]
    items = []
    for k, c in enumerate(assist.complete(doc.path, doc.text, line, prefix, reader(ls))):
        edit = types.TextEdit(types.Range(doc.pos(line, 0), doc.pos(line, len(prefix))), c.new_text)
        items.append(
            types.CompletionItem(
                label=c.label,
                kind=_KINDS[c.kind],
                detail=c.detail or None,
                documentation=types.MarkupContent(types.MarkupKind.Markdown, c.documentation)
                if c.documentation
                else None,
                filter_text=c.new_text.split("\n")[0] if c.kind != "snippet" else c.label,
                sort_text=f"{k:04d}",
                text_edit=edit,
                insert_text_format=types.InsertTextFormat.Snippet
                if c.snippet
                else types.InsertTextFormat.PlainText,
            )
        )
    return types.CompletionList(is_incomplete=False, items=items)


def _definition(ls: RalphLanguageServer, uri: str, position: types.Position) -> Any:
    doc = open_spec(ls, uri)
    if doc is None:
        return None, None
    found = assist.definition(doc.path, doc.text, position.line, reader(ls))
    return doc, found


def definition(ls: RalphLanguageServer, params: types.DefinitionParams) -> types.Location | None:
    _, found = _definition(ls, params.text_document.uri, params.position)
    if found is None:
        return None
    _, main, block = found
    at = types.Position(block.line - 1, 0)
    return types.Location(ls.docs.uri_for(main), types.Range(at, at))


def hover(ls: RalphLanguageServer, params: types.HoverParams) -> types.Hover | None:
    doc, found = _definition(ls, params.text_document.uri, params.position)
    if found is None:
        return None
    ref, main, block = found
    root = specs.delta_capability(doc.path)
    text = assist.hover_markdown(main, root[0] if root else main.parent, block)
    rng = types.Range(doc.pos(ref.line, ref.start), doc.pos(ref.line, ref.end))
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text), rng)


def code_actions(
    ls: RalphLanguageServer, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    doc = open_spec(ls, params.text_document.uri)
    if doc is None:
        return None
    first, last = params.range.start.line, params.range.end.line
    for d in params.context.diagnostics:  # a finding's fix, wherever the request's range is
        first, last = min(first, d.range.start.line), max(last, d.range.end.line)
    norm = outline.outline(doc.text).lines  # the reader's lines (no BOM), for columns
    out = []
    for fix in fixes.fixes(doc.path, doc.text, first, last, reader(ls)):
        if params.context.only and not any(fix.kind.startswith(k) for k in params.context.only):
            continue
        edits = [
            types.TextEdit(
                types.Range(doc.pos(e.line, e.start, norm), doc.pos(e.end_line, e.end, norm)),
                e.new_text,
            )
            for e in fix.edits
        ]
        matched = [
            d
            for d in params.context.diagnostics
            if d.code in fix.codes and d.range.start.line in fix.lines
        ]
        out.append(
            types.CodeAction(
                title=fix.title,
                kind=fix.kind,
                diagnostics=matched or None,
                is_preferred=True if matched else None,
                edit=types.WorkspaceEdit(changes={params.text_document.uri: edits}),
            )
        )
    return out


def register(server: RalphLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(params: types.DocumentSymbolParams) -> Any:
        return document_symbols(server, params.text_document.uri)

    @server.feature(types.WORKSPACE_SYMBOL)
    def workspace_symbol(params: types.WorkspaceSymbolParams) -> Any:
        return workspace_symbols(server, params.query)

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["#", " "])
    )
    def complete(params: types.CompletionParams) -> Any:
        return completion(server, params)

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def go_to_definition(params: types.DefinitionParams) -> Any:
        return definition(server, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def show_hover(params: types.HoverParams) -> Any:
        return hover(server, params)

    kinds = [types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite]

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=kinds)
    )
    def code_action(params: types.CodeActionParams) -> Any:
        return code_actions(server, params)
