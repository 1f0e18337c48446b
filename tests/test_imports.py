"""The import rules of docs/architecture.md: the domain knows nothing of LSP, and the engine is
the top of the domain."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ralph_lsp"
LSP = ("pygls", "lsprotocol", "ralph_lsp.server")
BELOW_ENGINE = ("tasks", "tasks_fast", "workspace", "settings", "agents", "policy", "prompt",
                "verify", "history", "iteration", "process", "watchdog", "gitcli", "checkpoints",
                "restore", "isolation", "rungit")  # fmt: skip


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_the_domain_imports_nothing_of_lsp() -> None:
    wrong = {
        module(p): sorted(i for i in imports(p) if i.startswith(LSP))
        for p in PACKAGE.rglob("*.py")
        if "server" not in p.relative_to(PACKAGE).parts and p.name != "cli.py"
    }
    assert {m: i for m, i in wrong.items() if i} == {}


def test_nothing_below_the_engine_imports_it_or_the_cli() -> None:
    wrong = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(PACKAGE).with_suffix("").parts
        if parts[0] in BELOW_ENGINE:
            bad = {i for i in imports(p) if i in ("ralph_lsp.loop.engine", "ralph_lsp.cli.main")}
            if bad:
                wrong[module(p)] = sorted(bad)
    assert wrong == {}
