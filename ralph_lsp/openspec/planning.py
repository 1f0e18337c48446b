"""What planning reads of a project (SPEC §14): a change's name checked as the OpenSpec CLI
checks it, the main specs a planned change may modify, the schema's artifacts, the gate a
drafted change must pass, and the open questions of its design.

The gate is the validator of ``openspec/validation/`` in process (``--strict``, exact to the
CLI), plus two rules of planning: the task file lists at least one unchecked task, and every
ADDED or MODIFIED requirement has a scenario. Its problems are worded as the change's current
state, for the next planning prompt and the run's reason. Reads files only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.authoring.specs import workspace_requirements
from ralph_lsp.openspec.task_files import BUILT_IN, schema_name, task_files
from ralph_lsp.openspec.tasks import read_regular, read_tasks_text
from ralph_lsp.openspec.tasks_fast import parse_tasks
from ralph_lsp.openspec.validation.blocks import parse_delta_spec
from ralph_lsp.openspec.validation.change_rules import validate_change
from ralph_lsp.openspec.validation.discovery import discover_spec_files

# the CLI's one kebab id grammar (core/id.js), and its longest change name
_KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 200
_SCENARIO = re.compile(r"^####[ \t]+Scenario:", re.MULTILINE)
_QUESTIONS = re.compile(r"^##[ \t]+Open Questions[ \t]*$", re.MULTILINE | re.IGNORECASE)
_NEXT_SECTION = re.compile(r"^#{1,2}[ \t]", re.MULTILINE)
_ITEM = re.compile(r"^[ \t]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+(.+?)[ \t]*$")
#: What the built-in schema's artifacts must hold, as the planning prompt says it.
BUILT_IN_ARTIFACTS = (
    ("proposal.md", "## Why (50 to 1000 characters), ## What Changes, ## Impact"),
    (
        "specs/<capability>/spec.md",
        "one delta spec per capability: ## ADDED / MODIFIED / REMOVED / RENAMED Requirements;"
        " each `### Requirement: <name>` states SHALL or MUST and has at least one"
        " `#### Scenario: <name>` with - **WHEN** and - **THEN** lines; a MODIFIED requirement"
        " names a requirement of the main spec and repeats it whole",
    ),
    (
        "design.md",
        "## Context, ## Decisions, ## Risks; questions only a person can answer under"
        " ## Open Questions, one bullet each",
    ),
    (
        "tasks.md",
        "## 1. <group> headings with `- [ ] 1.1 <task>` lines, unchecked, each small enough for one"
        " agent session, ending with the tests that verify the scenarios",
    ),
)


def change_name_error(name: str) -> str | None:
    """Why ``name`` is not a change name, in the CLI's words (``validateChangeName``), or None."""
    if not name:
        return "Change name cannot be empty"
    if len(name) > MAX_NAME:
        return "Change name is too long (200 characters max)"
    if _KEBAB.match(name):
        return None
    for test, why in (
        (re.search(r"[A-Z]", name), "must be lowercase (use kebab-case)"),
        (re.search(r"\s", name), "cannot contain spaces (use hyphens instead)"),
        ("_" in name, "cannot contain underscores (use hyphens instead)"),
        (name.startswith("-"), "cannot start with a hyphen"),
        (name.endswith("-"), "cannot end with a hyphen"),
        ("--" in name, "cannot contain consecutive hyphens"),
        (
            re.search(r"[^a-z0-9-]", name),
            "can only contain lowercase letters, numbers, and hyphens",
        ),
    ):
        if test:
            return f"Change name {why}"
    return "Change name must follow kebab-case convention (e.g., add-auth, refactor-db)"


def main_spec_titles(root: Path) -> dict[str, list[str]]:
    """Every main spec's capability → its requirement names, in file order."""
    out: dict[str, list[str]] = {}
    for req in workspace_requirements([root]):
        out.setdefault(req.capability, []).append(req.name)
    return out


def schema_artifacts(root: Path, change_dir: Path) -> tuple[str, list[tuple[str, str]]]:
    """The change's schema name and its artifacts: (what each generates, what it must hold)."""
    name = schema_name(root, change_dir)
    if name == BUILT_IN:
        return name, list(BUILT_IN_ARTIFACTS)
    data = _schema_yaml(root, name)
    found: list[tuple[str, str]] = []
    for artifact in data.get("artifacts", []) if isinstance(data, dict) else []:
        if isinstance(artifact, dict) and isinstance(artifact.get("generates"), str):
            what = artifact.get("description") or artifact.get("id") or ""
            found.append((artifact["generates"], str(what).strip()))
    return name, found or list(BUILT_IN_ARTIFACTS)


def _schema_yaml(root: Path, name: str) -> Any:
    import yaml  # type: ignore[import-untyped]  # only a project with its own schema needs it

    path = root / "openspec" / "schemas" / name / "schema.yaml"
    try:
        return yaml.load(read_regular(path, 4 << 20).decode("utf-8", "replace"), yaml.BaseLoader)
    except (OSError, yaml.YAMLError):
        return None


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict on a drafted change: its problems (none: it passes)."""

    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems


def gate(root: Path, change_dir: Path) -> GateResult:
    """The planning gate: ``openspec validate NAME --strict`` passes, the task files list an
    unchecked task, every ADDED/MODIFIED requirement has a scenario."""
    problems: list[str] = []
    report = validate_change(change_dir, strict=True, project_root=root)
    for issue in report.issues:
        if issue.level in ("ERROR", "WARNING"):
            where = f"{issue.path}: " if issue.path and issue.path != "file" else ""
            problems.append(f"{issue.level.lower()}: {where}{issue.message}")
    problems += _task_problems(root, change_dir)
    problems += _scenario_problems(change_dir)
    return GateResult(tuple(dict.fromkeys(problems)))


def _task_problems(root: Path, change_dir: Path) -> list[str]:
    unchecked = 0
    for path in task_files(root, change_dir):
        try:
            text = read_tasks_text(path)
        except OSError:
            text = None
        if text is not None:
            doc = parse_tasks(text)
            unchecked += doc.total - doc.completed
    if unchecked:
        return []
    return ["tasks: the task file lists no unchecked task (`- [ ] 1.1 ...`): nothing to build"]


def _scenario_problems(change_dir: Path) -> list[str]:
    out: list[str] = []
    for spec_id, file in discover_spec_files(change_dir / "specs"):
        try:
            text = read_regular(file, 16 << 20).decode("utf-8", "replace")
        except OSError:
            continue
        plan = parse_delta_spec(text)
        for section, blocks in (("ADDED", plan.added), ("MODIFIED", plan.modified)):
            for block in blocks:
                if not _SCENARIO.search(block.raw):
                    out.append(
                        f"specs/{spec_id}/spec.md: the {section} requirement"
                        f' "{block.name}" has no scenario (#### Scenario: ...)'
                    )
    return out


def open_questions(change_dir: Path) -> list[str]:
    """The bullets under ``## Open Questions`` in the change's design.md (none: no file)."""
    try:
        text = read_regular(change_dir / "design.md", 1 << 20).decode("utf-8", "replace")
    except OSError:
        return []
    found = _QUESTIONS.search(text)
    if found is None:
        return []
    rest = text[found.end() :]
    end = _NEXT_SECTION.search(rest)
    body = rest[: end.start()] if end else rest
    items = [m.group(1) for m in map(_ITEM.match, body.splitlines()) if m]
    return [i for i in items if i.strip().lower() not in ("none", "none.", "n/a")]


def change_folder_entries(change_dir: Path) -> list[str]:
    """The files of a change folder (relative, sorted): what the planning prompt lists."""
    out: list[str] = []
    for folder, dirs, files in os.walk(change_dir):
        dirs.sort()
        rel = Path(folder).relative_to(change_dir)
        out += [str(rel / f) if str(rel) != "." else f for f in sorted(files)]
    return out
