"""Starting an agent: its program found on the ``PATH`` it will get, the watchdog's command line,
and every start failure named with what to do about it."""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ralph_lsp.proc import inspection, watchdog
from ralph_lsp.proc.reading import CHUNK

log = logging.getLogger(__name__)


StartErrorKind = Literal["not_found", "not_executable", "os_error"]


START_TIMEOUT = 30.0


_INSTALL_HINTS = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "gemini": "npm install -g @google/gemini-cli",
}


@dataclass(frozen=True)
class SpawnSpec:
    """How to start one agent. Never run through a shell."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdin_data: bytes | None  # None → stdin is /dev/null
    # An argv the resolved program is started under (a sandbox: ``bwrap … --``); the
    # watchdog stays outside it, so its subreaper still sees every process of the tree.
    wrapper: tuple[str, ...] = ()

    def command(self, exe: str) -> tuple[str, list[str]]:
        """(program, argv) to execute once ``argv[0]`` is resolved to ``exe``."""
        if not self.wrapper:
            return exe, self.argv
        return self.wrapper[0], [*self.wrapper, exe, *self.argv[1:]]


class AgentStartError(Exception):
    """The agent could not be started; ``str(err)`` tells the user what to do."""

    def __init__(self, kind: StartErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: StartErrorKind = kind
        self.message = message


def _hint(name: str) -> str:
    base = os.path.basename(name)
    install = f"install it ({_INSTALL_HINTS[base]})" if base in _INSTALL_HINTS else "install it"
    return f"{install}, or set the agent's full command (ralph.agentCommand, or --agent-command)"


def shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def resolve_program(name: str, path: str | None, cwd: Path) -> str:
    """The absolute path of the program ``name``, as ``execvp`` in ``cwd`` would find it.

    A name holding ``/`` is a path (relative to ``cwd``); otherwise each ``path`` entry is tried
    (an empty or relative entry is relative to ``cwd``). Raises ``AgentStartError``.
    """
    if not name:
        raise AgentStartError(
            "not_found", "the agent command is empty; set ralph.agentCommand or ralph.agent"
        )
    if "/" in name:
        candidate = cwd / name
        if not candidate.exists():
            raise AgentStartError(
                "not_found", f"agent program {name!r} was not found ({candidate}); {_hint(name)}"
            )
        if candidate.is_dir() or not os.access(candidate, os.X_OK):
            what = "a directory" if candidate.is_dir() else "not executable"
            raise AgentStartError(
                "not_executable",
                f"agent program {name!r} ({candidate}) is {what}; make it an executable file "
                f"(chmod +x), or {_hint(name)}",
            )
        return os.path.abspath(candidate)
    search = os.defpath if path is None else path
    unusable: Path | None = None
    for entry in search.split(os.pathsep):
        candidate = cwd / (entry or ".") / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
        if unusable is None and candidate.exists():
            unusable = candidate
    if unusable is not None:
        what = "a directory" if unusable.is_dir() else "not executable"
        raise AgentStartError(
            "not_executable",
            f"agent program {name!r} was found on PATH at {unusable}, but it is {what}; "
            f"make it executable (chmod +x), or {_hint(name)}",
        )
    shown = "PATH is not set" if path is None else f"PATH={shorten(search)}"
    raise AgentStartError(
        "not_found", f"agent program {name!r} was not found on PATH ({shown}); {_hint(name)}"
    )


def package_parent() -> str:
    """The folder ``python -m ralph_lsp.proc.watchdog`` must run in to import this very package."""
    return str(Path(watchdog.__file__).resolve().parents[2])


def read_available(fd: int) -> str:
    try:
        os.set_blocking(fd, False)
        return os.read(fd, 8192).decode("utf-8", "replace")
    except OSError:
        return ""


def inspection_args() -> list[str]:
    """The watchdog's ``--proc`` (this process's choice) and, for the portable inspection,
    ``--libs``: where psutil is, since the watchdog runs with ``-S``."""
    name = inspection.choice()
    libs = inspection.psutil_path() if name == "portable" else None
    return ["--proc", name, *(["--libs", libs] if libs else [])]


async def feed_stdin(fd: int, data: bytes) -> None:
    """Write ``data`` to the pipe ``fd`` without blocking the loop, then close it."""
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    try:
        os.set_blocking(fd, False)
        while view:
            try:
                written = os.write(fd, view[:CHUNK])
            except BlockingIOError:
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_writer(fd, _resolve, ready)
                try:
                    await ready
                finally:
                    loop.remove_writer(fd)
                continue
            except BrokenPipeError:  # the agent does not read stdin; that is its business
                return
            view = view[written:]
    finally:
        os.close(fd)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
