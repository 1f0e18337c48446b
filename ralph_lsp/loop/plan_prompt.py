"""The prompt of a planning iteration (SPEC §14): context, not history.

Built from the description, the project's ``openspec/config.yaml`` context, the main specs the
change may modify (their names and requirement titles), the schema's artifacts and what each
must hold, and the gate's problems of the change as it is now, phrased as its current state
(never "your last attempt failed"). The same draft, description and guidance give a
byte-identical prompt. The bundled demo agent reads :data:`PLAN_MARKER` and
:data:`DESCRIPTION_MARKER`; keep them stable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ralph_lsp.openspec.planning import (
    change_folder_entries,
    main_spec_titles,
    schema_artifacts,
)
from ralph_lsp.openspec.project_context import read_project_context
from ralph_lsp.openspec.workspace import Change

PLAN_MARKER = "Planning change folder: "
DESCRIPTION_MARKER = "## Description"
# Bounds on what the prompt lists, so it stays a size an agent (and a command line) takes.
MAX_SPECS = 100
MAX_TITLES = 60
MAX_PROBLEMS = 100
MAX_GUIDANCE_CHARS = 40_000


# Long: the prompt read top to bottom, one section after another, as the agent reads it.
def build_plan_prompt(
    change: Change,
    description: str,
    problems: Sequence[str],
    guidance: Sequence[str] = (),
) -> str:
    folder = change.folder
    out: list[str] = []
    add = out.append
    add(
        f'You are planning the OpenSpec change "{change.name}" in the project at {change.root}:'
        " draft its artifacts so that a person can approve them before anything is built."
    )
    add("")
    add(f"{PLAN_MARKER}{folder}")
    add(
        "Write only inside that folder. Everything else in the project is read-only for this"
        " session: read the code and the specs to plan, change none of them."
    )
    add("")
    add(DESCRIPTION_MARKER)
    add(description.strip() or "(no description: the proposal states the change)")
    context, _ = read_project_context(change.root)
    if context:
        add("")
        add("## Project context")
        add(context.rstrip("\n"))
    add("")
    _add_main_specs(add, main_spec_titles(change.root))
    add("")
    schema, artifacts = schema_artifacts(change.root, folder)
    add(f"## Artifacts (schema {schema})")
    add("Write each of these in the change folder; each must hold:")
    for generates, what in artifacts:
        add(f"- `{generates}`: {what}")
    add("")
    _add_state(add, change_folder_entries(folder), problems)
    add("")
    add("## Workflow")
    add("1. Read the description, the project context and the main specs it touches.")
    add("2. Write or fix the artifacts above so that the change's current problems are gone.")
    add(
        "3. Work without asking questions: nobody answers during this session. A question only"
        " a person can answer goes under `## Open Questions` in design.md, one bullet each."
    )
    add("4. Implement nothing: no code, no tests, no edit outside the change folder.")
    if guidance:
        add("")
        add("## Guidance")
        add("Direction from the operator for this plan; follow it:")
        room = MAX_GUIDANCE_CHARS
        for text in guidance:
            text = text.strip()[: max(room, 0)]
            room -= len(text)
            lines = text.splitlines() or [""]
            add(f"- {lines[0]}")
            out.extend(f"  {more}" for more in lines[1:])
    add("")
    return "\n".join(out)


def _add_main_specs(add: Callable[[str], None], specs: dict[str, list[str]]) -> None:
    add("## Main specs the change may modify")
    if not specs:
        add("None yet: every requirement of this change is ADDED, in a new capability.")
        return
    add(
        "A MODIFIED or REMOVED requirement names one of these exactly"
        " (openspec/specs/<capability>/spec.md):"
    )
    for capability in sorted(specs)[:MAX_SPECS]:
        titles = specs[capability]
        shown = "; ".join(titles[:MAX_TITLES]) + (" …" if len(titles) > MAX_TITLES else "")
        add(f"- {capability}: {shown or '(no requirements)'}")
    if len(specs) > MAX_SPECS:
        add(f"- … and {len(specs) - MAX_SPECS} more under openspec/specs/")


def _add_state(add: Callable[[str], None], files: list[str], problems: Sequence[str]) -> None:
    """The change as it is now: its files and what keeps it from passing the gate."""
    add("## The change now")
    if not files or files == [".openspec.yaml"]:
        add("The change folder holds no artifact yet.")
    else:
        add("Files: " + ", ".join(f"`{f}`" for f in files[:200]))
    if problems:
        add(
            "It is not ready for approval: `openspec validate --strict` and the planning gate"
            " report these problems of the change as it is now:"
        )
        for problem in problems[:MAX_PROBLEMS]:
            add(f"- {problem}")
        if len(problems) > MAX_PROBLEMS:
            add(f"- … and {len(problems) - MAX_PROBLEMS} more")
    else:
        add("It passes the gate.")
