"""Which files are test files (``ralph.conformance.testGlobs``), and which folders are never
walked.

A glob is matched against a file's path relative to the root, with ``/``: ``*`` and ``?`` stay
within one folder, ``**/`` is any number of folders (none included), ``{a,b}`` either word. All
globs become two compiled patterns (:class:`TestGlobs`): one of the globs that only say a file's
name (``**/test_*.py``), matched against the name alone, and one of the rest, against the path;
so a file costs a match or two whatever their number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_JS = "{js,jsx,mjs,cjs,ts,tsx,mts,cts}"

#: The usual test locations of Python, JavaScript/TypeScript, Go, Rust and Java projects.
DEFAULT_TEST_GLOBS: tuple[str, ...] = (
    "**/test_*.py",
    "**/*_test.py",
    "**/tests/**/*.py",
    "**/test/**/*.py",
    f"**/*.test.{_JS}",
    f"**/*.spec.{_JS}",
    f"**/__tests__/**/*.{_JS}",
    "**/*_test.go",
    "**/tests/**/*.rs",
    "**/src/**/*.rs",
    "**/src/test/**/*.java",
    "**/*Test.java",
    "**/*Tests.java",
)

#: Folders never walked for test files: dependencies, version control, environments, the
#: product's own state, build output.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".ralph",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "build",
        "dist",
        "target",
        "out",
        ".gradle",
        ".next",
        "coverage",
        ".cache",
    }
)
#: Folders never walked for JUnit reports: build folders hold them (target/surefire-reports).
REPORT_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", ".ralph"})


def _braces(body: str) -> str:
    return "(?:" + "|".join(re.escape(part) for part in body.split(",")) + ")"


def glob_regex(glob: str) -> str:
    """The pattern of one glob (see the module's docstring); ``ValueError`` for an empty one or
    an unclosed brace."""
    if not glob.strip():
        raise ValueError("an empty glob")
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "{":
            end = glob.find("}", i)
            if end < 0:
                raise ValueError(f"the glob {glob!r} has an unclosed '{{'")
            out.append(_braces(glob[i + 1 : end]))
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def compile_globs(globs: Sequence[str]) -> re.Pattern[str]:
    """One pattern whose ``fullmatch`` is a relative path that any of ``globs`` matches."""
    return re.compile("|".join(f"(?:{glob_regex(g.lstrip('/'))})" for g in globs) or "(?!)")


class TestGlobs:
    """Whether a relative path is a test file: what :func:`compile_globs` says, in two parts. A
    glob ``**/<name>`` whose name part holds no ``/`` and no ``**`` matches a path exactly when
    it matches the path's last part, so those globs are matched against the name alone (a
    short string, without the backtracking over folders of ``(?:[^/]*/)*``); the others
    against the whole path. ``ValueError`` for a bad glob."""

    __test__ = False  # not a pytest class

    def __init__(self, globs: Sequence[str]) -> None:
        names: list[str] = []
        paths: list[str] = []
        for glob in globs:
            glob = glob.lstrip("/")
            rest = glob[3:] if glob.startswith("**/") else None
            if rest and "/" not in rest and "**" not in rest:
                names.append(rest)
            else:
                paths.append(glob)
        self.name_match = compile_globs(names).fullmatch
        self.path_match = compile_globs(paths).fullmatch

    def fullmatch(self, rel: str) -> bool:
        """Whether ``rel`` (relative, with ``/``) is a test file."""
        return bool(self.name_match(rel[rel.rfind("/") + 1 :]) or self.path_match(rel))
