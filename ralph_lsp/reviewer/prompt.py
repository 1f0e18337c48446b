"""The reviewer's prompt (SPEC §13 "Review"): context, not history.

Built from the change's own files (proposal, delta specs with their requirements and
scenarios), the run's diff from where it started, the last verification's results and the
conformance table, which another part renders as Markdown (``| scenario | state | test |``) and
hands in as text. It never says which round this is nor what an earlier round found: the same
change, diff and results give a byte-identical prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.openspec.regular_files import read_regular_text
from ralph_lsp.reviewer.edit_check import REVIEW_HEADING

# Markers the bundled demo agent reads (demo/reviewer.py); keep them stable.
ROLE_MARKER = "Role: reviewer"
TASKS_FILE_MARKER = "Tasks file: "
CONFORMANCE_HEADING = "## Conformance"
VERIFICATION_HEADING = "## Verification"
DIFF_HEADING = "## The run's diff"
# Bounds that keep the prompt a size an agent takes (a longer one is handed over as a file).
MAX_FILE_BYTES = 256 * 1024
MAX_DIFF_CHARS = 400_000


@dataclass(frozen=True)
class Check:
    """One verification command of the run's last verification, and how it ended."""

    command: str
    passed: bool
    detail: str = ""  # e.g. "exited 2", or the tail of its output


@dataclass(frozen=True)
class ReviewContext:
    change: str
    root: Path  # where the reviewer works (the run's work tree)
    folder: Path  # the change's folder
    task_files: tuple[Path, ...]
    diff: str  # the run's diff, from where it started
    base: str  # what the diff is from ("commit 1a2b3c4", "the run's first checkpoint")
    checks: tuple[Check, ...] = ()
    conformance: str | None = None  # the rendered conformance table, when there is one


def _read(path: Path) -> str | None:
    try:
        return read_regular_text(path, MAX_FILE_BYTES)
    except (OSError, ValueError):
        return None


def change_files(folder: Path) -> list[tuple[str, str]]:
    """(path relative to the change, text) of its proposal and delta specs, in a fixed order."""
    found = [folder / "proposal.md", *sorted(folder.glob("specs/**/spec.md"))]
    out: list[tuple[str, str]] = []
    for path in found:
        text = _read(path) if path.is_file() else None
        if text is not None:
            out.append((path.relative_to(folder).as_posix(), text))
    return out


def _instructions(ctx: ReviewContext) -> list[str]:
    files = ", ".join(str(p) for p in ctx.task_files)
    return [
        f'You are the reviewer of the OpenSpec change "{ctx.change}" in the project at'
        f" {ctx.root}. You judge whether the change does what its specs say; you do not build.",
        "",
        ROLE_MARKER,
        *(f"{TASKS_FILE_MARKER}{p}" for p in ctx.task_files),
        "",
        "## What to do",
        "- Read the proposal and every requirement and scenario of the delta specs below, then"
        " the diff, the code and the tests, and the verification and conformance results.",
        "- When every requirement and scenario is met, and tested where it should be: change"
        " nothing, and end. That is your approval.",
        "- Otherwise append one unchecked task (`- [ ] …`) per unmet requirement or scenario to"
        f" the task file ({files}), under a `{REVIEW_HEADING}` heading at its end (add it if it"
        " is not there) or after the tasks of the story it belongs to. Each task names the"
        " requirement or scenario and the evidence: the file and line that show it unmet, e.g."
        ' `- [ ] R.1 Scenario "Shout twice" is not met: src/cli.py:12 prints once, and no test'
        " names it`.",
        "- Never check, uncheck, reword or remove an existing line, and write no other file:"
        " the work tree is read-only to you, and an edit that does anything but append"
        " unchecked tasks is undone and counted as no review.",
    ]


def _checks(checks: Sequence[Check]) -> list[str]:
    if not checks:
        return ["No verification command ran."]
    out = []
    for c in checks:
        state = "passed" if c.passed else f"failed ({c.detail})" if c.detail else "failed"
        out.append(f"- `{c.command}`: {state}")
    return out


def _diff(ctx: ReviewContext) -> list[str]:
    text = ctx.diff
    if not text.strip():
        return [f"No file changed since {ctx.base}."]
    cut = len(text) > MAX_DIFF_CHARS
    text = text[:MAX_DIFF_CHARS]
    fence = "`" * max(3, _longest_backticks(text) + 1)
    out = [f"From {ctx.base}:", "", fence + "diff", text.rstrip("\n"), fence]
    if cut:
        out.append(f"(cut at {MAX_DIFF_CHARS} characters: read the rest with git diff)")
    return out


def _longest_backticks(text: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest


def build_review_prompt(ctx: ReviewContext) -> str:
    """The whole prompt: the instructions, the change's files, verification, conformance, diff."""
    out = _instructions(ctx)
    for name, text in change_files(ctx.folder):
        out += ["", f"## {name}", "", text.rstrip("\n")]
    out += ["", VERIFICATION_HEADING, "", *_checks(ctx.checks)]
    if ctx.conformance is not None:
        out += ["", CONFORMANCE_HEADING, "", ctx.conformance.rstrip("\n")]
    out += ["", DIFF_HEADING, "", *_diff(ctx)]
    return "\n".join(out) + "\n"
