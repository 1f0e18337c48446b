"""A scripted model that follows the prompt, as a real agent would (not an AI).

On the first turn of a session it reads the prompt the CLI sent (the ``Tasks file: <path>`` and
``Story in scope: <id>`` lines; a prompt handed over as a file is read from that file), picks
the first unchecked task of that story, and plans the CLI's own tool calls that do it: write the
files :mod:`ralph_lsp.demo.work` names for that task (it knows ``examples/hello``'s change),
check the task's box in tasks.md, then say so. Later turns of the same session play that plan.

Codex gets ``apply_patch`` calls (a whole-file ``Update File`` or ``Add File``); Gemini gets
``write_file`` and ``replace``, and, for a build file, follows the note the gemini preset adds
to the prompt: ``write_file`` to ``<file>.ralph-new`` then ``mv`` through the shell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralph_lsp.agents import pointed_prompt_file
from ralph_lsp.agents.cli_config import GEMINI_PROMPT_NOTE
from ralph_lsp.demo import work as demo_work
from ralph_lsp.demo.agent import check_box, find_story, find_tasks_file, next_open_task

from .scripted_servers import Step

#: The files headless Gemini refuses to write directly (those the examples touch).
BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "package.json", "Makefile")


def prompt_of(kind: str, body: dict[str, Any]) -> str:
    """The user's text in a request: Codex's user messages, Gemini's first user content."""
    texts: list[str] = []
    if kind == "codex":
        for item in body.get("input") or []:
            if not isinstance(item, dict) or item.get("type", "message") != "message":
                continue
            if item.get("role") == "user":
                content = item.get("content") or []
                texts += [c.get("text", "") for c in content if isinstance(c, dict)]
    else:
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        first = next((c for c in contents if c.get("role") == "user"), {})
        texts += [p.get("text", "") for p in first.get("parts") or [] if isinstance(p, dict)]
    return "\n".join(t for t in texts if isinstance(t, str))


def _instructions(prompt: str) -> str:
    """The prompt itself, or the file it points to (a prompt too long for a command line)."""
    pointed = pointed_prompt_file(prompt)
    if pointed is not None and find_tasks_file(prompt) is None:
        return pointed.read_text(encoding="utf-8")
    return prompt


def plan(kind: str, prompt: str) -> list[Step]:
    """The tool calls (then a final text) that do the first open task the prompt asks for."""
    text = _instructions(prompt)
    tasks_file = find_tasks_file(text)
    if tasks_file is None or not tasks_file.is_file():
        return [Step("text", text="I found no tasks file in the prompt.")]
    change_folder = tasks_file.parent
    root = change_folder.parent.parent.parent  # <root>/openspec/changes/<change>/tasks.md
    task = next_open_task(tasks_file, find_story(text))
    if task is None:
        return [Step("text", text="Every task in scope is already checked.")]
    steps: list[Step] = []
    for rel, content, append in demo_work.files_for(task.id, change_folder.name, root):
        path = root / rel
        current = path.read_text(encoding="utf-8") if path.exists() else None
        new = content
        if append:
            new = (current or "") + ("" if content.strip() in (current or "") else content)
        steps += _write(kind, rel, current, new, GEMINI_PROMPT_NOTE in text)
    line = tasks_file.read_text(encoding="utf-8").split("\n")[task.line]
    rel_tasks = tasks_file.relative_to(root).as_posix()
    steps += _edit(kind, rel_tasks, line, check_box(line))
    return [*steps, Step("text", text=f"Done: {task.text}")]


def _write(kind: str, rel: str, current: str | None, new: str, note: bool) -> list[Step]:
    if kind == "codex":
        if current is None:
            added = "".join(f"+{ln}\n" for ln in new.split("\n")[:-1] or [new])
            return [
                Step("patch", new=f"*** Begin Patch\n*** Add File: {rel}\n{added}*** End Patch\n")
            ]
        return _edit(kind, rel, current.rstrip("\n"), new.rstrip("\n"))
    if note and Path(rel).name in BUILD_FILES:
        return [
            Step("write", path=f"{rel}.ralph-new", new=new),
            Step("shell", command=f"mv {rel}.ralph-new {rel}"),
        ]
    return [Step("write", path=rel, new=new)]


def _edit(kind: str, rel: str, old: str, new: str) -> list[Step]:
    """Replace the lines ``old`` with ``new`` (both without a final newline) in ``rel``."""
    if kind == "codex":
        minus = "".join(f"-{ln}\n" for ln in old.split("\n"))
        plus = "".join(f"+{ln}\n" for ln in new.split("\n"))
        patch = f"*** Begin Patch\n*** Update File: {rel}\n@@\n{minus}{plus}*** End Patch\n"
        return [Step("patch", new=patch)]
    return [Step("edit", path=rel, old=old, new=new)]
