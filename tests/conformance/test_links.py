"""Which test a `Scenario: <title>` text names, per language, and how it resolves against the
change's titles (SPEC §13 "Linked")."""

from __future__ import annotations

import ast

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ralph_lsp.conformance.globs import DEFAULT_TEST_GLOBS, TestGlobs, compile_globs
from ralph_lsp.conformance.links import TestRef as Ref
from ralph_lsp.conformance.links import mentions
from ralph_lsp.conformance.scenarios import Scenario, collapse
from ralph_lsp.conformance.table import Titles, resolve_links

PY = '''"""Module docstring. Scenario: Shout once (outside any test: not a link)."""
import pytest


def test_shout():
    """Scenario: Shout   once"""


# Scenario: Empty input
@pytest.mark.parametrize("x", [1])
def test_empty(x):
    pass


class TestTwice:
    def helper(self):
        pass

    def test_twice(self):
        assert True  # Scenario: Shout twice.
'''


def _names(path: str, text: str) -> list[tuple[int, str, str | None]]:
    return [(m.line, m.text, m.test.id if m.test else None) for m in mentions(path, text)]


def test_python_names_the_enclosing_test_by_its_pytest_node_id() -> None:
    assert _names("tests/test_cli.py", PY) == [
        (1, 'Shout once (outside any test: not a link)."""', None),
        (6, 'Shout once"""', "tests/test_cli.py::test_shout"),
        (9, "Empty input", "tests/test_cli.py::test_empty"),
        (20, "Shout twice.", "tests/test_cli.py::TestTwice::test_twice"),
    ]


def test_python_that_does_not_parse_falls_back_to_the_nearest_def() -> None:
    text = "def test_a(:\n    # Scenario: A\n"
    assert _names("t/test_x.py", text) == [(2, "A", "t/test_x.py::test_a")]


def test_javascript_names_the_title_string_of_its_it_or_test() -> None:
    text = (
        "describe('cli', () => {\n"
        "  it('Scenario: Shout once', () => {});\n"
        '  test("shouts twice", () => {\n'
        "    // Scenario: Shout twice\n"
        "  });\n"
        "});\n"
    )
    assert _names("src/cli.test.ts", text) == [
        (2, "Shout once', () => {});", "src/cli.test.ts::Scenario: Shout once"),
        (4, "Shout twice", "src/cli.test.ts::shouts twice"),
    ]


def test_go_rust_and_java_name_the_nearest_test_declaration_or_the_one_a_comment_leads_to() -> None:
    go = (
        "// Scenario: A\nfunc TestA(t *testing.T) {\n}\n"
        "func TestB(t *testing.T) {\n\t// Scenario: B\n}\nfunc TestC(t *testing.T) {}\n"
    )
    assert _names("pkg/x_test.go", go) == [
        (1, "A", "pkg/x_test.go::TestA"),
        (5, "B", "pkg/x_test.go::TestB"),
    ]
    rust = (
        "#[test]\nfn shouts() {\n    // Scenario: A\n}\n/// Scenario: B\n#[test]\nfn twice() {}\n"
    )
    assert _names("tests/cli.rs", rust) == [
        (3, "A", "tests/cli.rs::shouts"),
        (5, "B", "tests/cli.rs::twice"),
    ]
    java = (
        "class CliTest {\n  @Test\n  void shouts() {\n    // Scenario: A\n  }\n"
        "  /** Scenario: B */\n  @Test\n  public void twice() {}\n}\n"
    )
    assert _names("src/test/java/CliTest.java", java) == [
        (4, "A", "src/test/java/CliTest.java::shouts"),
        (6, "B */", "src/test/java/CliTest.java::twice"),
    ]


def _sc(cap: str, title: str) -> Scenario:
    return Scenario(cap, "R", title, f"openspec/changes/c/specs/{cap}/spec.md", 1)


def test_a_title_repeated_across_capabilities_needs_the_capability_and_is_never_guessed() -> None:
    titles = Titles([_sc("cli", "Empty input"), _sc("api", "Empty input"), _sc("cli", "Shout")])
    files = {
        "tests/test_a.py": tuple(
            mentions(
                "tests/test_a.py",
                "def test_a():\n    # Scenario: Empty input\n"
                "def test_b():\n    # Scenario: api/Empty input\n"
                "def test_c():\n    # Scenario: Shouting loudly\n",
            )
        )
    }
    links, warnings = resolve_links(files, titles)
    assert [(link.capability, link.title, link.test.name) for link in links] == [
        ("api", "Empty input", "test_b")
    ]
    assert len(warnings) == 1 and "ambiguous" in warnings[0] and "api, cli" in warnings[0]


def test_a_title_is_matched_whole_never_as_the_start_of_a_longer_word() -> None:
    titles = Titles([_sc("cli", "Shout")])
    assert titles.resolve("Shouting") == (None, None, False)
    assert titles.resolve("Shout.") == ("cli", "Shout", False)
    assert titles.resolve('Shout"""') == ("cli", "Shout", False)


@given(st.lists(st.text(alphabet="ab \t", min_size=1, max_size=8), min_size=1, max_size=4))
def test_whitespace_is_collapsed_on_both_sides(words: list[str]) -> None:
    title = collapse(" ".join(words))
    if not title:
        return
    spaced = "  \t ".join(title.split(" "))
    found = mentions("tests/test_x.py", f"def test_x():\n    # Scenario: {spaced}\n")
    assert Titles([_sc("cli", title)]).resolve(found[0].text)[1] == title


def test_the_default_globs_take_the_usual_test_files_and_nothing_else() -> None:
    pattern = TestGlobs(DEFAULT_TEST_GLOBS)
    taken = [
        "tests/test_cli.py",
        "pkg/cli_test.py",
        "test_top.py",
        "src/cli.test.ts",
        "web/__tests__/x.jsx",
        "pkg/x_test.go",
        "tests/cli.rs",
        "src/lib.rs",
        "src/test/java/a/CliTest.java",
        "app/FooTests.java",
    ]
    assert [p for p in taken if not pattern.fullmatch(p)] == []
    for p in ("src/cli.py", "README.md", "src/cli.ts", "main.go", "docs/test.md"):
        assert not pattern.fullmatch(p), p


_PART = st.sampled_from(["tests", "test", "src", "a", "test_a", "x_test", "__tests__", "**"])
_NAME = st.sampled_from(["test_*.py", "*_test.py", "*.py", "*.{js,ts}", "a?c.rs", "*", "**"])
_GLOB = st.builds(
    lambda lead, parts, name: "/".join([*(["**"] if lead else []), *parts, name]),
    st.booleans(),
    st.lists(_PART, max_size=3),
    _NAME,
)
_SEGMENT = st.sampled_from(["tests", "test", "src", "a", "b", "__tests__", "test_a", "x_test"])
_FILE = st.sampled_from(["test_x.py", "x_test.py", "x.py", "x.js", "y.ts", "abc.rs", "a.md"])


@settings(max_examples=400)
@given(st.lists(_GLOB, min_size=1, max_size=6), st.lists(_SEGMENT, max_size=5), _FILE)
def test_the_globs_split_by_name_say_what_the_one_pattern_says(
    globs: list[str], folders: list[str], name: str
) -> None:
    # The scan matches the `**/<name>` globs against a file's name alone (TestGlobs): for any
    # globs and any path, the answer is the one pattern's of them all.
    rel = "/".join([*folders, name])
    assert TestGlobs(globs).fullmatch(rel) == bool(compile_globs(globs).fullmatch(rel)), rel


def test_a_test_ref_id_is_the_file_and_the_name() -> None:
    assert Ref("tests/test_cli.py", "C::test_x", "python").id == "tests/test_cli.py::C::test_x"


_BLOCKS = st.recursive(
    st.sampled_from(["pass", "x = 1", "# Scenario: M", '"""Scenario: M"""']).map(lambda s: [s]),
    lambda inner: st.tuples(
        st.sampled_from(["def test_a", "def helper", "class TestK", "async def test_b"]),
        st.lists(inner, min_size=1, max_size=3),
    ).map(
        lambda t: [
            t[0] + ("():" if "def" in t[0] else ":"),
            *("    " + line for block in t[1] for line in block),
        ]
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_BLOCKS, min_size=1, max_size=4))
def test_reading_by_indentation_agrees_with_the_parse(blocks: list[list[str]]) -> None:
    from ralph_lsp.conformance.links import _py_by_indent, _python_parsed

    lines = [line for block in blocks for line in block]
    text = "\n".join(lines) + "\n"
    try:
        ast.parse(text)
    except SyntaxError:
        assume(False)  # (a body of only a comment: the parse's fallback is the nearer guess)
    parsed = _python_parsed(text, lines)
    for i, line in enumerate(lines):
        if "Scenario:" in line:
            fast = _py_by_indent(lines, i)
            assert fast is None or fast == parsed(i), (i, text)


_PIECES = st.sampled_from(
    [
        *("Scenario:", "scenario:", "SCENARIO:", "sCeNaRiO:", "cenario:", " Shout once"),
        *("\n", "\r\n", "\r", "\x0c", "\u2028", "é", "    ", "# ", "def test_a():\n", '"""', "x"),
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_mentions_are_found_on_the_lines_str_splitlines_makes(parts: list[str]) -> None:
    """The search over the whole text (an ASCII text broken only at "\\n") finds exactly the
    mentions, on exactly the lines, of a line-by-line search over ``str.splitlines()``, for any
    mix of case, line breaks (\\r, \\f, U+2028) and non-ASCII text."""
    from ralph_lsp.conformance import links

    text = "".join(parts)
    lines = text.splitlines()
    expected = [i for i, line in enumerate(lines) if "cenario:" in line or "CENARIO:" in line]
    assert links._mention_lines(text, lines) == expected


_PY_LINES = st.lists(
    st.tuples(
        st.sampled_from(["", "    ", "        ", "\t"]),
        st.sampled_from(
            [
                *("def test_a():", "def helper():", "class TestK:", "async def test_b():"),
                *("# Scenario: Shout once", '"""Scenario: Shout once"""', "x = 1  # scenario: Two"),
                *("@pytest.mark.slow", "# a note", "", "pass", "def test_c():  # SCENARIO: Three"),
                *("Scenario:", "# Scenario: A # Scenario: B", "return f'scenario: {x}'"),
            ]
        ),
    ).map("".join),
    max_size=30,
)


@settings(max_examples=400, deadline=None)
@given(_PY_LINES, st.booleans())
def test_a_plain_python_file_is_read_as_its_lines_would_be(lines: list[str], ends: bool) -> None:
    """A Python file of ASCII lines broken at "\\n" is read from its text, not split into
    lines (the cold scan's common case): the same mentions, lines and tests as the reading over
    ``str.splitlines()`` that every other file gets, whether or not it parses."""
    from ralph_lsp.conformance.links import mentions_by_lines

    text = "\n".join(lines) + ("\n" if ends else "")
    path = "tests/test_x.py"
    assert mentions(path, text) == mentions_by_lines(path, text, "python"), text
