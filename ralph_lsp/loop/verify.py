"""Verification: the project's own checks, which a run must pass to succeed.

The commands are ``verifyCommands`` (each split like a shell would, never run by one) or, when
that is empty, the commands the project's own files define (:func:`infer`). They run one after
another in the OpenSpec root, each under a watchdog like the agent (a stop, a timeout, or the
death of this process leaves nothing running), and stop at the first that fails.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.openspec.tasks import read_regular_text
from ralph_lsp.proc.process import AgentProcess, AgentStartError, SpawnSpec
from ralph_lsp.runs.records import VerificationRecord

#: What a result keeps of a command's output, and what a prompt carries of a failure.
OUTPUT_TAIL_BYTES = 64 * 1024
PROMPT_TAIL_CHARS = 8 * 1024
_NPM_PLACEHOLDER = 'echo "Error: no test specified" && exit 1'
_MAKE_TEST_RE = re.compile(r"^test\s*:(?!=)", re.M)
_PYTHON_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "pytest.ini", "tox.ini")


@dataclass(frozen=True)
class Command:
    """A verification command: its line, its argv, and where it came from."""

    line: str
    argv: tuple[str, ...]
    source: str  # "verifyCommands", "Makefile test target", …

    @classmethod
    def parse(cls, line: str, source: str) -> Command:
        try:
            argv = tuple(shlex.split(line))
        except ValueError as exc:
            raise ValueError(f"verification command {line!r}: {exc}") from None
        if not argv:
            raise ValueError("a verification command is empty")
        return cls(line, argv, source)


@dataclass(frozen=True)
class Result:
    command: str
    exit_code: int | None  # None: it could not be started
    duration_ms: int
    output_tail: str
    timed_out: float | None = None  # the verifyTimeoutSeconds it was stopped at, if it was

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def describe(self) -> str:
        """``make test exited 2`` (or timed out, or could not start)."""
        if self.exit_code is None:
            return f"{self.command} could not start"
        if self.timed_out is not None:
            return f"{self.command} timed out after {self.timed_out:g}s (verifyTimeoutSeconds)"
        if self.exit_code < 0:
            return f"{self.command} was killed by signal {-self.exit_code}"
        return f"{self.command} exited {self.exit_code}"

    def to_json(self) -> VerificationRecord:
        return {
            "command": self.command,
            "exitCode": self.exit_code,
            "durationMs": self.duration_ms,
            "outputTail": self.output_tail,
        }


def commands(configured: Sequence[str], root: Path) -> list[Command]:
    """The commands in use: ``verifyCommands`` when set, else :func:`infer`."""
    if configured:
        return [Command.parse(line, "verifyCommands") for line in configured]
    return infer(root)


def infer(root: Path) -> list[Command]:
    """What the project's own files define as its tests, every matching rule in order, without
    duplicates. Never a command the files do not define (runners are not looked up on PATH).
    A command the Makefile's ``test`` recipe already runs (``go test ./...`` under ``make
    test``) is not run a second time."""
    found: list[Command] = []
    recipe = _make_test_recipe(root)
    for line, source in (*_make(root), *_node(root), *_python(root), *_cargo_go(root)):
        if line != "make test" and recipe is not None and line in recipe:
            continue
        if all(c.line != line for c in found):
            found.append(Command.parse(line, source))
    return found


def _make_test_recipe(root: Path) -> str | None:
    """The recipe lines of the Makefile's ``test`` target, when it has one."""
    for name in ("GNUmakefile", "makefile", "Makefile"):
        text = _read(root / name)
        m = _MAKE_TEST_RE.search(text) if text is not None else None
        if text is not None and m is not None:
            lines = text[m.end() :].split("\n")[1:]
            recipe = []
            for line in lines:
                if not line.startswith("\t"):
                    break
                recipe.append(line.strip())
            return "\n".join(recipe)
    return None


def _make(root: Path) -> list[tuple[str, str]]:
    for name in ("GNUmakefile", "makefile", "Makefile"):
        text = _read(root / name)
        if text is not None and _MAKE_TEST_RE.search(text):
            return [("make test", f"{name}: test target")]
    return []


def _node(root: Path) -> list[tuple[str, str]]:
    text = _read(root / "package.json")
    if text is None:
        return []
    try:
        scripts = json.loads(text).get("scripts") or {}
        test = scripts.get("test") if isinstance(scripts, dict) else None
    except (ValueError, AttributeError):
        return []
    if not isinstance(test, str) or not test.strip() or test.strip() == _NPM_PLACEHOLDER:
        return []
    declared = _package_manager(text)  # corepack's packageManager field wins over lock files
    if declared is not None:
        return [(f"{declared} test", f"package.json scripts.test, packageManager {declared}")]
    for lock, manager in (
        ("pnpm-lock.yaml", "pnpm"),
        ("yarn.lock", "yarn"),
        ("bun.lockb", "bun"),
        ("bun.lock", "bun"),
    ):
        if (root / lock).is_file():
            return [(f"{manager} test", f"package.json scripts.test, {lock}")]
    return [("npm test", "package.json scripts.test")]


def _package_manager(text: str) -> str | None:
    try:
        value = json.loads(text).get("packageManager")
    except (ValueError, AttributeError):
        return None
    if not isinstance(value, str):
        return None
    name = value.split("@", 1)[0].strip()
    return name if name in ("npm", "pnpm", "yarn", "bun") else None


def _python(root: Path) -> list[tuple[str, str]]:
    marker = next((n for n in _PYTHON_FILES if (root / n).is_file()), None)
    if marker is None or not _has_python_tests(root) or not _uses_pytest(root):
        return []
    if (root / "uv.lock").is_file():
        return [("uv run pytest -q", f"{marker} with tests, uv.lock")]
    if (root / "poetry.lock").is_file():
        return [("poetry run pytest -q", f"{marker} with tests, poetry.lock")]
    return [("pytest -q", f"{marker} with tests")]


def _has_python_tests(root: Path) -> bool:
    for folder in (root, root / "tests", root / "test"):
        try:
            names = [p.name for p in folder.iterdir()]
        except OSError:
            continue
        if any(
            (n.startswith("test_") and n.endswith(".py")) or n.endswith("_test.py") for n in names
        ):
            return True
        if folder != root and any(n.endswith(".py") for n in names):
            return True
    return False


def _uses_pytest(root: Path) -> bool:
    """Whether the project's own files name pytest (its configuration or a dependency): a
    project whose tests are plain unittest gets no `pytest` it may not have."""
    for name in (
        *_PYTHON_FILES,
        "requirements-dev.txt",
        "requirements-test.txt",
        "requirements.txt",
    ):
        text = _read(root / name)
        if text is not None and re.search(r"\bpytest\b", text):
            return True
    return False


def _cargo_go(root: Path) -> list[tuple[str, str]]:
    out = []
    if (root / "Cargo.toml").is_file():
        out.append(("cargo test", "Cargo.toml"))
    if (root / "go.mod").is_file():
        out.append(("go test ./...", "go.mod"))
    return out


def _read(path: Path) -> str | None:
    """A project file's text; None when it is missing, over 4 MiB or not a regular file (a
    named pipe there must not hang the inference)."""
    try:
        return read_regular_text(path, 4 * 1024 * 1024)
    except OSError:
        return None


class Runner:
    """Runs the commands in turn under the process-tree guarantees of :class:`AgentProcess`."""

    def __init__(
        self,
        cwd: Path,
        env: dict[str, str],
        timeout: float,
        stop: asyncio.Event,
        on_lines: Callable[[list[str], bool], None],
        grace: float = 5.0,
        wrap: Callable[[SpawnSpec], SpawnSpec] | None = None,
    ) -> None:
        self.cwd = cwd
        self.env = env
        # verifyTimeoutSeconds: 0 means no limit (a 0 s limit would fail every check at once).
        self.timeout: float | None = timeout if timeout > 0 else None
        self.stop = stop
        # (lines prefixed "verify", a warning?) → the log. A command's own output, stderr
        # included, is no warning (unittest reports on stderr); its failure is.
        self.on_lines = on_lines
        self.grace = grace
        self.wrap = wrap  # each command's spec as it is started (in the run's sandbox)
        # what the n-th command's environment adds (a JUnit report of its own: conformance)
        self.env_for: Callable[[int], dict[str, str]] | None = None
        self.process: AgentProcess | None = None

    async def run(self, cmds: Sequence[Command]) -> list[Result]:
        """Every command in order until one fails (or the run is stopped)."""
        results: list[Result] = []
        for n, cmd in enumerate(cmds):
            if self.stop.is_set():
                break
            result = await self._one(cmd, n)
            results.append(result)
            if not result.passed:
                break
        return results

    async def _one(self, cmd: Command, n: int = 0) -> Result:
        started = time.monotonic()
        self.on_lines([f"verify $ {cmd.line}"], False)
        env = self.env if self.env_for is None else {**self.env, **self.env_for(n)}
        spec = SpawnSpec(argv=list(cmd.argv), cwd=self.cwd, env=env, stdin_data=None)
        if self.wrap is not None:
            spec = self.wrap(spec)
        try:
            proc = await AgentProcess.start(spec)
        except AgentStartError as exc:
            self.on_lines([f"verify ✗ {exc}"], True)
            return Result(cmd.line, None, _ms(started), str(exc))
        self.process = proc
        tail = _Tail()
        try:
            code, timed_out = await self._wait(proc, tail)
        finally:
            self.process = None
        limit = self.timeout if timed_out and code != 0 else None
        result = Result(cmd.line, code, _ms(started), tail.text(), limit)
        mark = "✓" if result.passed else "✗"
        self.on_lines(
            [f"verify {mark} {result.describe()} ({result.duration_ms / 1000:.1f}s)"],
            not result.passed,
        )
        return result

    async def _wait(self, proc: AgentProcess, tail: _Tail) -> tuple[int, bool]:
        """The command's exit code, and whether its timeout stopped it."""

        async def pump() -> None:
            async for _stream, lines in proc.batches():
                tail.add(lines)
                self.on_lines([f"verify │ {line}" for line in lines], False)

        reader = asyncio.ensure_future(pump())
        stopped = asyncio.ensure_future(self.stop.wait())
        exited = asyncio.ensure_future(proc.wait())
        timed_out = False
        try:
            done, _ = await asyncio.wait(
                {exited, stopped}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if exited not in done:
                if stopped not in done:
                    timed_out = True
                    note = f"[ralph: timed out after {self.timeout:g}s (verifyTimeoutSeconds)]"
                    tail.add([note])
                    self.on_lines([f"verify │ {note}"], True)
                await proc.terminate(self.grace)
            code = await proc.wait()
            await asyncio.wait({reader}, timeout=5)
            return code, timed_out
        finally:
            stopped.cancel()
            reader.cancel()


class _Tail:
    """The last :data:`OUTPUT_TAIL_BYTES` of a command's output."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._size = 0

    def add(self, lines: Sequence[str]) -> None:
        for line in lines:
            self._lines.append(line)
            self._size += len(line) + 1
        while self._size > OUTPUT_TAIL_BYTES and len(self._lines) > 1:
            self._size -= len(self._lines.pop(0)) + 1

    def text(self) -> str:
        return "\n".join(self._lines)[-OUTPUT_TAIL_BYTES:]


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def summary(cmds: Sequence[Command]) -> str:
    """``make test, npm test`` for reasons and the log."""
    return ", ".join(c.line for c in cmds)
