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
from ralph_lsp.server.root_set import path_of
from ralph_lsp.server.server import RalphLanguageServer
from ralph_lsp.server.session import Session

_KINDS = {
    "section": types.CompletionItemKind.Module,
    "snippet": types.CompletionItemKind.Snippet,
    "requirement": types.CompletionItemKind.Reference,
}


class Doc:
    """One spec file as the editor shows it, with conversions to the client's positions."""

    def __init__(self, session: Session, path: Path, text: str) -> None:
        self.session, self.path, self.text = session, path, text
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.encoding = session.workspace.position_encoding

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


def reader(session: Session) -> Callable[[Path], str]:
    def read(path: Path) -> str:
        if session.docs.is_open(path):
            try:
                return str(session.workspace.get_text_document(session.docs.uri_for(path)).source)
            except Exception:  # closed meanwhile: the disk has it
                pass
        return read_text(path)

    return read


def open_spec(session: Session, uri: str) -> Doc | None:
    path = path_of(uri)
    if path is None or not specs.is_spec_file(path):
        return None
    try:
        return Doc(session, path, reader(session)(path))
    except (OSError, UnicodeError):
        return None


def document_symbols(session: Session, uri: str) -> list[types.DocumentSymbol] | None:
    doc = open_spec(session, uri)
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


def workspace_symbols(session: Session, query: str) -> list[types.SymbolInformation]:
    found = specs.workspace_requirements(session.roots.roots, query, reader(session))
    return [
        types.SymbolInformation(
            name=f.name,
            kind=types.SymbolKind.Class,
            location=types.Location(
                session.docs.uri_for(f.file),
                types.Range(types.Position(f.line, 0), types.Position(f.line, 0)),
            ),
            container_name=f.capability,
        )
        for f in found
    ]


def completion(session: Session, params: types.CompletionParams) -> types.CompletionList | None:
    doc = open_spec(session, params.text_document.uri)
    if doc is None:
        return None
    line = min(params.position.line, len(doc.lines) - 1)
    prefix = doc.lines[line][: doc.index(params.position)]
    items = []
    for k, c in enumerate(assist.complete(doc.path, doc.text, line, prefix, reader(session))):
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


def _definition(session: Session, uri: str, position: types.Position) -> Any:
    doc = open_spec(session, uri)
    if doc is None:
        return None, None
    found = assist.definition(doc.path, doc.text, position.line, reader(session))
    return doc, found


def definition(session: Session, params: types.DefinitionParams) -> types.Location | None:
    _, found = _definition(session, params.text_document.uri, params.position)
    if found is None:
        return None
    _, main, block = found
    at = types.Position(block.line - 1, 0)
    return types.Location(session.docs.uri_for(main), types.Range(at, at))


def hover(session: Session, params: types.HoverParams) -> types.Hover | None:
    doc, found = _definition(session, params.text_document.uri, params.position)
    if found is None:
        return None
    ref, main, block = found
    root = specs.delta_capability(doc.path)
    text = assist.hover_markdown(main, root[0] if root else main.parent, block)
    rng = types.Range(doc.pos(ref.line, ref.start), doc.pos(ref.line, ref.end))
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text), rng)


def code_actions(session: Session, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    doc = open_spec(session, params.text_document.uri)
    if doc is None:
        return None
    first, last = params.range.start.line, params.range.end.line
    for d in params.context.diagnostics:  # a finding's fix, wherever the request's range is
        first, last = min(first, d.range.start.line), max(last, d.range.end.line)
    norm = outline.outline(doc.text).lines  # the reader's lines (no BOM), for columns
    out = []
    for fix in fixes.fixes(doc.path, doc.text, first, last, reader(session)):
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
    session = server.session

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(params: types.DocumentSymbolParams) -> Any:
        return document_symbols(session, params.text_document.uri)

    @server.feature(types.WORKSPACE_SYMBOL)
    def workspace_symbol(params: types.WorkspaceSymbolParams) -> Any:
        return workspace_symbols(session, params.query)

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["#", " "])
    )
    def complete(params: types.CompletionParams) -> Any:
        return completion(session, params)

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def go_to_definition(params: types.DefinitionParams) -> Any:
        return definition(session, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def show_hover(params: types.HoverParams) -> Any:
        return hover(session, params)

    kinds = [types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite]

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=kinds)
    )
    def code_action(params: types.CodeActionParams) -> Any:
        return code_actions(session, params)
