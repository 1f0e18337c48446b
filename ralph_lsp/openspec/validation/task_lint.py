"""The CLI's task-file warnings on `validate <change>`: no checkbox, duplicate ids, wrong group."""

from __future__ import annotations

import re
from pathlib import Path

from ralph_lsp.openspec.task_rule import match_task
from ralph_lsp.openspec.validation.discovery import read_once
from ralph_lsp.openspec.validation.issues import Issue
from ralph_lsp.openspec.validation.metadata import project_schemas, top_level_scalars
from ralph_lsp.openspec.validation.text import NS, WS_SET, LazyPattern, S, trim

_LEVEL_TWO = LazyPattern(r"^ {0,3}##(?!#)(?:[ \t]+|[ \t]*\r?$)")
_GROUP = LazyPattern(r"^ {0,3}##[ \t]+([0-9]+)\.(?:[ \t]|\r?$)")
_LIST_ITEM = LazyPattern(rf"^{S}*(?:[-*+]|[0-9]{{1,9}}[.)]){S}+{NS}")
_FENCE = LazyPattern(r"^ {0,3}(`{3,}|~{3,})(.*)")
_FRONT = LazyPattern(r"^-{3}\s*$")
NO_CHECKBOX = (
    "This change counts as 0 tasks: no line in its tracked task files is a checkbox, so "
    '"openspec list" and '
    '"openspec status" report no work and "openspec archive" has nothing to flag as '
    "incomplete. Write each task "
    'as "- [ ] 1.1 Description".'
)


def _schema_name(change_dir: Path, root: Path, overrides: dict[Path, str]) -> str:
    for file in (change_dir / ".openspec.yaml", root / "openspec" / "config.yaml"):
        try:
            text = read_once(file, overrides)
        except OSError:
            continue
        schema = top_level_scalars(text).get("schema")
        if schema:
            return schema
    return "spec-driven"


def task_file_issues(change_dir: Path, root: Path, overrides: dict[Path, str]) -> list[Issue]:
    """Warnings for the change's tracked task file (`tasks.md` for the built-in schema).
    `overrides` holds the texts standing for files; the reads here add to it (`read_once`)."""
    schema = _schema_name(change_dir, root, overrides)
    built_in = schema == "spec-driven" and schema not in project_schemas(root)
    known = built_in or schema in project_schemas(root)
    file = change_dir / "tasks.md"
    try:
        text = read_once(file, overrides)
    except OSError:
        return []
    issues: list[Issue] = []
    if known and not any(match_task(line) for line in text.split("\n")):
        line = _first_list_item(text)
        if line is not None:
            issues.append(
                Issue(
                    "WARNING",
                    "tasks.md",
                    NO_CHECKBOX,
                    "openspec.tasks.no-checkbox",
                    line=line,
                    file=file,
                    at=line - 1,
                )
            )
    if built_in:
        issues += numbering_issues(text, file)
    return issues


_DIGITS = "0123456789"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def leading_task_id(text: str) -> str | None:
    r"""The group of `^([0-9]+(?:\.[0-9]+)+(?:[A-Za-z]+)?)(?=S|$)`, as string operations: the
    greedy reading is the only one that can match (a shorter run leaves a digit, a dot or a
    letter where whitespace or the end must follow)."""
    end, size = 0, len(text)
    while end < size and text[end] in _DIGITS:
        end += 1
    groups = 0
    while 0 < end < size - 1 and text[end] == "." and text[end + 1] in _DIGITS:
        end += 2
        while end < size and text[end] in _DIGITS:
            end += 1
        groups += 1
    while groups and end < size and text[end] in _LETTERS:
        end += 1
    if not groups or (end < size and text[end] not in WS_SET):
        return None
    return text[:end]


def numbering_issues(text: str, file: Path) -> list[Issue]:
    lines = text.split("\n")
    if not any(_GROUP.match(line) for line in lines):
        return []
    first: dict[str, int] = {}
    out: list[Issue] = []
    group: str | None = None
    for index, line in enumerate(lines):
        if _LEVEL_TWO.match(line):
            g = _GROUP.match(line)
            group = g.group(1) if g else None
        if group is None:
            continue
        m = match_task(line)
        if m is None:
            continue
        description = trim(re.split("[\r\u2028\u2029]", line[m.end() :], maxsplit=1)[0])
        task_id = leading_task_id(description)
        if task_id is None:
            continue
        n = index + 1
        task_group = task_id.split(".")[0]
        if re.sub(r"^0+(?=\d)", "", task_group) != re.sub(r"^0+(?=\d)", "", group):
            out.append(
                Issue(
                    "WARNING",
                    "tasks.md",
                    (
                        f'Task "{task_id}" is under group {group}, but its leading number '
                        f"points to group {task_group}. "
                        f"Move it to group {task_group} or renumber it."
                    ),
                    "openspec.tasks.wrong-group",
                    line=n,
                    file=file,
                    at=index,
                )
            )
        if task_id in first:
            out.append(
                Issue(
                    "WARNING",
                    "tasks.md",
                    f'Task ID "{task_id}" is duplicated; it was first declared on line '
                    f"{first[task_id]}.",
                    "openspec.tasks.duplicate-id",
                    line=n,
                    file=file,
                    at=index,
                )
            )
        else:
            first[task_id] = n
    return out


def _indent(line: str) -> int:
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _first_list_item(content: str) -> int | None:
    lines = content.split("\n")
    index = _skip_front_matter(lines)
    fence: tuple[str, int] | None = None
    in_comment = False
    for i in range(index, len(lines)):
        line = lines[i]
        if in_comment:
            in_comment = "-->" not in line
            continue
        f = _FENCE.match(line)
        if f:
            if fence is None:
                fence = (f.group(1)[0], len(f.group(1)))
            elif f.group(1)[0] == fence[0] and len(f.group(1)) >= fence[1] and not trim(f.group(2)):
                fence = None
            continue
        if fence is not None:
            continue
        if line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line[line.index("<!--") + 4 :]
            continue
        if _LIST_ITEM.match(line) and _indent(line) < 4:
            return i + 1
    return None


def _skip_front_matter(lines: list[str]) -> int:
    if not lines or not _FRONT.match(lines[0].lstrip("\ufeff").rstrip()):
        return 0
    for i in range(1, len(lines)):
        if _FRONT.match(lines[i].rstrip()):
            return i + 1
    return 0
