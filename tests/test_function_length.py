"""Every function in ralph_lsp/ is under 60 lines, or says why it is longer in a `# Long:`
comment right above it (a newcomer reads the reason before the length); every file is under 500
lines, or says why in a `Long:` line of its docstring."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ralph_lsp"
LIMIT = 60
FILE_LIMIT = 500


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
