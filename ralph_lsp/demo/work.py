"""What the demo agent (not an AI) writes for each task of ``examples/hello``'s change
``add-greeting-cli`` and of ``examples/toolbox``'s three changes (``add-slugify``,
``add-title-case``, ``add-word-count``: independent, so a queue can run them side by side), so
that a demo run does the work and the example's verification passes.

The files are fixed text, keyed by task id; nothing is generated. Each test it writes names the
scenario it checks (``Scenario: <title>`` in its docstring, SPEC §13), so that a demo run ends
with every scenario verified. In any other project the demo
agent writes no code (it only checks boxes), and a verified run of it then cannot succeed.
"""

from __future__ import annotations

from pathlib import Path

_CLI_PARSER = '''"""The `hello` command: a greeting for each name."""

import argparse
import sys

from hello import greet


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hello", description="Greet people by name.")
    parser.add_argument("names", nargs="+", metavar="NAME", help="who to greet")
{shout}    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
{body}    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
_SHOUT_FLAG = '    parser.add_argument("--shout", action="store_true", help="greet in capitals")\n'
_PARSE_ONLY = "    del args  # the names are printed by task 1.2\n"
_PRINT = "    for name in args.names:\n        print(greet(name))\n"
_PRINT_SHOUT = (
    "    for name in args.names:\n"
    "        line = greet(name)\n"
    "        print(line.upper() if args.shout else line)\n"
)


def _cli(shout: bool, body: str) -> str:
    return _CLI_PARSER.replace("{shout}", _SHOUT_FLAG if shout else "").replace("{body}", body)


_TESTS = '''"""Unit tests of the `hello` command line (the standard library's unittest)."""

import contextlib
import io
import unittest

from hello.cli import main


def run(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(list(args))
    return out.getvalue()


class HelloCli(unittest.TestCase):
    def test_one_name(self) -> None:
        """Scenario: One name"""
        self.assertEqual(run("Ada"), "Hello, Ada!\\n")

    def test_several_names(self) -> None:
        """Scenario: Several names"""
        self.assertEqual(run("Ada", "Grace"), "Hello, Ada!\\nHello, Grace!\\n")

    def test_shout(self) -> None:
        """Scenario: Shout"""
        self.assertEqual(run("--shout", "Ada"), "HELLO, ADA!\\n")
{more}'''
_NO_NAME_TEST = """
    def test_no_name_exits_2(self) -> None:
        # Scenario: No name
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as exit:
            main([])
        self.assertEqual(exit.exception.code, 2)
"""
_SCRIPT = '\n[project.scripts]\nhello = "hello.cli:main"\n'
_README = """
## Command line

`hello NAME...` prints a greeting for each name, one per line; `hello --shout NAME...` prints
them in capitals. With no name it prints a usage message and exits with code 2.
"""


def _work() -> dict[str, list[tuple[str, str, bool]]]:
    """Task id → files to write: (path, text, append)."""
    return {
        "1.1": [
            (
                "hello/cli.py",
                _cli(False, "    del args  # the names are printed by task 1.2\n"),
                False,
            )
        ],
        "1.2": [("hello/cli.py", _cli(False, _PRINT), False)],
        "1.3": [("pyproject.toml", _SCRIPT, True)],
        "2.1": [("hello/cli.py", _cli(True, _PRINT), False)],
        "2.2": [("hello/cli.py", _cli(True, _PRINT_SHOUT), False)],
        "3.1": [("tests/test_cli.py", _TESTS.replace("{more}", ""), False)],
        "3.2": [("tests/test_cli.py", _TESTS.replace("{more}", _NO_NAME_TEST), False)],
        "3.3": [("README.md", _README, True)],
    }


_TOOLBOX = {  # change → (module, function, its code, a test body, a note)
    "add-slugify": (
        "slug",
        "slugify",
        "import re\n\n\ndef slugify(text: str) -> str:\n"
        '    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")\n',
        'self.assertEqual(slugify("Hello, World!"), "hello-world")',
        "`slugify(text)`: lower case, runs of other characters become one `-`.",
    ),
    "add-title-case": (
        "title",
        "title_case",
        'SMALL = {"a", "an", "and", "of", "the", "to", "in", "on"}\n\n\n'
        "def title_case(text: str) -> str:\n"
        "    words = text.split()\n"
        '    return " ".join(\n'
        "        w.lower() if i and w.lower() in SMALL else w.capitalize()"
        " for i, w in enumerate(words)\n    )\n",
        'self.assertEqual(title_case("the art of war"), "The Art of War")',
        "`title_case(text)`: every word capitalized but short joining words after the first.",
    ),
    "add-word-count": (
        "words",
        "word_count",
        "def word_count(text: str) -> int:\n    return len(text.split())\n",
        'self.assertEqual(word_count("one  two\\nthree"), 3)',
        "`word_count(text)`: the number of runs of non-space characters.",
    ),
}


def _toolbox(change: str) -> dict[str, list[tuple[str, str, bool]]]:
    """Task id → files of one of examples/toolbox's changes (none for another name)."""
    found = next((v for k, v in _TOOLBOX.items() if change == k or change.endswith("-" + k)), None)
    if found is None:
        return {}
    mod, fn, code, check, note = found
    test = (
        f"import unittest\n\nfrom toolbox.{mod} import {fn}\n\n\n"
        f"class Test{fn.title().replace('_', '')}(unittest.TestCase):\n"
        f"    def test_example(self) -> None:\n"
        f'        """Scenario: {mod}/Example"""\n'
        f"        {check}\n"
    )
    return {
        "1.1": [(f"toolbox/{mod}.py", f'"""{note}"""\n\n{code}', False)],
        "1.2": [(f"tests/test_{mod}.py", test, False)],
        "1.3": [(f"docs/{mod}.md", f"# `toolbox.{mod}`\n\n{note}\n", False)],
    }


def applies(root: Path, change_folder: Path) -> bool:
    """Whether ``root`` is (a copy of) examples/hello, whose changes are add-greeting-cli or a
    copy of it, or of examples/toolbox."""
    if change_folder.parent.name != "changes":  # the task file is in the change's folder
        return False
    return (root / "hello" / "__init__.py").is_file() or (root / "toolbox").is_dir()


def files_for(
    task_id: str | None, change: str = "", root: Path | None = None
) -> list[tuple[str, str, bool]]:
    if root is not None and (root / "toolbox").is_dir() and not (root / "hello").is_dir():
        return _toolbox(change).get(task_id or "", [])
    return _work().get(task_id or "", [])


def write(root: Path, task_id: str | None, change: str = "") -> list[str]:
    """Write the files of ``task_id`` (of ``change``); the paths written."""
    written = []
    for rel, text, append in files_for(task_id, change, root):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if append:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if text.strip() in current:
                continue  # already there (a second run of the demo)
            text = current + text
        path.write_text(text, encoding="utf-8")
        written.append(rel)
    return written
