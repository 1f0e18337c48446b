"""The demo agent's planning (SPEC §14) — a script, NOT an AI.

Given a planning prompt (the ``Planning change folder: <path>`` line and its ``## Description``
section, see ``loop/plan_prompt.py``), it writes a change that passes ``openspec validate NAME
--strict``, deterministically from the description: ``proposal.md``; one delta spec
``specs/<capability>/spec.md`` (the change's name without its leading verb) with an ADDED
requirement per sentence of the description, each with a scenario; ``design.md``, whose
``## Open Questions`` are the description's questions (answered, and so gone, once the prompt
carries guidance); and ``tasks.md``, one task per requirement and one for the tests. The same
prompt writes the same bytes. It writes nothing outside the change folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

# keep in step with loop/plan_prompt.py's PLAN_MARKER and DESCRIPTION_MARKER
_FOLDER_RE = re.compile(r"^Planning change folder:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_SECTION_RE = re.compile(r"^## (Description|Guidance)[ \t]*$", re.MULTILINE)
_VERBS = ("add", "update", "fix", "remove", "change", "support", "make", "improve", "new")
MAX_REQUIREMENTS = 6

Say = Callable[[str], None]


def is_planning(prompt: str) -> bool:
    return _FOLDER_RE.search(prompt) is not None


def _section(prompt: str, title: str) -> str:
    for m in _SECTION_RE.finditer(prompt):
        if m.group(1) == title:
            rest = prompt[m.end() :]
            end = re.search(r"^## ", rest, re.MULTILINE)
            return (rest[: end.start()] if end else rest).strip()
    return ""


def capability_of(name: str) -> str:
    words = name.split("-")
    while len(words) > 1 and words[0] in _VERBS:
        words = words[1:]
    return "-".join(words)


def sentences(description: str) -> tuple[list[str], list[str]]:
    """(statements, questions) of the description, in order, whitespace folded."""
    text = " ".join(description.split())
    parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+", text) if p.strip()]
    statements = [p.rstrip(".!") for p in parts if not p.endswith("?")]
    questions = [p for p in parts if p.endswith("?")]
    return statements[:MAX_REQUIREMENTS], questions


def _title(sentence: str) -> str:
    words = sentence.split()
    title = " ".join(words[:10])
    title = re.sub(r"[#`*\[\]]", "", title).strip(" ,;:") or "The described behaviour"
    return title[:1].upper() + title[1:]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def write_plan(folder: Path, description: str, guidance: str, say: Say) -> list[Path]:
    """Write the change's artifacts into ``folder``; the files written."""
    name = folder.name
    capability = capability_of(name)
    statements, questions = sentences(description)
    if not statements:
        statements = [f"Provide {name.replace('-', ' ')}"]
    titles = list(dict.fromkeys(_title(s) for s in statements))
    files = {
        folder / "proposal.md": _proposal(name, capability, description, titles),
        folder / "specs" / capability / "spec.md": _spec(statements, titles),
        folder / "design.md": _design(description, questions, guidance),
        folder / "tasks.md": _tasks(titles, capability),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.read_text("utf-8", "replace") == text:
            continue
        path.write_text(text, "utf-8")
        say(f"Wrote {path.relative_to(folder)}")
    return list(files)


def _proposal(name: str, capability: str, description: str, titles: list[str]) -> str:
    why = " ".join(description.split()) or name.replace("-", " ")
    why = why[:700]
    changes = "\n".join(f"- {t}." for t in titles)
    return (
        f"# {name}\n\n## Why\n{why}\n\nThis change is planned first, so that its behaviour is"
        " specified, validated and approved by a person before anything is built.\n\n"
        f"## What Changes\n{changes}\n\n## Impact\n- Affected specs: `{capability}`\n"
        "- Affected code: the modules that provide this behaviour, and their tests\n"
    )


def _spec(statements: list[str], titles: list[str]) -> str:
    out = ["## ADDED Requirements", ""]
    seen: set[str] = set()
    for sentence, title in zip(statements, (_title(s) for s in statements), strict=True):
        if title in seen:
            continue
        seen.add(title)
        out += [
            f"### Requirement: {title}",
            f"The system SHALL {_lower_first(sentence)}.",
            "",
            f"#### Scenario: {title} as described",
            f"- **WHEN** {_lower_first(sentence)} is asked for",
            "- **THEN** the result is the one this requirement describes",
            "",
        ]
    assert titles
    return "\n".join(out)


def _design(description: str, questions: list[str], guidance: str) -> str:
    out = [
        "# Design",
        "",
        "## Context",
        " ".join(description.split()) or "(no description)",
        "",
        "## Decisions",
        "- Build the smallest thing that meets every scenario of the delta spec.",
    ]
    answered = [line.strip("- ").strip() for line in guidance.splitlines() if line.strip()]
    out += [f"- As the operator directed: {a}" for a in answered]
    out += ["", "## Risks", "- None known beyond the scenarios not being met.", ""]
    open_now = [] if answered else questions
    out += ["## Open Questions"]
    out += [f"- {q}" for q in open_now] or ["- None."]
    out.append("")
    return "\n".join(out)


def _tasks(titles: list[str], capability: str) -> str:
    out = ["# Tasks", "", f"## 1. {capability}"]
    for n, title in enumerate(titles, 1):
        out.append(f"- [ ] 1.{n} Implement: {title}")
    out.append(f"- [ ] 1.{len(titles) + 1} Test every scenario of the {capability} delta spec")
    out.append("")
    return "\n".join(out)


def plan(prompt: str, say: Say) -> str:
    """Write the plan a planning prompt asks for; the summary line (``ValueError``: none)."""
    m = _FOLDER_RE.search(prompt)
    if m is None:
        raise ValueError("the prompt has no 'Planning change folder: <path>' line")
    folder = Path(m.group(1).strip().strip("`\"'"))
    if not folder.is_dir():
        raise ValueError(f"the change folder {folder} does not exist")
    say(f"Demo agent (not an AI): planning {folder.name} from its description")
    written = write_plan(folder, _section(prompt, "Description"), _section(prompt, "Guidance"), say)
    return f"Demo agent planned {folder.name}: {len(written)} artifacts"
