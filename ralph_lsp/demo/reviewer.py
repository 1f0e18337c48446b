"""The demo agent as a reviewer (SPEC §13 "Review") — deterministic, NOT an AI.

When its prompt carries the reviewer's ``Role: reviewer`` line, the demo agent reads the
prompt's conformance table (``| scenario | state | test |``) and appends to the task file one
unchecked task per scenario that is not ``verified``, under a ``## Review`` heading, naming the
scenario, its state and the evidence (the test, and the scenario's line in its delta spec, as
the prompt shows the spec). When every scenario is verified, or the prompt has no table, it
changes nothing: an approval. It appends in place (the file is the one thing a reviewer's
sandbox lets it write: no temporary file beside it).
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ralph_lsp.reviewer.edit_check import REVIEW_HEADING
from ralph_lsp.reviewer.prompt import (
    CONFORMANCE_HEADING,
    DIFF_HEADING,
    ROLE_MARKER,
    VERIFICATION_HEADING,
)

# The prompt's sections after the delta specs (reviewer/prompt.py), which end the last one.
SECTIONS_AFTER_SPECS = (VERIFICATION_HEADING, CONFORMANCE_HEADING, DIFF_HEADING)
_SCENARIO_RE = re.compile(r"^####\s+Scenario:\s*(.+?)\s*$")


@dataclass(frozen=True)
class Unmet:
    scenario: str
    state: str
    test: str


def is_review(prompt: str) -> bool:
    return any(line.strip() == ROLE_MARKER for line in prompt.splitlines()[:20])


def _section(prompt: str, heading: str) -> list[str]:
    """The lines of the last ``heading`` section of the prompt, up to the next ``## ``."""
    lines = prompt.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == heading]
    if not starts:
        return []
    body = []
    for line in lines[starts[-1] + 1 :]:
        if line.startswith("## "):
            break
        body.append(line)
    return body


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]


def unmet(prompt: str) -> list[Unmet]:
    """The table's scenarios whose state is not ``verified``, in the table's order."""
    rows = [line for line in _section(prompt, CONFORMANCE_HEADING) if line.lstrip().startswith("|")]
    out = []
    for line in rows[2:]:  # after the header and its |---| line
        cells = _cells(line)
        if len(cells) < 2 or not cells[0]:
            continue
        state = cells[1].strip(" ✓✗○").lower()
        if state != "verified":
            test = cells[2] if len(cells) > 2 and cells[2] not in ("", "—", "-") else ""
            out.append(Unmet(cells[0], state or "unknown", test))
    return out


def scenario_lines(prompt: str) -> dict[str, str]:
    """``title`` → ``specs/…/spec.md:N`` for each scenario of the delta specs in the prompt."""
    found: dict[str, str] = {}
    spec: str | None = None
    line_no = 0
    for line in prompt.splitlines():
        if line.startswith("## specs/") and line.endswith("spec.md"):
            spec, line_no = line[3:], -1  # the spec's first line follows a blank line
            continue
        if line in SECTIONS_AFTER_SPECS:  # the spec's own "## ADDED …" headings are its text
            spec = None
        if spec is None:
            continue
        line_no += 1
        m = _SCENARIO_RE.match(line)
        if m and line_no > 0:
            found.setdefault(" ".join(m.group(1).split()), f"{spec}:{line_no}")
    return found


def task_lines(prompt: str, first: int = 0) -> list[str]:
    """The tasks the review appends: one per unmet scenario, with its evidence, numbered
    ``R.<first + 1>`` on."""
    where = scenario_lines(prompt)
    out = []
    for n, item in enumerate(unmet(prompt), 1):
        title = item.scenario.rsplit("/", 1)[-1]
        evidence = [where[title]] if title in where else []
        evidence.append(f"test {item.test}" if item.test else "no test names it")
        said = ", ".join(evidence)
        out.append(f"- [ ] R.{first + n} Scenario {item.scenario} is {item.state}: {said}")
    return out


def append_review(path: Path, tasks: list[str]) -> str:
    """Append ``tasks`` at the end of ``path``, in place, under a ``## Review`` heading unless
    the file has one already; the text appended."""
    old = path.read_bytes()
    head = "" if old.endswith(b"\n") or not old else "\n"
    has_heading = REVIEW_HEADING.encode() in old.splitlines()
    text = head + ("" if has_heading else f"\n{REVIEW_HEADING}\n") + "\n" + "\n".join(tasks)
    text += "\n"
    with path.open("ab") as f:
        f.write(text.encode("utf-8"))
    return text


class Out(Protocol):
    """The demo agent's printer (``agent.Output``)."""

    def say(self, text: str) -> None: ...
    def edit(self, tool_id: str, path: Path, old: str, new: str) -> None: ...
    def tool_result(self, tool_id: str, content: str, is_error: bool) -> None: ...
    def result(self, *, is_error: bool, text: str, turns: int, started: float) -> None: ...


def _numbered(path: Path) -> int:
    """How many review tasks (``R.<n>``) the file holds already."""
    text = path.read_bytes().decode("utf-8", "replace")
    return len(re.findall(r"^\s*[-*+]\s*\[.\]\s*R\.\d+", text, re.MULTILINE))


def run_review(prompt: str, path: Path, out: Out, started: float) -> int:
    """Review: append a task per unmet scenario, or approve by writing nothing; the exit code."""
    tasks = task_lines(prompt, _numbered(path))
    if not tasks:
        text = "Demo reviewer (not an AI): every scenario is verified; approved, nothing written."
        out.say(text)
        out.result(is_error=False, text=text, turns=1, started=started)
        return 0
    out.say(f"Demo reviewer (not an AI): {len(tasks)} scenario(s) not verified")
    tool_id = f"toolu_demo_review_{uuid.uuid4().hex[:8]}"
    try:
        added = append_review(path, tasks)
    except OSError as exc:
        out.result(is_error=True, text=f"cannot append to {path}: {exc}", turns=1, started=started)
        return 1
    out.edit(tool_id, path, "", added)
    out.tool_result(tool_id, f"The file {path} has been updated successfully.", False)
    text = f"Demo reviewer appended {len(tasks)} task(s) ({time.monotonic() - started:.1f}s)."
    out.result(is_error=False, text=text, turns=2, started=started)
    return 0
