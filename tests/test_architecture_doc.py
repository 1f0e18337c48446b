"""docs/architecture.md is the codemap: every package of ralph_lsp/ has its paragraph with its
invariant, and every code name in backticks exists (a module, a class, a function, a method or a
file), so the map cannot drift from the code unnoticed."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import ralph_lsp

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "ralph_lsp"
# Paths in the doc may be written from any of these folders.
PATH_BASES = (ROOT, PACKAGE, ROOT / "editor-client", ROOT / "editor-client" / "src")


def _inline_spans(text: str) -> list[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", text)  # fenced blocks are pictures and signatures
    return re.findall(r"`([^`\n]+)`", text)


def _known_names() -> set[str]:
    names: set[str] = set()
    for info in pkgutil.walk_packages(ralph_lsp.__path__, "ralph_lsp."):
        if info.name.endswith(".__main__"):  # running it is its import
            continue
        module = importlib.import_module(info.name)
        dotted = info.name.split(".")[1:]
        names.add(".".join(dotted))
        for attr, value in vars(module).items():
            names.add(".".join([*dotted, attr]))
            if inspect.isclass(value) and value.__module__ == module.__name__:
                for member in vars(value):
                    names.add(".".join([*dotted, attr, member]))
                for member in getattr(value, "__dataclass_fields__", {}):
                    names.add(".".join([*dotted, attr, member]))
    return names


def _is_code_name(span: str) -> bool:
    """A dotted or CamelCase or snake_case identifier, a call, or a path: not prose, a command
    line, a setting (``ralph.…``), a protocol method or a placeholder."""
    if span.startswith(("ralph.", "ralph/", "$/", "window/", "workspace/", "textDocument/")):
        return False
    if re.search(r"[\s<>{}*|=,'\"]", span):
        return False
    body = span.removesuffix("()")
    if body.startswith("."):  # a folder of the user's project (`.ralph/`)
        return False
    if re.search(r"\.(ya?ml|toml|txt|lock|lua)$", body):  # a user's file, e.g. openspec/config.yaml
        return False
    if "/" in body:  # a file of this repository, or a module written as a path
        return bool(re.search(r"\.(py|ts|md|json|sh)$|/$|/\w+\.[A-Za-z_]", body))
    if re.search(r"\.(py|ts|md|json|sh)$", body):
        return True
    if not re.fullmatch(r"[A-Za-z_][\w.]*", body):
        return False
    return "." in body or "_" in body.strip("_") or bool(re.search(r"[a-z][A-Z]|^[A-Z][a-z]", body))


def _resolves(span: str, names: set[str]) -> bool:
    body = span.removesuffix("()")
    if any((base / body).exists() for base in PATH_BASES):
        return True  # a file or folder
    # `server/feed.RunFeed`, `loop/engine.py`: a module written as a path, maybe with a name
    body = re.sub(r"\.py\b", "", body).replace("/", ".")
    return any(n == body or n.endswith("." + body) for n in names)


def test_every_package_has_its_paragraph_and_invariant() -> None:
    text = DOC.read_text()
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    missing = [p for p in packages if f"### `{p}/`" not in text]
    assert missing == []
    for p in packages:
        section = text.split(f"### `{p}/`", 1)[1].split("\n### ", 1)[0]
        assert "Invariant" in section, p


def test_every_code_name_in_backticks_exists() -> None:
    names = _known_names()
    spans = [s for s in _inline_spans(DOC.read_text()) if _is_code_name(s)]
    assert len(spans) > 40  # the map names things; an empty map would pass below
    assert [s for s in spans if not _resolves(s, names)] == []
