"""Every function in ralph_lsp/ is under 60 lines, or says why it is longer in a `# Long:`
comment right above it (a newcomer reads the reason before the length). Every file of ralph_lsp/
and of the extension's TypeScript (editor-client/src/) is at most 450 lines, with no exemption:
a longer one is split by job (issue 45)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ralph_lsp"
CLIENT_SRC = PACKAGE.parent / "editor-client" / "src"
LIMIT = 60
FILE_LIMIT = 450
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


def test_files_are_short() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        length = len(path.read_text().splitlines())
        if length > FILE_LIMIT:
            long.append(f"{rel} ({length} lines)")
    assert long == []


def test_client_files_are_short() -> None:
    files = sorted(CLIENT_SRC.rglob("*.ts"))
    assert files, "no TypeScript file found: the test needs updating"
    long = []
    for path in files:
        length = len(path.read_text().splitlines())
        if length > TS_FILE_LIMIT:
            long.append(f"{path.relative_to(CLIENT_SRC.parent)} ({length} lines)")
    assert long == []
