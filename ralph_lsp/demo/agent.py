"""The bundled demo agent — a small scripted program, NOT an AI.

It exists so that ralph-lsp can be tried and tested without any coding-agent CLI: it reads the
prompt, finds the ``Tasks file: <path>`` line (and the optional ``Story in scope: <id>`` line;
without it the whole change is in scope; a prompt that only says "Your instructions for this
session are in the file …", as a prompt too long for a command line does, is read from that
file, as a real agent would), then for each unchecked task in scope, in order, it
says which task it is on, pauses briefly, and checks that one task by rewriting its box to
``[x]``. It decides nothing. On ``examples/hello``'s change it also writes the fixed code and
tests each task names (``demo_work.py``), so that the example's verification passes; anywhere
else it writes no code. Given a planning prompt (SPEC §14) it drafts the change instead
(``demo/planner.py``).

Usage::

    python -m ralph_lsp.demo.agent -p PROMPT [--output-format stream-json|text]
    python -m ralph_lsp.demo.agent < prompt.md          # the prompt on stdin when -p is absent

With ``--output-format stream-json`` it prints Claude Code-style stream-json (``system``/``init``
with model ``ralph-demo-agent (not an AI)``, ``assistant`` text and ``tool_use`` Edit events,
``user`` tool results, a final ``result`` with zero cost), so the ``claude`` parser reads it.

Environment:

- ``RALPH_DEMO_DELAY``: the pause before each task, in seconds (default 0.4).
- ``RALPH_DEMO_TASKS_PER_RUN``: stop after this many tasks (default: every task in scope).

Each edit re-reads tasks.md first and replaces it atomically (a temporary file in the same
folder, then ``os.replace``), touching only the one task line, so edits made meanwhile by
others are kept and the file's bytes (encoding, line endings) are otherwise preserved.
Exit codes: 0 done, 1 the tasks file is missing or unreadable (an error result is printed),
2 bad arguments, 143 on SIGTERM, 130 on SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from ralph_lsp.agents import pointed_prompt_file
from ralph_lsp.demo import planner, reviewer
from ralph_lsp.demo import work as demo_work
from ralph_lsp.openspec.tasks import MAX_TASKS_BYTES, Task, TasksDoc, read_regular_text
from ralph_lsp.openspec.tasks_fast import parse_tasks

MODEL = "ralph-demo-agent (not an AI)"
DEFAULT_DELAY = 0.4
_TASKS_FILE_RE = re.compile(r"^[ \t>*_-]*Tasks file:[*_ \t]*(.+?)[ \t]*$", re.MULTILINE)
_STORY_RE = re.compile(r"^[ \t>*_-]*Story in scope:[*_ \t]*(.+?)[ \t]*$", re.MULTILINE)


class DemoError(Exception):
    """The demo agent cannot do its work (the message is shown to the operator)."""


def find_tasks_file(prompt: str) -> Path | None:
    """The path on the prompt's ``Tasks file:`` line (backticks or quotes around it allowed)."""
    m = _TASKS_FILE_RE.search(prompt)
    if not m:
        return None
    raw = m.group(1).strip().strip("`\"'")
    return Path(raw) if raw else None


def find_story(prompt: str) -> str | None:
    """The id on the prompt's ``Story in scope:`` line, or None (the whole change)."""
    m = _STORY_RE.search(prompt)
    if not m:
        return None
    raw = m.group(1).strip().strip("`\"'")
    return raw or None


def _story_tasks(doc: TasksDoc, story_id: str | None) -> list[Task] | None:
    """The tasks in scope: the story's (None when it does not exist), or every task."""
    if story_id is None:
        return list(doc.tasks)
    story = doc.story(story_id)
    if story is None:
        # Tolerate "2. Title" or "2:" where the id alone was meant.
        token = story_id.split()[0].rstrip(".:,)") if story_id.split() else ""
        story = doc.story(token) if token else None
    return list(story.tasks) if story is not None else None


def check_box(line: str) -> str:
    """``line`` (a task line) with its box set to ``[x]``; nothing else changes."""
    start = line.find("[")
    end = line.find("]", start + 1)
    if start < 0 or end < 0:
        return line
    return line[:start] + "[x]" + line[end + 1 :]


@dataclass(frozen=True)
class Tick:
    """One task checked: its label and the line before and after."""

    label: str
    old_line: str
    new_line: str


def _read(path: Path) -> str:
    # surrogateescape keeps bytes that are not UTF-8 exactly as they were when written back;
    # line numbers agree with the replacement-character decoding the parser is defined on.
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def _write_atomic(path: Path, text: str) -> None:
    data = text.encode("utf-8", errors="surrogateescape")
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".demo-tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(OSError):
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def next_open_task(path: Path, story_id: str | None) -> Task | None:
    """The first unchecked task in scope that is not blocked, read from the file as it is now."""
    doc = parse_tasks(_read(path))
    tasks = _story_tasks(doc, story_id)
    if tasks is None:
        raise DemoError(f"story {story_id!r} is not in {path}")
    return next((t for t in tasks if doc.workable(t)), None)


def tick(path: Path, task: Task, story_id: str | None) -> Tick | None:
    """Check ``task`` in the file as it is now (re-read first); None when it is gone or done.

    The task is found again by its line text (it may have moved if lines were added)."""
    text = _read(path)
    lines = text.split("\n")
    doc = parse_tasks(text)
    tasks = _story_tasks(doc, story_id) or []
    candidates = [t for t in tasks if doc.workable(t) and t.text == task.text]
    if not candidates:
        return None
    target = min(candidates, key=lambda t: abs(t.line - task.line))
    old = lines[target.line]
    new = check_box(old)
    if new == old:
        return None
    lines[target.line] = new
    _write_atomic(path, "\n".join(lines))
    return Tick(label=_label(target), old_line=_printable(old), new_line=_printable(new))


def _printable(text: str) -> str:
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _label(task: Task) -> str:
    """How the task is named in messages: its text, which starts with its id (``1.2 Add …``)."""
    return _printable(task.text)


class Output:
    """Prints Claude-style stream-json, or plain text lines."""

    def __init__(self, fmt: str, session_id: str) -> None:
        self.json = fmt == "stream-json"
        self.session_id = session_id

    def _emit(self, obj: dict[str, Any], text: str | None) -> None:
        if self.json:
            obj.setdefault("session_id", self.session_id)
            line = json.dumps(obj, ensure_ascii=False)
        elif text is None:
            return
        else:
            line = text
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def init(self, cwd: str) -> None:
        self._emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": cwd,
                "model": MODEL,
                "tools": ["Edit"],
                "permissionMode": "acceptEdits",
                "demo": True,
            },
            f"{MODEL}: a scripted demo that checks tasks, not an AI",
        )

    def _assistant(self, content: dict[str, Any], text: str) -> None:
        """One assistant message of a single content block, as Claude Code streams it."""
        message = {
            "id": f"msg_demo_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [content],
        }
        self._emit({"type": "assistant", "message": message}, text)

    def say(self, text: str) -> None:
        self._assistant({"type": "text", "text": text}, text)

    def edit(self, tool_id: str, path: Path, old: str, new: str) -> None:
        edit = {"file_path": str(path), "old_string": old, "new_string": new}
        self._assistant(
            {"type": "tool_use", "id": tool_id, "name": "Edit", "input": edit}, f"→ Edit {path}"
        )

    def tool_result(self, tool_id: str, content: str, is_error: bool) -> None:
        self._emit(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": tool_id,
                            "content": content,
                            "is_error": is_error,
                        }
                    ],
                },
            },
            ("✗ " if is_error else "  ") + content,
        )

    def result(self, *, is_error: bool, text: str, turns: int, started: float) -> None:
        duration_ms = round((time.monotonic() - started) * 1000)
        self._emit(
            {
                "type": "result",
                "subtype": "success" if not is_error else "error_during_execution",
                "is_error": is_error,
                "duration_ms": duration_ms,
                "num_turns": turns,
                "result": text,
                "total_cost_usd": 0,
                "usage": {
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
            },
            f"{'error' if is_error else 'done'}: {text} ({duration_ms / 1000:.1f}s, demo, no cost)",
        )


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if 0 <= value < 3600 else default


def _env_limit(name: str) -> int | None:
    try:
        value = int(os.environ.get(name, "").strip())
    except ValueError:
        return None
    return value if value >= 0 else None


# Long: the demo agent's whole script, in the order it prints; kept in one piece to read.
def run(prompt: str, out: Output, delay: float, limit: int | None) -> int:
    """Work through the tasks in scope (or draft the change a planning prompt asks for); the
    exit code."""
    started = time.monotonic()
    out.init(os.getcwd())
    if planner.is_planning(prompt):
        return _plan(prompt, out, started)
    path = find_tasks_file(prompt)
    story_id = find_story(prompt)
    turns = 0
    if path is None:
        message = "demo agent: the prompt has no 'Tasks file: <path>' line"
        out.say(message)
        out.result(is_error=True, text=message, turns=1, started=started)
        return 1
    path = path if path.is_absolute() else Path.cwd() / path
    if reviewer.is_review(prompt) and path.is_file():
        return reviewer.run_review(prompt, path, out, started)
    scope = f"story {story_id}" if story_id is not None else "the whole change"
    checked = 0
    misses = 0
    try:
        if not path.is_file():
            raise DemoError(f"tasks file not found: {path}")
        out.say(f"Demo agent (not an AI): checking the open tasks of {scope} in {path}")
        turns += 1
        while limit is None or checked < limit:
            task = next_open_task(path, story_id)
            if task is None:
                break
            out.say(f"Working on {_label(task)}")
            turns += 1
            if delay > 0:
                time.sleep(delay)
            tool_id = f"toolu_demo_{checked + 1}_{uuid.uuid4().hex[:8]}"
            if demo_work.applies(Path.cwd(), path.parent):
                for rel in demo_work.write(Path.cwd(), task.id, path.parent.name):
                    out.say(f"Wrote {rel}")
            done = tick(path, task, story_id)
            if done is None:
                # Someone else checked or removed it meanwhile: nothing to edit.
                out.say(f"{_label(task)} changed meanwhile; moving on")
                misses += 1
                if misses >= 3:
                    break
                continue
            out.edit(tool_id, path, done.old_line, done.new_line)
            out.tool_result(tool_id, f"The file {path} has been updated successfully.", False)
            checked += 1
    except (DemoError, OSError) as exc:
        message = str(exc) if isinstance(exc, DemoError) else f"cannot update {path}: {exc}"
        out.say(f"demo agent: {message}")
        out.result(is_error=True, text=message, turns=turns + 1, started=started)
        return 1
    try:
        doc = parse_tasks(_read(path))
        left = [t for t in (_story_tasks(doc, story_id) or []) if not t.done]
        blocked = sum(1 for t in left if doc.blocked_reason(t) is not None)
    except OSError:
        left, blocked = [], 0
    summary = f"Demo agent checked {checked} task{'s' if checked != 1 else ''} of {scope}; " + (
        f"{len(left)} left" + (f" ({blocked} blocked)." if blocked else ".")
        if left
        else "none left."
    )
    out.say(summary)
    out.result(is_error=False, text=summary, turns=turns + 1, started=started)
    return 0


def _plan(prompt: str, out: Output, started: float) -> int:
    """A planning prompt (SPEC §14): the change's artifacts written from its description."""
    try:
        summary = planner.plan(prompt, out.say)
    except (ValueError, OSError) as exc:
        out.say(f"demo agent: {exc}")
        out.result(is_error=True, text=str(exc), turns=2, started=started)
        return 1
    out.say(summary)
    out.result(is_error=False, text=summary, turns=2, started=started)
    return 0


def _followed(prompt: str) -> str:
    """The prompt, or the file's text when the prompt only says where the instructions are
    (a prompt too long for a command line); a file that cannot be read leaves the prompt."""
    path = pointed_prompt_file(prompt)
    if path is None:
        return prompt
    try:
        return read_regular_text(path, MAX_TASKS_BYTES)
    except OSError as exc:
        print(f"demo agent: the prompt file cannot be read ({exc})", file=sys.stderr)
        return prompt


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ralph_lsp.demo.agent",
        description="ralph-lsp's demo agent: a scripted program (not an AI) that checks the "
        "open tasks of an OpenSpec change's tasks.md one by one with short pauses.",
    )
    parser.add_argument("-p", "--print", "--prompt", dest="prompt", help="the prompt (else stdin)")
    parser.add_argument(
        "--output-format", choices=("stream-json", "text"), default="text", dest="fmt"
    )
    # Accept (and ignore) other flags, e.g. a Claude-style --verbose or --permission-mode.
    args, _unknown = parser.parse_known_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        prompt = _followed(args.prompt if args.prompt is not None else sys.stdin.read())
        out = Output(args.fmt, str(uuid.uuid4()))
        delay = _env_float("RALPH_DEMO_DELAY", DEFAULT_DELAY)
        return run(prompt, out, delay, _env_limit("RALPH_DEMO_TASKS_PER_RUN"))
    except BrokenPipeError:
        # The reader went away: nothing more to say to anyone.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
