"""The ``Scenario: <title>`` texts of a test file, and the test each is in (SPEC §13 "Linked").

A file's :class:`Mention` s are what follows ``Scenario:`` on a line (whitespace collapsed), with
the test that encloses it (:class:`TestRef`): which scenario a mention names is decided later,
against the change's titles (``table.py``), so a file's mentions stay true when the specs change
and the scanner keeps them per file.

- Python is parsed (``ast``): a mention in a test function, a ``Class::method`` (any class with
  ``test*`` methods, as pytest collects unittest's too), or in the comments right above one,
  names that test; the pytest node id is ``tests/test_cli.py::test_shout``. A file that does not
  parse falls back to the nearest preceding ``def test…``.
- JavaScript/TypeScript: the title string of the ``it(…)``/``test(…)`` on the mention's line or
  the nearest before it.
- Go, Rust, Java: the nearest preceding test declaration (``func TestX``, ``#[test] fn x``,
  ``@Test void x``), or the one a comment right above leads into.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from ralph_lsp.conformance.scenarios import collapse

#: What follows ``Scenario:`` is read this far (a title is shorter).
MAX_MENTION_CHARS = 500
_MENTION = re.compile(r"scenario:", re.IGNORECASE)
_JS_TEST = re.compile(r"""\b(?:it|test|specify)(?:\.\w+)*\s*\(\s*(['"`])((?:\\.|(?!\1).)*)\1""")
_GO_TEST = re.compile(r"^\s*func\s+(Test\w*)\s*\(")
_RUST_ATTR = re.compile(r"^\s*#\[(?:[\w:]*::)?(?:test|rstest|test_case)\b")
_RUST_FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")
_JAVA_ANNOTATION = re.compile(
    r"^\s*@(?:org\.junit\.\w+\.)?(?:Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate)\b"
)
_JAVA_METHOD = re.compile(r"\b[\w<>\[\],.?]+\s+(\w+)\s*\(")
_JAVA_PLAIN = re.compile(r"\bvoid\s+(test\w*)\s*\(")
_PY_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test\w*)")
_COMMENT_STARTS = ("//", "/*", "*", "#")
_LEAD_STARTS = ("//", "/*", "*", "#[", "@")
# 0-based line → the name of the test it is in (None: in none)
Finder = Callable[[int], "str | None"]
LANGUAGES = {
    ".py": "python",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    **{f".{e}": "js" for e in ("js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts")},
}


class TestRef(NamedTuple):
    """A test as a link names it: its file (relative, with ``/``), its name in that file
    (``test_x``, ``Class::test_x``, an ``it`` title, ``TestX``, a function or method) and the
    language that says how a JUnit report names it. (Tuples, as :class:`Mention`: a cold scan
    makes one for each mention of thousands of files, and a frozen dataclass is slow to build.)"""

    file: str
    name: str
    language: str

    @property
    def id(self) -> str:
        """``tests/test_cli.py::test_shout`` (pytest's node id for Python)."""
        return f"{self.file}::{self.name}"


class Mention(NamedTuple):
    line: int  # 1-based
    text: str  # what follows `Scenario:`, whitespace collapsed
    test: TestRef | None  # None: outside every test


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:]) if dot >= 0 else None


def mentions(path: str, text: str) -> list[Mention]:
    """Every ``Scenario:`` text of ``text`` (the file ``path``, relative) and its test."""
    if "cenario:" not in text and "CENARIO:" not in text:  # Scenario:, scenario:, SCENARIO:
        return []
    language = language_of(path) or "other"
    if language == "python" and _plain(text):
        return _plain_python_mentions(path, text)
    return mentions_by_lines(path, text, language)


def mentions_by_lines(path: str, text: str, language: str) -> list[Mention]:
    """:func:`mentions` read over ``text.splitlines()``: any text, any language."""
    lines = text.splitlines()
    found = []
    for i in _mention_lines(text, lines):
        line = lines[i]
        for m in _MENTION.finditer(line):
            mention = collapse(line[m.end() : m.end() + MAX_MENTION_CHARS])
            if mention:
                found.append((i, mention))
    if not found:
        return []
    if language == "python":
        finder = _python_finder(text, lines)
    else:
        finder = _decl_finder(lines, _declarations(language, lines))
    out = []
    for i, mention in found:
        name = finder(i)
        test = _tuple(TestRef, (path, name, language)) if name else None
        out.append(_tuple(Mention, (i + 1, mention, test)))
    return out


def _plain_python_mentions(path: str, text: str) -> list[Mention]:
    """:func:`mentions` of a Python file whose text is :func:`_plain`: each mention's line and
    the lines above it cut from the text where needed, so the file is split into lines only
    when the indentation does not say and the parse decides (what a cold scan of thousands
    of files spends most on)."""
    out = []
    parsed: Finder | None = None
    # An ASCII text: its `Scenario:` in any case, as _MENTION finds them, is where its lowered
    # copy has `scenario:` (searches of the str, not a regex of every character); one pass over
    # the lowered copy finds the lines, and a line is a mention's as the other path says.
    lowered = text.lower()
    n, line_no, counted = len(text), 0, 0
    at = lowered.find("cenario:")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = n if end < 0 else end
        line = text[start:end]
        if "cenario:" in line or "CENARIO:" in line:
            line_no += text.count("\n", counted, start)
            counted = start
            name: str | None = None
            looked = False
            hit = lowered.find("scenario:", start, end)
            while hit >= 0:
                after = hit + 9
                hit = lowered.find("scenario:", after, end)
                mention = collapse(text[after : min(end, after + MAX_MENTION_CHARS)])
                if not mention:
                    continue
                if not looked:
                    looked, name = True, _py_by_indent_text(text, start, end)
                    if name is None:
                        parsed = parsed or _python_parsed(text, text.splitlines())
                        name = parsed(line_no)
                test = _tuple(TestRef, (path, name, "python")) if name else None
                out.append(_tuple(Mention, (line_no + 1, mention, test)))
        at = lowered.find("cenario:", end)
    return out


# A cold scan makes these for each mention of a thousand files: tuple's own constructor,
# without the Python-level __new__ of a NamedTuple.
_tuple = tuple.__new__


def _plain(text: str) -> bool:
    """An ASCII text whose lines end only at "\n" (no other break of str.splitlines()): most
    test files. Its lines are ``text.split("\n")``, found by searching the text itself."""
    return text.isascii() and not (
        "\r" in text
        or "\x0b" in text
        or "\x0c" in text
        or "\x1c" in text
        or "\x1d" in text
        or "\x1e" in text
    )


def _mention_lines(text: str, lines: list[str]) -> list[int]:
    """The 0-based lines (of ``lines``, ``text.splitlines()``) holding ``cenario:`` or
    ``CENARIO:``: found by searching a :func:`_plain` text, else line by line."""
    if not _plain(text):
        return [i for i, line in enumerate(lines) if "cenario:" in line or "CENARIO:" in line]
    return sorted(_plain_mention_lines(text))


def _plain_mention_lines(text: str) -> set[int]:
    """The 0-based lines of ``text`` (a :func:`_plain` one) holding ``cenario:`` or
    ``CENARIO:``."""
    found: set[int] = set()
    for needle in ("cenario:", "CENARIO:"):
        pos, line, counted = text.find(needle), 0, 0
        while pos >= 0:
            line += text.count("\n", counted, pos)
            counted = pos
            found.add(line)
            end = text.find("\n", pos)  # the rest of this line is this line's
            pos = -1 if end < 0 else text.find(needle, end)
    return found


# --- Python --------------------------------------------------------------------------------


def _py_tests(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of each test, 0-based; a class's methods as ``C::m``."""
    out: list[tuple[int, int, str]] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("test"):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    out.append(
                        (first - 1, (node.end_lineno or node.lineno) - 1, prefix + node.name)
                    )
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}::")

    visit(tree.body, "")
    return out


_PY_BLOCK = re.compile(r"^[ \t]*(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


def _py_by_indent(lines: list[str], i: int) -> str | None:
    """The test line ``i`` is in, read from the indentation of the lines above it (what a
    parse would say for ordinary code, without parsing): its enclosing classes and the
    outermost enclosing function, which pytest collects when it is ``test*``. A comment right
    above a ``def`` belongs to it. None when the lines do not say (the parse decides)."""
    limit = _indent(lines[i])
    if lines[i].lstrip().startswith("#"):
        j = i + 1
        while j < len(lines) and lines[j].lstrip().startswith(("#", "@")):
            j += 1
        if j < len(lines) and _PY_BLOCK.match(lines[j]) and _indent(lines[j]) >= limit:
            i, limit = j, _indent(lines[j])
    return _enclosing(lines[i], limit, (lines[k] for k in range(i - 1, -1, -1)))


def _py_by_indent_text(text: str, start: int, end: int) -> str | None:
    """:func:`_py_by_indent` of the line ``text[start:end]`` of a :func:`_plain` text."""
    line = text[start:end]
    code = line.lstrip()
    limit = len(line) - len(code)
    if code[:1] == "#":
        at, n = end + 1, len(text)
        below = None
        while at < n:  # the lines below: comments and decorators, then what they lead into
            stop = text.find("\n", at)
            below = text[at : n if stop < 0 else stop]
            if not below.lstrip().startswith(("#", "@")):
                break
            at, below = n if stop < 0 else stop + 1, None
        if below is not None and _PY_BLOCK.match(below) and _indent(below) >= limit:
            line, limit, start = below, _indent(below), at
    return _enclosing(line, limit, _lines_above(text, start))


def _lines_above(text: str, start: int) -> Iterator[str]:
    """The lines above the one starting at ``start`` of a :func:`_plain` text, nearest first."""
    end = start - 1  # the "\n" that ends the line above
    while end >= 0:
        begin = text.rfind("\n", 0, end) + 1
        yield text[begin:end]
        end = begin - 1


def _enclosing(line: str, limit: int, above: Iterable[str]) -> str | None:
    """The test of ``line`` (indented ``limit``) from the lines ``above`` it, nearest first."""
    chain: list[tuple[str, str]] = []
    # a mention on a `def` line is in that test (the regex only where it can match)
    own = _PY_BLOCK.match(line) if "def" in line or "class" in line else None
    if own is not None:
        chain.append((own.group(1), own.group(2)))
    if limit == 0:
        return _named(chain)
    for line in above:
        code = line.lstrip()
        if not code or code[0] == "#" or len(line) - len(code) >= limit:
            continue  # blank, a comment, or inside the block
        m = _PY_BLOCK.match(line)
        chain.append((m.group(1), m.group(2)) if m else ("", ""))
        limit = len(line) - len(code)
        if limit == 0:
            break
    return _named(chain) if limit == 0 else None


def _named(chain: list[tuple[str, str]]) -> str | None:
    """The test of a chain of enclosing blocks (innermost first): classes, then a ``test*``."""
    if len(chain) == 1 and chain[0][0] == "def":  # the usual: a test function at the top
        return chain[0][1] if chain[0][1].startswith("test") else None
    names: list[str] = []
    for kind, name in reversed(chain):
        if kind != "class":
            return "::".join([*names, name]) if kind == "def" and name.startswith("test") else None
        names.append(name)
    return None


def _python_finder(text: str, lines: list[str]) -> Finder:
    """By indentation where it says, else by a parse (``ast``) of the file."""
    parsed: list[Finder] = []

    def find(i: int) -> str | None:
        fast = _py_by_indent(lines, i)
        if fast is not None:
            return fast
        if not parsed:
            parsed.append(_python_parsed(text, lines))
        return parsed[0](i)

    return find


def _python_parsed(text: str, lines: list[str]) -> Finder:
    try:
        tests = _py_tests(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _decl_finder(lines, _py_fallback(lines))
    ranges = []
    for first, last, name in tests:
        inner = _indent(lines[first]) if first < len(lines) else 0
        start = first
        while start > 0 and _leading(lines[start - 1], inner):
            start -= 1  # the comments right above a test are its own
        while last + 1 < len(lines) and _trailing(lines[last + 1], inner):
            last += 1  # and so are the comments ending its body (the parse ends at its code)
        ranges.append((start, last, name))

    def find(i: int) -> str | None:
        inside = [(last - start, name) for start, last, name in ranges if start <= i <= last]
        return min(inside)[1] if inside else None

    return find


def _leading(line: str, indent: int) -> bool:
    return line.lstrip().startswith("#") and _indent(line) <= indent


def _trailing(line: str, indent: int) -> bool:
    return line.lstrip().startswith("#") and _indent(line) > indent


def _py_fallback(lines: list[str]) -> dict[int, str]:
    return {i: m.group(1) for i, line in enumerate(lines) if (m := _PY_DEF.match(line))}


# --- other languages -----------------------------------------------------------------------


def _declarations(language: str, lines: list[str]) -> dict[int, str]:
    """0-based line → the test declared there."""
    if language == "js":
        return {i: m.group(2) for i, line in enumerate(lines) if (m := _JS_TEST.search(line))}
    if language == "go":
        return {i: m.group(1) for i, line in enumerate(lines) if (m := _GO_TEST.match(line))}
    if language in ("rust", "java"):
        return _annotated(language, lines)
    return {}


def _annotated(language: str, lines: list[str]) -> dict[int, str]:
    """Functions (Rust) or methods (Java) under a test attribute or annotation; in Java also a
    JUnit 3 ``void testX()``."""
    attr, decl = (_RUST_ATTR, _RUST_FN) if language == "rust" else (_JAVA_ANNOTATION, _JAVA_METHOD)
    out: dict[int, str] = {}
    pending = False
    for i, line in enumerate(lines):
        if attr.match(line):
            pending = True
            continue
        m = decl.search(line) if pending else None
        if m is not None and not line.lstrip().startswith("@"):
            out[i] = m.group(1)
            pending = False
        elif language == "java" and (plain := _JAVA_PLAIN.search(line)):
            out[i] = plain.group(1)
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _decl_finder(lines: list[str], decls: dict[int, str]) -> Finder:
    ordered = sorted(decls)

    def find(i: int) -> str | None:
        if lines[i].lstrip().startswith(_COMMENT_STARTS) and i not in decls:
            j = i + 1  # a comment right above a test leads into it
            while j < len(lines) and lines[j].lstrip().startswith(_LEAD_STARTS):
                j += 1
            if j in decls and _indent(lines[i]) <= _indent(lines[j]):
                return decls[j]  # (an indented comment is inside the test above)
        k = bisect.bisect_right(ordered, i)
        return decls[ordered[k - 1]] if k else None

    return find
