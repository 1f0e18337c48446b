"""``ralph-lsp …``: the headless command line (SPEC §7), one module per group of subcommands.

- ``parser``        every subcommand and flag, declared once (``validate_parser`` holds
  ``validate``'s, which ``main`` parses alone; ``v5_flags`` ``run``'s flags of the
  conformance gate, the reviewer, a model per phase and escalation; ``parser_groups`` the
  groups ``diff``/``restore``, ``runs``/``attach``/``stop``/``guide`` and ``review``/``merge``);
- ``run``           ``run``: the engine in this process, its events rendered by ``terminal``;
  ``queue`` ``run A B C`` and ``run --all``, a queue of changes and its summary table;
  ``ending`` a run's or a queue's final line, then ``--on-end`` / ``ralph.onRunEnd``;
- ``plan``          ``plan``: a planning run (SPEC §14), its flags in ``plan_parser``;
- ``verify``        ``verify``: the verification commands, as a run runs them;
- ``validate``      ``validate``: OpenSpec validation as ``openspec validate`` does it;
- ``archive``       ``archive``: a change archived as ``openspec archive`` does (SPEC §11);
- ``conformance``   ``conformance``: a change's scenarios and their tests' last word (SPEC §13);
- ``project``       ``changes``, ``prompt`` and ``history``;
- ``git_commands``  ``diff`` and ``restore``;
- ``merging``       ``review`` and ``merge`` (SPEC §12); ``train`` the merge train for the
  terminal (``merge --all``, ``run … --merge``); ``merge_resolve`` ``merge --resolve``;
- ``run_control``   ``runs``, ``attach``, ``stop``, ``guide``, ``run --detach`` and ``--events``
  (runs in runners, SPEC §9);
- ``signals``       Ctrl-C and ``SIGTERM`` for ``run`` and queues: stop, then kill at once;
- ``flags``         flags read as settings; ``common`` root and change lookup and exit codes;
  ``errors`` the usage error (apart, so ``validate`` loads no workspace); ``jsonout`` the JSON
  writer.

:func:`main` is the ``ralph-lsp`` program (and ``python -m ralph_lsp``).

Invariant: the CLI drives the same engine as the server and holds no run logic of its own; it
imports ``server`` only to serve LSP, and reaches runs of other processes only through
``runner``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's constant, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from ralph_lsp.cli.validate_parser import ValidateArgs

#: command → (module of ralph_lsp.cli, function)
HANDLERS = {
    "changes": ("project", "cmd_changes"),
    "run": ("run", "cmd_run"),
    "plan": ("plan", "cmd_plan"),
    "prompt": ("project", "cmd_prompt"),
    "history": ("project", "cmd_history"),
    "diff": ("git_commands", "cmd_diff"),
    "restore": ("git_commands", "cmd_restore"),
    "verify": ("verify", "cmd_verify"),
    "conformance": ("conformance", "cmd_conformance"),
    "archive": ("archive", "cmd_archive"),
    "runs": ("run_control", "cmd_runs"),
    "attach": ("run_control", "cmd_attach_here"),
    "stop": ("run_control", "cmd_stop"),
    "guide": ("run_control", "cmd_guide"),
    "validate": ("validate", "cmd_validate"),
    "review": ("merging", "cmd_review"),
    "merge": ("merging", "cmd_merge"),
}


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    """The whole command line, or only `validate` for a `validate` command: it then needs
    neither the settings nor the other subcommands (and starts about 14 ms sooner)."""
    if argv[:1] == ["validate"]:
        from ralph_lsp.cli.validate_parser import validate_only_parser

        return validate_only_parser()
    from ralph_lsp.cli.parser import build_parser

    return build_parser()


class _Serve:
    """`ralph-lsp` or `ralph-lsp serve`, as an editor starts the server: read without argparse
    (building the whole parser costs a server's start about 20 ms before `initialize`)."""

    def __init__(self, command: str | None) -> None:
        self.command = command


def _arguments(argv: list[str]) -> argparse.Namespace | ValidateArgs | _Serve:
    """The parsed command line. A `validate` command spelled plainly is read without argparse
    (its import and parser cost about 6 ms of a call that is mostly process start), and so is
    the server's own command line."""
    if not argv or argv == ["serve"]:
        return _Serve(argv[0] if argv else None)
    if argv[:1] == ["validate"]:
        from ralph_lsp.cli.validate_parser import plain_validate_args

        plain = plain_validate_args(argv[1:])
        if plain is not None:
            return plain
    return _parser(argv).parse_args(argv)


def _server_imports() -> Callable[[], None]:
    from ralph_lsp.proc import codecache

    codecache.install()  # pygls's types compiled at their first start only
    from ralph_lsp.server import serve

    codecache.save()
    return serve


def main(argv: list[str] | None = None) -> int:
    """``ralph-lsp``. An unsupported platform (Windows) is refused here, before anything that
    needs POSIX is imported."""
    from ralph_lsp.proc.platforms import unsupported_platform

    reason = unsupported_platform()
    if reason is not None:
        print(f"ralph-lsp: error: {reason}", file=sys.stderr)
        return 2
    from ralph_lsp.bursts import loaded
    from ralph_lsp.cli.errors import CliError, fail, is_terminal

    args = _arguments(sys.argv[1:] if argv is None else argv)
    if args.command in (None, "serve"):
        serve = loaded(_server_imports, freeze=True)
        if args.command is None and is_terminal(sys.stdin):
            # A person typed `ralph-lsp`: say what the silence means (an editor never sees this).
            print(
                "ralph-lsp: serving the Language Server Protocol on stdin/stdout, waiting for an"
                " LSP client (editors start it this way); Ctrl-C quits, `ralph-lsp --help` lists"
                " the commands",
                file=sys.stderr,
            )
        serve()
        return 0
    # Each command's module is imported when it runs: `changes` never loads the engine.
    module, name = HANDLERS[args.command]
    # (__import__ with a fromlist gives the submodule, without importing the importlib package)
    handler = loaded(lambda: getattr(__import__(f"ralph_lsp.cli.{module}", fromlist=[name]), name))
    try:
        return int(handler(args, sys.stdout))
    except CliError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
