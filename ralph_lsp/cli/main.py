"""``ralph-lsp``: the headless command line (SPEC §7) and the entry point of the server.

The CLI drives the same engine as the language server and renders its events to a terminal:
a live status line on a TTY, plain lines otherwise. The last line of standard output of
``run`` is always ``<state>: <reason>``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import sys
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _encode_str
from pathlib import Path
from typing import Any, NoReturn, TextIO

from ralph_lsp import __version__
from ralph_lsp.cli import git_commands as cli_git
from ralph_lsp.cli import runs as cli_runs
from ralph_lsp.loop.policy import RunState
from ralph_lsp.openspec.tasks import read_tasks_text
from ralph_lsp.openspec.tasks_fast import summarize_tasks
from ralph_lsp.openspec.workspace import (
    Change,
    UnknownChangeError,
    change_json,
    find_root,
    list_changes,
)
from ralph_lsp.settings import (
    ISOLATIONS,
    PRESETS,
    SCOPES,
    VERIFY_WHEN,
    Settings,
    check_setting,
    settings_from_dict,
)

EXIT_CODES: dict[str, int] = {
    RunState.SUCCEEDED: 0,
    RunState.FAILED: 1,
    RunState.STUCK: 3,
    RunState.EXHAUSTED: 4,
    RunState.STOPPED: 5,
    RunState.INTERRUPTED: 6,
}


class CliError(Exception):
    """A user error: one line on stderr, exit code 2."""


def _root(arg: str | None) -> Path:
    start = Path(arg) if arg else Path.cwd()
    if not start.exists():
        raise CliError(f"{start} does not exist")
    root = find_root(start)
    if root is None:
        raise CliError(
            f"no OpenSpec project at or above {start.resolve()}"
            " (looked for a folder holding openspec/changes/); pass --root DIR"
        )
    return root


def _change(root: Path, name: str) -> Change:
    known = list_changes(root)
    if name not in known:
        raise CliError(str(UnknownChangeError(name, known)))
    return Change(root, name)


def _bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


# -- JSON output ---------------------------------------------------------------------------
class _Unsupported(Exception):
    pass


def dumps_indented(value: Any) -> str:
    """``json.dumps(value, indent=2)``, byte for byte, in one piece and about twice as fast.

    The standard library has no C encoder for indented output; this one covers what the
    commands print (dicts with string keys, lists, strings, numbers, booleans, null) and hands
    anything else to ``json.dumps``. One write: ``json.dump`` would stream ~150 small writes
    per change. Kept because ``make bench`` shows it matters: with ``json.dumps`` the 10,000-change
    listing took 0.107 of ``openspec list`` (target 0.1) against 0.064 with this encoder.
    """
    out: list[str] = []
    try:
        _encode(value, out, "\n")
    except (_Unsupported, RecursionError):
        return json.dumps(value, indent=2)
    return "".join(out)


def _true_false(value: bool) -> str:
    return "true" if value else "false"


def _null(_value: None) -> str:
    return "null"


# Exact types only (a subclass takes the isinstance path below, as json.dumps treats it).
_SCALARS: dict[type, Callable[[Any], str]] = {
    str: _encode_str,
    int: int.__repr__,
    bool: _true_false,
    type(None): _null,
}


def _encode(value: Any, out: list[str], indent: str) -> None:
    scalar = _SCALARS.get(type(value))
    if scalar is not None:
        out.append(scalar(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = indent + "  "
        sep = "{" + inner
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unsupported
            scalar = _SCALARS.get(type(item))
            if scalar is not None:
                out.append(sep + _encode_str(key) + ": " + scalar(item))
            else:
                out.append(sep + _encode_str(key) + ": ")
                _encode(item, out, inner)
            sep = "," + inner
        out.append(indent + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = indent + "  "
        sep = "[" + inner
        for item in value:
            out.append(sep)
            sep = "," + inner
            _encode(item, out, inner)
        out.append(indent + "]")
    elif isinstance(value, str):
        out.append(_encode_str(value))
    elif isinstance(value, bool):
        out.append(_true_false(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float) and math.isfinite(value):
        out.append(float.__repr__(value))
    else:
        raise _Unsupported


# -- changes -------------------------------------------------------------------------------
def cmd_changes(args: argparse.Namespace, out: TextIO) -> int:
    root = _root(args.root)
    items = []
    for name in list_changes(root):
        change = Change(root, name)
        try:
            text = read_tasks_text(change.tasks_path)
        except OSError as exc:
            print(f"warning: {change.tasks_path}: {exc.strerror or exc}", file=sys.stderr)
            text = None
        # Counts and stories only: several times faster than a full parse_tasks per change.
        items.append((change, summarize_tasks(text or "")))
    if args.json:
        out.write(dumps_indented({"changes": [change_json(c, d, None) for c, d in items]}))
        out.write("\n")
        return 0
    if not items:
        print(f"no active changes in {root / 'openspec' / 'changes'}", file=out)
        return 0
    width = max(len(c.name) for c, _ in items)
    print(f"{'CHANGE':<{width}}  {'PROGRESS':<22}  TASKS", file=out)
    for c, d in items:
        tasks = "no tasks" if d.total == 0 else f"{d.completed}/{d.total}"
        if d.total and d.completed == d.total:
            tasks += "  ✓ complete"
        print(f"{c.name:<{width}}  {_bar(d.completed, d.total)}  {tasks}", file=out)
    return 0


# -- prompt --------------------------------------------------------------------------------
def cmd_prompt(args: argparse.Namespace, out: TextIO) -> int:
    from ralph_lsp.loop import verify
    from ralph_lsp.loop.prompt import build_prompt

    root = _root(args.root)
    change = _change(root, args.change)
    settings = _settings_from_args(args)
    doc = change.read_doc()
    try:
        commands = verify.commands(settings.verify_commands, root)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    # Where the commands came from, beside the prompt (stdout stays the prompt, byte for byte).
    for c in commands:
        print(f"verification: {c.line} ({c.source})", file=sys.stderr)
    if not commands:
        print("verification: none set or defined by the project", file=sys.stderr)
    out.write(
        build_prompt(
            change,
            doc,
            scope=settings.iteration_scope,
            verify_commands=[c.line for c in commands],
            guidance=args.guidance or [],
            start_story=args.story,
        )
    )
    return 0


# -- verify --------------------------------------------------------------------------------
def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio

    root = _root(args.root)
    change = _change(root, args.change)
    settings = _settings_from_args(args)
    return asyncio.run(_verify(change, settings, out))


async def _verify(change: Change, settings: Settings, out: TextIO) -> int:
    """Runs the verification commands as a run would; exit 0 when all pass, 1 when one fails,
    2 when there is nothing to run."""
    import asyncio
    import os
    import signal

    from ralph_lsp.loop import verify
    from ralph_lsp.loop.iteration import bounded

    try:
        commands = verify.commands(settings.verify_commands, change.root)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if not commands:
        raise CliError(
            f"no verification command: none is set (--verify) and {change.root} defines none"
            " (a Makefile test target, package.json scripts.test, Python tests, Cargo, Go)"
        )
    for c in commands:
        print(f"verification: {c.line} ({c.source})", file=out)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    env = {**os.environ, **settings.env}

    def show(lines: list[str], _err: bool) -> None:
        out.write("\n".join(lines) + "\n")
        out.flush()

    runner = verify.Runner(
        change.root,
        env,
        bounded(settings.verify_timeout_seconds) or 0.0,
        stop,
        show,
        bounded(settings.stop_grace_seconds) or 0.0,
    )
    results = await runner.run(commands)
    failed = next((r for r in results if not r.passed), None)
    if failed is not None:
        print(f"failed: {failed.describe()}", file=out)
        return 1
    if len(results) < len(commands):
        print("stopped: verification was stopped", file=out)
        return 5
    print(f"passed: {verify.summary(commands)}", file=out)
    return 0


# -- history -------------------------------------------------------------------------------
def cmd_history(args: argparse.Namespace, out: TextIO) -> int:
    from ralph_lsp.loop.history import load_records, with_file_uris

    root = _root(args.root)
    known = list_changes(root)
    records = [with_file_uris(root, r) for r in load_records(root, args.change)]
    if args.change not in known and not records:
        raise CliError(str(UnknownChangeError(args.change, known)))
    if args.json:
        json.dump({"runs": records}, out, indent=2)
        out.write("\n")
        return 0
    if not records:
        print(f"no runs of {args.change} yet", file=out)
        return 0
    for r in records:
        its = r.get("iterations") or []
        cost = sum(i.get("costUsd") or 0 for i in its)
        print(
            f"{r['runId']}  {r.get('state') or '?':<9}  {r.get('startedAt')} → "
            f"{r.get('endedAt') or '(running)'}  {len(its)} iteration(s)"
            + (f"  ${cost:.4f}" if cost else ""),
            file=out,
        )
        print(f"    {r.get('reason')}", file=out)
    return 0


# -- run -----------------------------------------------------------------------------------
def _settings_from_args(args: argparse.Namespace) -> Settings:
    import shlex

    raw: dict[str, Any] = {}
    if getattr(args, "agent", None):
        raw["agent"] = args.agent
    if getattr(args, "agent_command", None):
        try:
            argv = shlex.split(args.agent_command)
        except ValueError as exc:
            raise CliError(f"--agent-command: {exc}") from exc
        if not argv:
            raise CliError("--agent-command is empty")
        raw["agentCommand"] = argv
        raw.setdefault("agent", "custom")
    if getattr(args, "agent_args", None) is not None:
        try:
            raw["agentArgs"] = shlex.split(args.agent_args)
        except ValueError as exc:
            raise CliError(f"--agent-args: {exc}") from exc
    for attr, key in _FLAG_SETTINGS:
        value = getattr(args, attr, None)
        if value is not None:
            raw[key] = _checked(attr, key, value)
    if getattr(args, "verify", None):
        raw["verifyCommands"] = args.verify
    if getattr(args, "allow_tool", None):
        raw["allowedTools"] = args.allow_tool
    if getattr(args, "no_checkpoints", False):
        raw["checkpoints"] = False
    env: dict[str, str] = {}
    for item in getattr(args, "env", None) or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CliError(f"--env expects NAME=VALUE, got {item!r}")
        env[name] = value
    if env:
        raw["env"] = env
    settings, warnings = settings_from_dict(raw)
    if warnings:  # every flag was checked above: a safety net that names the setting
        raise CliError(warnings[0])
    return settings


# `run` flags that set a setting: (argparse attribute, setting). The flag is the attribute with
# dashes (`max_iterations` → `--max-iterations`).
_FLAG_SETTINGS = (
    ("max_iterations", "maxIterations"),
    ("max_cost", "maxCostUsd"),
    ("stuck_after", "stuckAfter"),
    ("scope", "iterationScope"),
    ("iteration_timeout", "iterationTimeoutSeconds"),
    ("stop_grace", "stopGraceSeconds"),
    ("finish_grace", "finishGraceSeconds"),
    ("isolation", "isolation"),
    ("verify_when", "verifyWhen"),
    ("verify_timeout", "verifyTimeoutSeconds"),
)


def _checked(attr: str, key: str, value: Any) -> Any:
    """A flag's value, checked as its setting is; a usage error names the flag."""
    try:
        check_setting(key, value)
    except ValueError as exc:
        flag = "--" + attr.replace("_", "-")
        expected = str(exc).removesuffix(", or null")  # null is for settings, not flags
        raise CliError(f"{flag}: expected {expected}, got {value!r}") from None
    return value


_COLOURS = {  # the status line's colour by state, on a terminal
    "running": "\x1b[36m",
    "succeeded": "\x1b[32m",
    "stuck": "\x1b[33m",
    "exhausted": "\x1b[33m",
    "failed": "\x1b[31m",
    "stopped": "\x1b[35m",
}


def _status_text(st: Any, elapsed: bool = True) -> str:
    """``[####....] 3/8 tasks · iteration 2/20 · running · 1m05s · $0.1234``."""
    from datetime import datetime, timezone

    doing = str(st.state)
    if st.phase == "waiting" and st.waiting:
        doing = "waiting for the network" if st.waiting.get("kind") == "network" else "rate limited"
    elif st.phase == "verifying":
        doing = "verifying"
    try:
        started = datetime.fromisoformat(str(st.started_at).replace("Z", "+00:00"))
        seconds = max(0, int((datetime.now(timezone.utc) - started).total_seconds()))
    except ValueError:
        seconds = 0
    text = (
        f"{_bar(st.completed, st.total)} {st.completed}/{st.total} tasks"
        f" · iteration {st.iteration}/{st.max_iterations} · {doing}"
    )
    if elapsed:
        text += f" · {seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f" · {seconds}s"
    if st.cost_usd:
        text += f" · ${st.cost_usd:.4f}"
    return text


class _Renderer:
    """Engine events → a terminal: log lines scroll, a status line stays at the bottom.

    When standard output is closed (``ralph-lsp run … | head``), ``on_closed`` is called once
    and nothing more is written: the run is stopped quietly, with no traceback.
    """

    def __init__(self, out: TextIO, on_closed: Callable[[], None] = lambda: None) -> None:
        self.out = out
        self.tty = out.isatty()
        self.status_line = ""
        self.closed = False
        self._on_closed = on_closed
        self._last: Any = None

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in (errno.EPIPE, errno.EBADF, None):
                raise
            self._close()

    def _close(self) -> None:
        self.closed = True
        # Python flushes stdout again at exit: point it at /dev/null so that cannot fail.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.out.fileno())
            os.close(devnull)
        self._on_closed()

    def _redraw(self, text: str) -> None:
        """``text`` (whole lines, or nothing) above the status line."""
        clear = "\r\x1b[2K" if self.tty and self.status_line else ""
        self._write(clear + text + (self.status_line if self.tty else ""))

    def line(self, text: str) -> None:
        self._redraw(text + "\n")

    def status(self, st: Any) -> None:
        from ralph_lsp.loop.engine import RunStatus

        assert isinstance(st, RunStatus)
        self._last = st
        text = _status_text(st, elapsed=self.tty)  # plain lines: only when something changed
        if self.tty:
            self.status_line = self._fit(text, st.state)
            self._redraw("")
        elif text != self.status_line:
            self.status_line = text
            self._write(f"[ralph] {text}\n")

    def tick(self) -> None:
        """Redraw the status line (its elapsed time) on a terminal."""
        if self.tty and self._last is not None and self.status_line:
            self.status(self._last)

    def _fit(self, text: str, state: str) -> str:
        """The status line cut to the terminal's width (a wrapped line leaves stale copies
        behind), coloured unless NO_COLOR is set."""
        try:
            width = os.get_terminal_size(self.out.fileno()).columns
        except (OSError, ValueError):
            width = 80
        if len(text) > width - 1:
            text = text[: max(0, width - 2)] + "…"
        if os.environ.get("NO_COLOR") or not text:
            return text
        return f"{_COLOURS.get(state, '')}{text}\x1b[0m"

    def done(self, final: str) -> None:
        """Clear the status line and print the final ``<state>: <reason>`` line, once."""
        clear = "\r\x1b[2K" if self.tty and self.status_line else ""
        self.status_line = ""
        self._write(clear + final + "\n")


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio  # only `run` needs it: `changes` and the others start faster without

    root = _root(args.root)
    change = _change(root, args.change)
    settings = _settings_from_args(args)
    _preflight(settings, root)
    cli_git.check_run(root, settings)
    if args.detach:
        return cli_runs.cmd_run_detached(
            root, change.name, settings, args.guidance or [], args.story, out
        )
    sink = cli_runs.events_sink(out) if args.events else None
    return asyncio.run(_run(change, settings, args.guidance or [], out, args.story, sink))


def _preflight(settings: Settings, root: Path) -> None:
    """Before any run starts: the agent program must exist and be executable (a usage error,
    with no run and no record, when it does not)."""
    import os
    import sys

    from ralph_lsp.agents import build_invocation
    from ralph_lsp.proc.process import AgentStartError, resolve_program

    try:
        argv = build_invocation(
            settings.agent,
            list(settings.agent_command) if settings.agent_command else None,
            list(settings.agent_args),
            "",
            root / "prompt.md",
            python=sys.executable,
        ).argv
        env_path = settings.env.get("PATH", os.environ.get("PATH"))
        resolve_program(argv[0], env_path, root)
    except (ValueError, AgentStartError) as exc:
        raise CliError(str(exc)) from None


async def _run(
    change: Change,
    settings: Settings,
    guidance: list[str],
    out: TextIO,
    story: str | None = None,
    sink: Callable[[Any], None] | None = None,
) -> int:
    import asyncio
    import signal

    from ralph_lsp.loop.engine import EngineError

    stopping: list[asyncio.Task[None]] = []

    def stop_quietly() -> None:  # standard output was closed: stop as Ctrl-C does, silently
        if not stopping:
            stopping.append(loop.create_task(engine.shutdown("standard output was closed")))

    renderer = _Renderer(out, stop_quietly)
    # Hosted like a detached runner's run, so `ralph-lsp stop/guide/attach` reach it too.
    host = cli_runs.foreground_host(change, settings, guidance, story, renderer, sink)
    engine = host.engine
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal(signame: str) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            renderer.line(f"{signame}: stopping the run (again to kill at once)")
            stopping.append(loop.create_task(engine.shutdown()))
        else:
            engine.shutdown_now()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig.name)
    ticker = loop.create_task(_tick(renderer)) if renderer.tty else None
    try:
        try:
            await host.start()
        except EngineError as exc:  # e.g. another process runs this change: no run started
            raise CliError(str(exc)) from None
        status = await host.wait()
    finally:
        if ticker is not None:
            ticker.cancel()
        engine.shutdown_now()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    if sink is None:
        renderer.done(f"{status.state}: {status.reason}")
    return EXIT_CODES.get(status.state, 1)


async def _tick(renderer: _Renderer) -> None:
    import asyncio

    while True:
        await asyncio.sleep(1.0)
        renderer.tick()


# -- parser --------------------------------------------------------------------------------
# Long: a declarative table of every subcommand and flag, read top to bottom like --help.
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ralph-lsp",
        description=(
            "Run a Ralph loop over an OpenSpec change: spawn a coding agent again and again,"
            " each time fresh, until every task in the change's tasks.md is checked."
            " With no command (or `serve`), speak the Language Server Protocol on stdio."
        ),
        epilog=(
            "exit codes of `run`: 0 succeeded, 1 failed, 3 stuck, 4 exhausted, 5 stopped,"
            " 6 interrupted; 2 for a usage error in any command"
        ),
    )
    p.add_argument("--version", action="version", version=f"ralph-lsp {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("serve", help="serve LSP on stdio (the default)")

    def with_root(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--root",
            metavar="DIR",
            help="a folder in the OpenSpec project (default: the current folder; its"
            " ancestors are searched for openspec/changes/)",
        )

    sp = sub.add_parser("changes", help="list the active changes with their task progress")
    with_root(sp)
    sp.add_argument("--json", action="store_true", help="print the ralph.changes object")

    sp = sub.add_parser("run", help="run the loop over CHANGE until its tasks are checked")
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--agent", choices=PRESETS, help="agent preset (default: claude)")
    sp.add_argument(
        "--agent-command",
        metavar="CMD",
        help="the agent's command line, split like a shell would but never run by one;"
        " may hold {prompt} or {promptFile} (without either the prompt goes to stdin)",
    )
    sp.add_argument(
        "--agent-args",
        metavar="ARGS",
        help="extra arguments of the claude preset, split like a shell would"
        " (default: '--permission-mode acceptEdits')",
    )
    sp.add_argument("--max-iterations", type=int, metavar="N", help="default 20")
    sp.add_argument(
        "--max-cost", type=float, metavar="USD", help="stop when reported cost reaches this"
    )
    sp.add_argument(
        "--stuck-after", type=int, metavar="N", help="iterations without progress (default 3)"
    )
    sp.add_argument("--scope", choices=SCOPES, help="iteration scope (default story)")
    sp.add_argument(
        "--iteration-timeout", type=float, metavar="S", help="end an iteration after S seconds"
    )
    sp.add_argument(
        "--stop-grace",
        type=float,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL on stop (default 5)",
    )
    sp.add_argument(
        "--verify-when",
        choices=VERIFY_WHEN,
        help="when verification runs: once every task is checked (final, the default), also"
        " after every iteration that checked a task (each), or never (off)",
    )
    sp.add_argument(
        "--verify-timeout",
        type=float,
        metavar="S",
        help="stop a verification command after S seconds (default 900)",
    )
    sp.add_argument(
        "--finish-grace",
        type=float,
        metavar="S",
        help="once every task is checked, seconds the agent gets to exit by itself before it"
        " is stopped (default 60)",
    )
    sp.add_argument(
        "--guidance",
        action="append",
        metavar="TEXT",
        help="a directive for the first iteration's prompt (repeatable)",
    )
    sp.add_argument(
        "--story",
        metavar="ID",
        help="start with this story (its id, e.g. 2; as `changes` and the lenses number them)"
        " and go on from there as usual; blocked tasks are never worked on",
    )
    sp.add_argument(
        "--verify",
        action="append",
        metavar="CMD",
        help="a verification command: the run succeeds only once it passes, and the agent is"
        " told to run it (repeatable; default: inferred from the project)",
    )
    sp.add_argument(
        "--allow-tool",
        action="append",
        metavar="RULE",
        help="a Claude permission rule the agent may use without asking, beside the"
        " verification commands it may always run, e.g. 'Bash(npm run build:*)' (repeatable;"
        " ralph.allowedTools)",
    )
    sp.add_argument(
        "--env",
        action="append",
        metavar="NAME=VALUE",
        help="extra environment for the agent (repeatable)",
    )
    sp.add_argument(
        "--isolation",
        choices=ISOLATIONS,
        help="'worktree': work in a git worktree of its own on branch ralph/CHANGE (a commit"
        " per iteration that changed files), leaving your work tree alone (default none)",
    )
    sp.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="do not record a git checkpoint of the work tree before and after each iteration",
    )
    cli_runs.add_run_flags(sp)

    sp = sub.add_parser("prompt", help="print the prompt the next iteration would get")
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--scope", choices=SCOPES)
    sp.add_argument("--guidance", action="append", metavar="TEXT")
    sp.add_argument("--verify", action="append", metavar="CMD")
    sp.add_argument("--story", metavar="ID", help="the story a run started with --story works on")

    sp = sub.add_parser(
        "verify", help="run CHANGE's verification commands as a run would; exit 0 when they pass"
    )
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--verify", action="append", metavar="CMD", help="a command (repeatable)")
    sp.add_argument("--verify-timeout", type=float, metavar="S", help="default 900")
    sp.add_argument(
        "--env", action="append", metavar="NAME=VALUE", help="extra environment (repeatable)"
    )

    sp = sub.add_parser("history", help="the operator's record of CHANGE's runs")
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--json", action="store_true", help="print the ralph.history object")
    cli_git.add_parsers(sub, with_root)
    cli_runs.add_parsers(sub, with_root)
    return p


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _fail(message: str) -> NoReturn:
    print(f"ralph-lsp: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in (None, "serve"):
        from ralph_lsp.server import serve

        if args.command is None and _is_terminal(sys.stdin):
            # A person typed `ralph-lsp`: say what the silence means (an editor never sees this).
            print(
                "ralph-lsp: serving the Language Server Protocol on stdin/stdout, waiting for an"
                " LSP client (editors start it this way); Ctrl-C quits, `ralph-lsp --help` lists"
                " the commands",
                file=sys.stderr,
            )
        serve()
        return 0
    handlers = {
        "changes": cmd_changes,
        "run": cmd_run,
        "prompt": cmd_prompt,
        "history": cmd_history,
        "diff": cli_git.cmd_diff,
        "restore": cli_git.cmd_restore,
        "verify": cmd_verify,
        "runs": cli_runs.cmd_runs,
        "attach": lambda a, o: cli_runs.cmd_attach(a, o, _Renderer(o, lambda: None), EXIT_CODES),
        "stop": cli_runs.cmd_stop,
        "guide": cli_runs.cmd_guide,
    }
    try:
        return handlers[args.command](args, sys.stdout)
    except CliError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
