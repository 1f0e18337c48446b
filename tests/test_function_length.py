"""Every function in ralph_lsp/ is under 60 lines, or says why it is longer in a `# Long:`
comment right above it (a newcomer reads the reason before the length); every file is under 500
lines, or says why in a `Long:` line of its docstring. The extension's TypeScript files
(editor-client/src/) are under 450 lines each, with no exemption: a longer one is split by job."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ralph_lsp"
CLIENT_SRC = PACKAGE.parent / "editor-client" / "src"
LIMIT = 60
FILE_LIMIT = 500
TS_FILE_LIMIT = 450


def test_long_functions_say_why() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first >= 2 else ""
            if length > LIMIT and not above.startswith("# Long:"):
                rel = path.relative_to(PACKAGE.parent)
                unexplained.append(f"{rel}:{node.lineno} {node.name} ({length} lines)")
    assert unexplained == []


def test_long_files_say_why() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        length = len(text.splitlines())
        doc = ast.get_docstring(ast.parse(text)) or ""
        if length > FILE_LIMIT and not any(line.startswith("Long:") for line in doc.splitlines()):
            unexplained.append(f"{path.relative_to(PACKAGE.parent)} ({length} lines)")
    assert unexplained == []


def test_client_files_are_short() -> None:
    files = sorted(CLIENT_SRC.rglob("*.ts"))
    assert files, "no TypeScript file found: the test needs updating"
    long = []
    for path in files:
        length = len(path.read_text().splitlines())
        if length > TS_FILE_LIMIT:
            long.append(f"{path.relative_to(CLIENT_SRC.parent)} ({length} lines)")
    assert long == []
