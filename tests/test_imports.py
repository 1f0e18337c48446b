"""The architecture's rules that hold the code, beyond what ``make lint`` checks with
import-linter (the layers, LSP only in ``server/``, the git wrapper private to ``git/``, no
cycles: ``[tool.importlinter]`` in pyproject.toml, run here too so that ``pytest`` alone catches
a broken contract)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ralph_lsp"


def test_the_import_contracts_hold() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout and "KEPT" in done.stdout


def _argv_literals(tree: ast.AST) -> list[str]:
    """The first element of every list or tuple literal: how an argv names its program."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                out.append(first.value)
    return out


def test_only_the_git_package_starts_git() -> None:
    outside = [
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*.py")
        if "git" not in p.relative_to(PACKAGE).parts[:1]
        and "git" in _argv_literals(ast.parse(p.read_text()))
    ]
    assert outside == []


def test_the_watchdog_imports_only_the_standard_library_and_its_package() -> None:
    # It runs as `python -E -S`: no site-packages (psutil comes from a folder it is given).
    # watchdog.py, and tree.py that it signals the agent's tree with
    trees = [ast.parse((PACKAGE / "proc" / m).read_text()) for m in ("watchdog.py", "tree.py")]
    names = set()
    for node in (n for t in trees for n in ast.walk(t)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    foreign = {
        n
        for n in names
        if n.split(".")[0] not in sys.stdlib_module_names
        and not n.startswith(("ralph_lsp.proc", "psutil"))
    }
    assert foreign == set()


def test_the_server_starts_and_finds_live_runs_without_the_engine() -> None:
    """Attach latency (issue 27): a server answers ``initialize`` and follows live runs and queues
    without importing what only starting a run needs (the engine, agent presets, git)."""
    code = (
        "import asyncio, sys, tempfile\n"
        "from pathlib import Path\n"
        "from ralph_lsp.server import create_server\n"
        "server = create_server()\n"
        "root = Path(tempfile.mkdtemp())\n"
        "asyncio.run(server.engine.attach_all([root]))\n"
        "asyncio.run(server.queues.attach_all([root]))\n"
        "heavy = ('ralph_lsp.loop.engine', 'ralph_lsp.loop.queue', 'ralph_lsp.agents',"
        " 'ralph_lsp.git')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_the_servers_own_command_line_builds_no_parser() -> None:
    """``ralph-lsp`` as an editor starts it (no arguments, or ``serve``) is read without
    argparse's parser of every subcommand (about 20 ms of the start before ``initialize``);
    ``serve --help`` still gets the parser. The server is started for real and sent EOF."""
    for argv in ([], ["serve"]):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ralph_lsp", *argv],
            input=b"",
            capture_output=True,
            timeout=60,
            check=False,
        )
        imported = done.stderr.decode()
        assert "ralph_lsp.server.server" in imported, imported[-2000:]
        assert "ralph_lsp.cli.parser" not in imported, argv
    helped = subprocess.run(
        [sys.executable, "-m", "ralph_lsp", "serve", "--help"], capture_output=True, text=True
    )
    assert helped.returncode == 0 and helped.stdout.startswith("usage: ralph-lsp serve")
