"""The prompt each iteration's agent gets (SPEC §1).

Workers have context, not history: the prompt is built from the change's files, the settings and
the operator's queued guidance only. It never carries iteration numbers, earlier failures or
statuses, models or attempts, so the same tasks.md with no guidance gives a byte-identical prompt.

A prompt that caches (SPEC §15): the part that does not change within a run comes first and is
byte-identical across its iterations (:func:`fixed_part`: the change and its files, the project
context, the workflow, the verification commands); after it, what changes (:func:`build_prompt`:
the story in scope, the failing check, the operator's guidance). The agent CLIs cache a prompt's
byte-identical prefix, so every iteration after the first reads the fixed part from the cache.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ralph_lsp.loop.verify import PROMPT_TAIL_CHARS, Result
from ralph_lsp.openspec.project_context import read_project_context
from ralph_lsp.openspec.tasks import Story, TasksDoc
from ralph_lsp.openspec.workspace import Change

# Markers the bundled demo agent reads; keep them stable.
TASKS_FILE_MARKER = "Tasks file: "
STORY_MARKER = "Story in scope: "

# Bounds on what the prompt lists, so that it stays a size an agent (and a command line) takes.
MAX_LISTED_TASKS = 200
MAX_TASK_CHARS = 400
MAX_GUIDANCE_TOTAL_CHARS = 40_000


def scope_story(doc: TasksDoc, scope: str, start: str | None = None) -> Story | None:
    """The story an iteration works on (scope ``story``): the run's starting story while it
    has open tasks that are not blocked (``ralph.run`` ``story``), else the first such story."""
    if start is not None:
        story = doc.story(start)
        if story is not None and any(doc.workable(t) for t in story.tasks):
            return story
    return doc.first_open_story() if scope == "story" else None


def build_prompt(
    change: Change,
    doc: TasksDoc,
    *,
    scope: str,
    verify_commands: Sequence[str],
    guidance: Sequence[str] = (),
    verify_failure: Result | None = None,
    start_story: str | None = None,
    scenario_rule: str | None = None,
    conformance: Sequence[str] = (),
) -> str:
    """The whole prompt: :func:`fixed_part`, then the story in scope, the failing check, the
    scenarios not met yet and the guidance (what changes from one iteration to the next)."""
    out = [fixed_part(change, verify_commands, scenario_rule)]
    add = out.append
    _add_scope(add, doc, scope_story(doc, scope, start_story), _tasks_name(change))
    if verify_failure is not None:
        _add_failure(add, verify_failure)
    if conformance:  # the scenarios not met yet, as the project's state now (SPEC §13)
        add("")
        out.extend(conformance)
    if guidance:
        add("")
        add("## Guidance")
        add("Direction from the operator for this work; follow it:")
        _add_guidance(add, guidance)
    add("")
    return "\n".join(out)


def fixed_part(
    change: Change, verify_commands: Sequence[str], scenario_rule: str | None = None
) -> str:
    """The prompt's first part, the same for every iteration of a run (ending in a blank line):
    what the change is and where, the project context, the workflow and the checks (with how a
    test names a scenario when the conformance gate is on: decided once for the run)."""
    folder = change.folder
    other_files = [p for p in (folder / "proposal.md", folder / "design.md") if p.is_file()]
    specs = sorted(folder.glob("specs/**/spec.md"))
    out: list[str] = []
    add = out.append
    add(
        f'You are implementing the OpenSpec change "{change.name}" in the project at {change.root}.'
    )
    add("")
    add(f"Change folder: {folder}")
    add(f"{TASKS_FILE_MARKER}{change.tasks_path}")
    tasks_name = _tasks_name(change)
    if other_files or specs:
        add("Read these files of the change first:")
        for p in [*other_files, *specs]:
            add(f"- {p}")
    context, _ = read_project_context(change.root)
    if context:  # as `openspec instructions apply` gives it, from openspec/config.yaml
        add("")
        add("## Project context")
        add(context.rstrip("\n"))
    add("")
    _add_workflow(add, tasks_name)
    add("")
    add("## Verification")
    if verify_commands:
        add(f"The work is done only when these pass. Run them from {change.root}:")
        for command in verify_commands:
            add(f"- `{command}`")
    else:
        add("No verification commands are configured; run the project's own tests if it has any.")
    if scenario_rule:  # the conformance gate is on (fixed for the run: SPEC §13)
        add(scenario_rule)
    add("")
    return "\n".join(out)


def _add_workflow(add: Callable[[str], None], tasks_name: str) -> None:
    add("## Workflow")
    add(f"1. Read the proposal, the design, the specs and {tasks_name} to understand the change.")
    add("2. Implement the tasks in scope (below) one at a time, in the order they are listed.")
    add("3. Run the verification commands below and fix what fails.")
    add(
        f"4. As soon as a task is implemented and verified, mark it done in {tasks_name} by"
        f" changing its `- [ ]` to `- [x]`. Edit nothing else in {tasks_name}."
    )
    add(
        "5. Work without asking questions: nobody will answer during this session. Where"
        " something is unclear, make the reasonable choice the proposal and design point to."
    )
    add(
        "6. A task that only a person can do (a credential to create, a decision to make):"
        " leave its box unchecked, add a line `- blocked: <why>` indented under it, and go"
        " on with the other tasks."
    )


def _tasks_name(change: Change) -> str:
    """The task file as the prompt names it: ``tasks.md``, or what the change's schema tracks."""
    folder = str(change.folder) + os.sep
    return str(change.tasks_path).removeprefix(folder).replace(os.sep, "/")


def _add_scope(
    add: Callable[[str], None], doc: TasksDoc, story: Story | None, tasks_name: str = "tasks.md"
) -> None:
    """The story in scope (or the whole change), and the blocked tasks to leave alone."""
    add("## Scope")
    blocked = doc.blocked_open()
    if story is not None:
        add(f"{STORY_MARKER}{story.id}")
        where = (
            f"line {story.line + 1} of {tasks_name}"
            if story.line >= 0
            else f"the top of {tasks_name}"
        )
        add(f'Work on the story "{story.title}" ({where}) only. Its unchecked tasks:')
        _add_tasks(add, [t.text for t in story.tasks if doc.workable(t)], tasks_name)
        add("Stop when every task of this story is checked; do not start tasks of other stories.")
        blocked = [(t, why) for t, why in blocked if t.story_id == story.id]
    elif doc.total and doc.completed >= doc.total:
        add(
            f"Every task of {tasks_name} is checked. What is left to do is in the state below"
            " (the verification or conformance state): the change is not done until it is met."
        )
    else:
        add(f"The whole change: work through the unchecked tasks of {tasks_name} in order.")
    if blocked:
        add("Leave these blocked tasks alone: a person must unblock them.")
        for task, why in blocked[:MAX_LISTED_TASKS]:
            add(f"- {_clip(task.label, MAX_TASK_CHARS)} (blocked: {_clip(why, MAX_TASK_CHARS)})")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _add_tasks(add: Callable[[str], None], texts: list[str], tasks_name: str = "tasks.md") -> None:
    for text in texts[:MAX_LISTED_TASKS]:
        add(f"- {_clip(text, MAX_TASK_CHARS)}")
    if len(texts) > MAX_LISTED_TASKS:
        more = len(texts) - MAX_LISTED_TASKS
        add(f"- … and {more} more unchecked tasks of this story: read them in {tasks_name}")


def _add_guidance(add: Callable[[str], None], guidance: Sequence[str]) -> None:
    room = MAX_GUIDANCE_TOTAL_CHARS
    for n, text in enumerate(guidance):
        if room <= 0:
            add(f"- ({len(guidance) - n} more guidance texts did not fit in this prompt)")
            return
        text = _clip(text.strip(), room)
        room -= len(text)
        lines = text.splitlines() or [""]
        add(f"- {lines[0]}")
        for more in lines[1:]:
            add(f"  {more}")


def _add_failure(add: Callable[[str], None], failure: Result) -> None:
    """The failing check, as the project's state now (never as an account of attempts)."""
    add("")
    add("## Verification state")
    code = "could not start" if failure.exit_code is None else f"exit {failure.exit_code}"
    add(f"`{failure.command}` currently fails ({code}). The end of its output:")
    tail = failure.output_tail[-PROMPT_TAIL_CHARS:]
    fence = "````" if "```" in tail else "```"
    add(fence)
    add(tail)
    add(fence)
    add("Make it pass: the tasks are not done while it fails.")
