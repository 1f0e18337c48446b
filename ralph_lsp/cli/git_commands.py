"""``ralph-lsp diff`` and ``ralph-lsp restore`` (SPEC §7, §8)."""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import TextIO

from ralph_lsp.cli.common import CliError, root_of
from ralph_lsp.git.refs import CheckpointError
from ralph_lsp.settings import Settings


def cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
    from ralph_lsp.loop.review import iteration_diff, write_patch

    root = _root(args.root)
    color = out.isatty() and not os.environ.get("NO_COLOR")
    try:
        fd: int | None = out.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        fd = None  # not a real file: the patch goes through Python
    try:
        d = iteration_diff(
            root,
            args.change,
            args.run,
            args.iteration,
            color=color,
            with_patch=fd is None,
            cap=None,  # the whole patch: the CLI streams it
        )
    except CheckpointError as exc:
        raise _usage(exc) from exc
    print(
        f"# {args.change} run {d.run_id} iteration {d.n}: {d.before.name} → {d.after.name}"
        f" ({len(d.files)} file(s) changed)",
        file=sys.stderr,
    )
    out.flush()
    if fd is None:
        out.write(d.patch)
    else:
        write_patch(root, d, fd, color=color)
    out.flush()
    return 0


def cmd_restore(args: argparse.Namespace, out: TextIO) -> int:
    from ralph_lsp.loop.review import restore_iteration

    root = _root(args.root)
    if args.iteration is None and args.checkpoint is None:
        raise _usage("restore: say which iteration (--iteration N) or --checkpoint REF")
    try:
        run, result = restore_iteration(
            root, args.change, args.run, args.iteration, args.checkpoint
        )
    except (CheckpointError, OSError) as exc:
        raise _usage(exc) from exc
    what = f"iteration {args.iteration} of run {run}" if args.checkpoint is None else "checkpoint"
    print(
        f"restored the work tree's files to {what} ({result.restored.name}):"
        f" {len(result.written)} written, {len(result.removed)} removed",
        file=out,
    )
    for path, why in result.skipped:
        print(f"  left alone: {path} ({why})", file=out)
    print(f"the state before is checkpoint {result.undo.name}; to undo:", file=out)
    print(f"  ralph-lsp restore {args.change} --checkpoint {result.undo.name}", file=out)
    return 0


def check_run(root: Path, settings: Settings) -> None:
    """A run the settings make impossible (git, budget, sandbox: ``loop/preconditions.py``) is
    a usage error before it starts (exit 2), also before a runner of its own is spawned."""
    import asyncio

    from ralph_lsp.loop.preconditions import refusal

    reason = asyncio.run(refusal(root, settings))
    if reason is not None:
        raise _usage(reason)


def _root(arg: str | None) -> Path:
    return root_of(arg)


def _usage(exc: object) -> Exception:
    return CliError(str(exc))
