"""Seeded mutations of corpus changes: the edits an author gets wrong, one per case."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

Mutation = Callable[[random.Random, str], str]


def _lines_matching(text: str, pattern: str) -> list[int]:
    return [i for i, line in enumerate(text.split("\n")) if re.match(pattern, line)]


def _edit_line(rng: random.Random, text: str, pattern: str, edit: Callable[[str], str]) -> str:
    lines = text.split("\n")
    hits = _lines_matching(text, pattern)
    if not hits:
        return text + "\n### Requirement: Added by the fuzz\n"
    i = rng.choice(hits)
    lines[i] = edit(lines[i])
    return "\n".join(lines)


def scenario_as_h3(rng: random.Random, text: str) -> str:
    return _edit_line(rng, text, r"#### ", lambda line: line[1:])


def requirement_as_h4(rng: random.Random, text: str) -> str:
    return _edit_line(rng, text, r"### Requirement:", lambda line: "#" + line)


def drop_shall(rng: random.Random, text: str) -> str:
    return re.sub(r"\b(SHALL|MUST)\b", rng.choice(["will", "shall", "should"]), text)


def duplicate_requirement(rng: random.Random, text: str) -> str:
    blocks = re.findall(r"(### Requirement:.*?)(?=\n### |\n## |\Z)", text, flags=re.S)
    if not blocks:
        return text
    return text.rstrip("\n") + "\n\n" + rng.choice(blocks).rstrip("\n") + "\n"


def rename_section(rng: random.Random, text: str) -> str:
    new = rng.choice(
        [
            "## Added requirements",
            "## New Requirements",
            "##  ADDED Requirements",
            "## Requirements",
        ]
    )
    return _edit_line(rng, text, r"## (ADDED|MODIFIED|REMOVED|RENAMED) Requirements", lambda _: new)


def fence_a_scenario(rng: random.Random, text: str) -> str:
    return _edit_line(rng, text, r"#### ", lambda line: "```\n" + line + "\n```")


def crlf(rng: random.Random, text: str) -> str:
    return text.replace("\n", rng.choice(["\r\n", "\r"]))


def drop_scenario(rng: random.Random, text: str) -> str:
    scenarios = list(re.finditer(r"#### [^\n]*\n(?:(?!#)[^\n]*\n?)*", text))
    if not scenarios:
        return text
    m = rng.choice(scenarios)
    return text[: m.start()] + text[m.end() :]


def unpaired_rename(rng: random.Random, text: str) -> str:
    side = rng.choice(["FROM", "TO"])
    return (
        text.rstrip("\n") + f"\n\n## RENAMED Requirements\n- {side}: `### Requirement: Old name`\n"
    )


def empty_body(rng: random.Random, text: str) -> str:
    return re.sub(r"(### Requirement:[^\n]*\n)\n?[^#\n][^\n]*\n", r"\1", text, count=1)


def bom_and_tabs(rng: random.Random, text: str) -> str:
    return "\ufeff" + text.replace("### Requirement: ", "###\tRequirement:\t", 1)


DELTA_MUTATIONS: list[Mutation] = [
    scenario_as_h3,
    requirement_as_h4,
    drop_shall,
    duplicate_requirement,
    rename_section,
    fence_a_scenario,
    crlf,
    drop_scenario,
    unpaired_rename,
    empty_body,
    bom_and_tabs,
]


def mutate_change(rng: random.Random, change: Path, main_specs: Path) -> str:
    """Apply one or two mutations to one delta spec of `change` (or delete its main spec)."""
    deltas = sorted(change.glob("specs/**/spec.md"))
    if not deltas:
        return "no delta"
    delta = rng.choice(deltas)
    capability = delta.parent.relative_to(change / "specs")
    if rng.random() < 0.1 and (main_specs / capability / "spec.md").exists():
        (main_specs / capability / "spec.md").unlink()
        return f"deleted main spec {capability}"
    return f"{capability}: {mutate_file(rng, delta)}"


def mutate_file(rng: random.Random, file: Path) -> str:
    """One or two mutations of a spec file, in place; their names."""
    text = file.read_bytes().decode("utf-8", errors="replace")
    names = []
    for mutation in rng.sample(DELTA_MUTATIONS, rng.choice([1, 1, 2])):
        text = mutation(rng, text)
        names.append(mutation.__name__)
    file.write_bytes(text.encode("utf-8"))
    return ", ".join(names)
