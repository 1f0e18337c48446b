"""`validate`'s command line read without argparse (a call is mostly process start, issue 38's
`validate_vs_openspec`): wherever the plain reader answers, it answers as argparse does, and it
leaves every other command line (help, abbreviations, errors) to argparse."""

from __future__ import annotations

import contextlib
import io
import itertools

import pytest

from ralph_lsp.cli.validate_parser import plain_validate_args, validate_only_parser

WORDS = [
    "--all",
    "--changes",
    "--specs",
    "--strict",
    "--json",
    "--type",
    "change",
    "spec",
    "--type=spec",
    "--type=x",
    "my-change",
    "other",
    "--str",
    "-h",
    "--help",
    "--",
    "-",
    "",
    "--version",
]


def _argparse(argv: list[str]) -> dict[str, object] | None:
    """What argparse makes of `ralph-lsp validate ARGV`, or None where it exits (help, error)."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return vars(validate_only_parser().parse_args(["validate", *argv]))
        except SystemExit:
            return None


def _plain(argv: list[str]) -> dict[str, object] | None:
    args = plain_validate_args(argv)
    if args is None:
        return None
    return {name: getattr(args, name) for name in args.__slots__}


def test_the_plain_reader_agrees_with_argparse_wherever_it_answers() -> None:
    answered = 0
    for n in range(4):
        for words in itertools.product(WORDS, repeat=n):
            argv = list(words)
            plain = _plain(argv)
            if plain is not None:
                answered += 1
                assert plain == _argparse(argv), argv
    assert answered > 500  # the usual command lines are read without argparse


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["-h"],
        ["--str"],  # an abbreviation: argparse's to expand
        ["a", "b"],  # two items: argparse's usage error
        ["--type", "x"],  # argparse's "invalid choice"
        ["--type"],
        ["--", "-odd-name"],
        [""],
    ],
)
def test_what_the_plain_reader_leaves_to_argparse(argv: list[str]) -> None:
    assert plain_validate_args(argv) is None


def test_a_plain_command_line() -> None:
    args = plain_validate_args(["my-change", "--strict", "--type", "change", "--json"])
    assert args is not None
    assert (args.item, args.type, args.strict, args.json, args.all) == (
        "my-change",
        "change",
        True,
        True,
        False,
    )
