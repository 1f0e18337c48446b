"""``ralph-lsp validate``'s arguments, apart from ``parser`` so that the command parses them
without importing the settings and building every other subcommand (one ``validate`` call is
mostly process start: SPEC §11's bench compares it with ``openspec validate``)."""

from __future__ import annotations

import argparse

from ralph_lsp import __version__


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
    p = argparse.ArgumentParser(prog="ralph-lsp")  # its usage line as the whole parser's:
    p.add_argument("--version", action="version", version=f"ralph-lsp {__version__}")
    add_validate_parser(p.add_subparsers(dest="command", metavar="COMMAND"))
    return p
