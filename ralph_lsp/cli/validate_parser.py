"""``ralph-lsp validate``'s arguments, apart from ``parser`` so that the command parses them
without importing the settings and building every other subcommand (one ``validate`` call is
mostly process start: SPEC §11's bench compares it with ``openspec validate``)."""

from __future__ import annotations

from ralph_lsp import __version__

TYPE_CHECKING = False  # typing's constant, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    import argparse

_FLAGS = ("--all", "--changes", "--specs", "--strict", "--json")
_TYPES = ("change", "spec")


def add_validate_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "validate",
        help="validate OpenSpec changes and main specs as `openspec validate` does (same"
        " messages, --json shape and exit codes)",
        description="Validate an OpenSpec change or main spec exactly as `openspec validate`"
        " 1.13.2 does. Exit 0 when every item is valid, 1 otherwise.",
    )
    sp.add_argument("item", metavar="ITEM", nargs="?", help="a change or a main spec id")
    sp.add_argument("--all", action="store_true", help="every active change and main spec")
    sp.add_argument("--changes", action="store_true", help="every active change")
    sp.add_argument("--specs", action="store_true", help="every main spec")
    sp.add_argument("--type", choices=("change", "spec"), help="what ITEM is, when ambiguous")
    sp.add_argument("--strict", action="store_true", help="warnings fail, too")
    sp.add_argument(
        "--json", action="store_true", help="print the `openspec validate --json` object"
    )


def validate_only_parser() -> argparse.ArgumentParser:
    """``ralph-lsp`` knowing only ``validate``: what ``main`` parses a ``validate`` command with."""
    import argparse

    p = argparse.ArgumentParser(prog="ralph-lsp")  # its usage line as the whole parser's:
    p.add_argument("--version", action="version", version=f"ralph-lsp {__version__}")
    add_validate_parser(p.add_subparsers(dest="command", metavar="COMMAND"))
    return p


class ValidateArgs:
    """The namespace `validate`'s parser gives, for a command line read without argparse."""

    __slots__ = ("all", "changes", "command", "item", "json", "specs", "strict", "type")

    def __init__(self) -> None:
        self.command = "validate"
        self.item: str | None = None
        self.type: str | None = None
        self.all = self.changes = self.specs = self.strict = self.json = False

    def __repr__(self) -> str:
        return f"ValidateArgs({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"


def plain_validate_args(argv: list[str]) -> ValidateArgs | None:
    """``validate``'s arguments (after the word ``validate``) when each is spelled in full: the
    flags, ``--type change|spec`` (or ``--type=…``) and at most one ITEM not starting with
    ``-``. None for anything else (``--help``, an abbreviation, ``--``, a usage error), which
    argparse then reads with its own messages. Where this answers, argparse gives the same
    values (``tests/cli/test_validate_args.py``); it spares a call argparse's import and
    parser, about 6 ms of a command that is mostly process start."""
    args = ValidateArgs()
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _FLAGS:
            setattr(args, word[2:], True)
        elif word == "--type" and i + 1 < len(argv) and argv[i + 1] in _TYPES:
            args.type = argv[i + 1]
            i += 1
        elif word.startswith("--type=") and word[7:] in _TYPES:
            args.type = word[7:]
        elif word[:1] in ("", "-") or args.item is not None:
            return None
        else:
            args.item = word
        i += 1
    return args
