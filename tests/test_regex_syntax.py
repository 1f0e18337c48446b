"""No pattern in the package uses syntax that Python 3.10's `re` refuses.

The package supports Python 3.10 (`requires-python`), whose `re` has no possessive
quantifiers (`*+`, `++`, `?+`, `{m,n}+`: "multiple repeat") and no atomic groups (`(?>…)`:
"unknown extension"); both came in 3.11. The tests run on a newer Python, where such a
pattern compiles and passes, so this scan is what keeps 3.10 working. A maximal run is
written `X*(?!X)`, an optional part taken whenever it is there `(?:X|(?!X))`.

Two scans: every string literal of the package's source (the pieces of a pattern built from
f-strings are literals too), with escapes and character classes blanked out; and every
pattern the package holds once all its modules are imported, parsed for the opcodes."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import ralph_lsp

PACKAGE = Path(ralph_lsp.__file__).parent
_ESCAPE = re.compile(r"\\.", re.DOTALL)
_CLASS = re.compile(r"\[\^?\]?[^\]]*\]")
# a quantifier (`*`, `+`, `?` or a `{m,n}`) with a `+` after it, or an atomic group
# literals that hold such a sequence and are no pattern
NO_PATTERN = {"-*+ "}  # (characters to strip: `authoring/assist.py`)
_NEWER_SYNTAX = re.compile(r"(?:[*+?]|\{[0-9]*,?[0-9]*\})\+|\(\?>")


def _literals(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def newer_syntax(literal: str) -> bool:
    """The literal holds a possessive quantifier or an atomic group, outside any class."""
    return bool(_NEWER_SYNTAX.search(_CLASS.sub("[]", _ESCAPE.sub("e", literal))))


def test_the_scan_finds_what_python_3_10_refuses() -> None:
    for refused in (r"^\s*+x", "(a++)", "`?+", "[ ]{0,4}+", "(?>ab)", r"[\w-]*+"):
        assert newer_syntax(refused), refused
    for accepted in ("[-*+]", r"\*+", "a*(?!a)", "(?:`|(?!`))", r"[?+]\++", "{x}+y"[3:]):
        assert not newer_syntax(accepted), accepted


def test_no_literal_of_the_package_uses_newer_regex_syntax() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, literal in _literals(tree):
            if newer_syntax(literal) and literal not in NO_PATTERN:
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {literal!r}")
    assert not found, "\n".join(found)


def _opcodes(parsed: object) -> set[str]:
    out: set[str] = set()
    for op, arg in parsed:  # type: ignore[attr-defined]
        out.add(str(op))
        for sub in arg if isinstance(arg, (list, tuple)) else ():
            if hasattr(sub, "__iter__") and hasattr(sub, "data"):  # a SubPattern
                out |= _opcodes(sub)
            elif isinstance(sub, (list, tuple)):
                for item in sub:
                    if hasattr(item, "data"):
                        out |= _opcodes(item)
        if hasattr(arg, "data"):
            out |= _opcodes(arg)
    return out


def _held(value: object) -> list[object]:
    """`value`, or the patterns in it when it is a container or a class of the package."""
    if isinstance(value, type) and value.__module__.startswith("ralph_lsp"):
        return [v for item in vars(value).values() for v in _held(item)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    return [value]


def _patterns() -> list[tuple[str, int]]:
    """Every pattern the package's modules hold (module and class attributes, one level of
    containers), compiled or still lazy."""
    from ralph_lsp.openspec.validation.text import LazyPattern

    out = []
    for info in pkgutil.walk_packages(ralph_lsp.__path__, "ralph_lsp."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            for held in _held(value):
                if isinstance(held, re.Pattern) and isinstance(held.pattern, str):
                    out.append((held.pattern, held.flags))
                elif isinstance(held, LazyPattern):
                    out.append((held._pattern, held._flags))
    return out


def test_no_pattern_the_package_holds_uses_newer_regex_syntax() -> None:
    parser = re._parser  # type: ignore[attr-defined]  # (3.11+; the tests run there)
    patterns = _patterns()
    assert len(patterns) > 50  # the scan saw the package's patterns
    for text, flags in patterns:
        ops = _opcodes(parser.parse(text, flags))
        assert not ops & {"POSSESSIVE_REPEAT", "ATOMIC_GROUP"}, text
