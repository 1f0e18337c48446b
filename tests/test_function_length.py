"""Every function in ralph_lsp/ is under 60 lines, or says why it is longer in a `# Long:`
comment right above it (a newcomer reads the reason before the length)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ralph_lsp"
LIMIT = 60


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
