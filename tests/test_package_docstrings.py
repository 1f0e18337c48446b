"""Every package's ``__init__`` docstring names each of its modules and subpackages as code
(issue 45): a newcomer who opens a package reads what each of its files is for before opening
them, and a module added without a line there fails here instead of going unmentioned.

A module is named by a code span (single or double backticks) that is its name (``run``), its
file (``run.py``), or a path or dotted name ending in it (``loop/run.py``,
``ralph_lsp.loop.run``); a subpackage likewise (``validation``, ``validation/``). The root
package, ``ralph_lsp/__init__.py``, is held to it too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ralph_lsp"
# ``double`` before `single`, so a double-backtick span is read as one span.
SPAN = re.compile(r"``(.+?)``|`([^`]+)`", re.DOTALL)


def _packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts)


def _members(package: Path) -> list[str]:
    """The package's module files (``__main__`` and private ones included) and subpackages."""
    modules = [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
    subpackages = [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(modules + subpackages)


def _named(doc: str) -> set[tuple[str, ...]]:
    """Each code span of the docstring as a dotted path: ``loop/run.py`` is ``("loop", "run")``."""
    out = set()
    for double, single in SPAN.findall(doc):
        span = (double or single).strip().removeprefix("~").removesuffix("/")
        span = re.sub(r"\.py$", "", span)
        if re.fullmatch(r"[\w./]+", span):
            out.add(tuple(re.split(r"[./]", span)))
    return out


def _missing(package: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    named = _named(doc)
    here = (PACKAGE.name, *package.relative_to(PACKAGE).parts)
    missing = []
    for member in _members(package):
        path = (*here, member)
        if not any(0 < len(n) <= len(path) and path[-len(n) :] == n for n in named):
            missing.append(member)
    return missing


def test_the_walk_finds_the_packages_and_their_modules() -> None:
    packages = _packages()
    assert PACKAGE in packages and PACKAGE / "openspec" / "validation" in packages
    assert "settings" in _members(PACKAGE) and "loop" in _members(PACKAGE)
    assert "engine" in _members(PACKAGE / "loop")


def test_a_span_names_a_module_by_name_file_or_path() -> None:
    named = _named("``run`` and `engine.py`, ``loop/queue.py``; `ralph_lsp.loop.ids`, `git/`")
    assert named >= {("run",), ("engine",), ("loop", "queue"), ("ralph_lsp", "loop", "ids")}
    assert ("git",) in named
    assert _named("a :class:`~ralph_lsp.loop.engine.Engine`") == {
        ("ralph_lsp", "loop", "engine", "Engine")
    }


def test_every_package_docstring_names_each_of_its_modules() -> None:
    missing = {}
    for package in _packages():
        gaps = _missing(package)
        if gaps:
            missing[str(package.relative_to(PACKAGE.parent))] = gaps
    assert missing == {}, "modules and subpackages the package docstring does not name:\n" + (
        "\n".join(f"  {pkg}/__init__.py: {', '.join(gaps)}" for pkg, gaps in missing.items())
    )
