"""tasks.md + a run's status → code lenses and diagnostics (SPEC §5). Pure: no I/O, no state."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import RunStatus
from ralph_lsp.server.documents import DocState

SOURCE = "ralph"
# The client's own command: it asks for the guidance text, then calls ralph.guide.
SEND_GUIDANCE = "ralph.sendGuidance"
# The client's own command: it asks for guidance, then calls ralph.run with it.
RUN_WITH_GUIDANCE = "ralph.runChangeWithGuidance"
NOOP = "ralph.noop"  # the server's no-op command, carried by display-only lenses
ENDED_BADLY = (RunState.STUCK, RunState.EXHAUSTED, RunState.FAILED)


def column(text: str, index: int, encoding: str | None) -> int:
    """A Python string index as a column in the client's position encoding (UTF-16 by default)."""
    index = max(0, min(index, len(text)))
    if encoding == types.PositionEncodingKind.Utf32:
        return index
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text[:index].encode("utf-8", errors="surrogatepass"))
    prefix = text[:index]
    return index + sum(1 for c in prefix if ord(c) > 0xFFFF)


def _range(state: DocState, line: int, start: int, end: int, enc: str | None) -> types.Range:
    text = state.line(line)
    return types.Range(
        start=types.Position(line=line, character=column(text, start, enc)),
        end=types.Position(line=line, character=column(text, end, enc)),
    )


def _line_range(state: DocState, line: int, enc: str | None) -> types.Range:
    text = state.line(line)
    start = len(text) - len(text.lstrip())
    return _range(state, line, start, len(text), enc)


def is_running(status: RunStatus | None) -> bool:
    return status is not None and not status.final


@dataclass(frozen=True)
class Elsewhere:
    """A run of this change in another ralph-lsp process (a CLI, another editor)."""

    pid: int
    iteration: int


def code_lenses(
    state: DocState,
    root: Path,
    change: str,
    status: RunStatus | None,
    elsewhere: Elsewhere | None = None,
) -> list[types.CodeLens]:
    doc = state.doc
    ref = [{"change": change, "root": root.as_uri()}]
    counts = f"{doc.completed}/{doc.total} tasks"
    lenses: list[types.CodeLens] = []

    def lens(
        line: int, title: str, command: str = NOOP, arguments: list[Any] | None = None
    ) -> None:
        pos = types.Position(line=line, character=0)
        lenses.append(
            types.CodeLens(
                range=types.Range(start=pos, end=pos),
                command=types.Command(title=title, command=command, arguments=arguments),
            )
        )

    running = is_running(status)
    if status is not None and running:
        at = "verifying" if status.phase == "verifying" else f"iteration {status.iteration}"
        lens(0, f"■ Stop · {at} · {counts}", "ralph.stop", list(ref))
        lens(0, "✎ Guide", SEND_GUIDANCE, list(ref))
    elif elsewhere is not None:
        lens(0, f"● running elsewhere · iteration {elsewhere.iteration} · {counts}")
    else:
        lens(0, f"▶ Run change · {counts}", "ralph.run", list(ref))
        if doc.total:
            lens(0, "✎ Run with guidance", RUN_WITH_GUIDANCE, list(ref))
    idle = not running and elsewhere is None

    working = status.story if status is not None and running else None
    for story in doc.stories:
        if story.line < 0:
            continue  # tasks before the first heading: no heading to put a lens on
        if story.total and story.done:
            lens(story.line, "✓ done")
        else:
            lens(story.line, f"{story.completed}/{story.total} done")
        if idle and any(doc.workable(t) for t in story.tasks):
            lens(story.line, "▶ Run story", "ralph.run", [{**ref[0], "story": story.id}])
    for task in doc.tasks:
        if task.done:
            lens(task.line, "✓ done")
        elif doc.blocked and doc.blocked_reason(task) is not None:
            lens(task.line, "⊘ blocked")
        elif working is not None and task.story_id == working:
            lens(task.line, "● in progress")
        else:
            lens(task.line, "○ pending")
    return lenses


def diagnostics(
    state: DocState, status: RunStatus | None, encoding: str | None
) -> list[types.Diagnostic]:
    doc = state.doc
    out: list[types.Diagnostic] = []
    if state.too_large:
        size = f"{state.too_large / 1e6:.1f} MB"
        out.append(
            types.Diagnostic(
                range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                message=f"This buffer is {size}, more than Ralph analyses (16 MiB): its tasks"
                " are not counted and it gets no task lenses or diagnostics until it is smaller.",
                severity=types.DiagnosticSeverity.Warning,
                source=SOURCE,
                code="too-large",
            )
        )
    for f in doc.findings:
        out.append(
            types.Diagnostic(
                range=_range(state, f.line, f.start, f.end, encoding),
                message=f.message,
                severity=types.DiagnosticSeverity.Warning,
                source=SOURCE,
                code=f.code,
            )
        )
    out.extend(_blocked(state, encoding))
    if status is not None and is_running(status) and status.story is not None:
        story = doc.story(status.story)
        if story is not None and story.line >= 0:
            out.append(
                types.Diagnostic(
                    range=_line_range(state, story.line, encoding),
                    message=(
                        f"Ralph is working on this story"
                        f" (run {status.run_id}, iteration {status.iteration})"
                    ),
                    severity=types.DiagnosticSeverity.Information,
                    source=SOURCE,
                    code="in-progress",
                )
            )
    if status is not None and status.refusals:
        out.append(_refused(state, status, encoding))
    if status is not None and status.state in ENDED_BADLY:
        out.extend(_not_done(state, status, encoding))
    out.sort(key=lambda d: (d.range.start.line, d.range.start.character))
    return out


def _blocked(state: DocState, encoding: str | None) -> list[types.Diagnostic]:
    """A warning on each open blocked task, holding its reason (SPEC §5 v2)."""
    return [
        types.Diagnostic(
            range=_line_range(state, task.line, encoding),
            message=f"blocked: {why or '(no reason given)'}; delete the `blocked:` line"
            " to let Ralph work on it",
            severity=types.DiagnosticSeverity.Warning,
            source=SOURCE,
            code="blocked",
        )
        for task, why in state.doc.blocked_open()
    ]


def _not_done(state: DocState, status: RunStatus, encoding: str | None) -> list[types.Diagnostic]:
    """After a run ended stuck, exhausted or failed: a warning on each task it left open."""
    doc = state.doc
    reason = f": {status.reason}" if status.reason else ""
    return [
        types.Diagnostic(
            range=_line_range(state, task.line, encoding),
            message=f"not done when run {status.run_id} ended {status.state}{reason}",
            severity=types.DiagnosticSeverity.Warning,
            source=SOURCE,
            code=f"run-{status.state}",
        )
        for task in doc.tasks
        # a blocked task has its own warning
        if not task.done and not (doc.blocked and doc.blocked_reason(task) is not None)
    ]


def _refused(state: DocState, status: RunStatus, encoding: str | None) -> types.Diagnostic:
    """The tool calls the agent was refused, on the story it works on (else line 0)."""
    story = state.doc.story(status.story) if status.story is not None else None
    line = story.line if story is not None and story.line >= 0 else 0
    rules = ", ".join(status.refusals[-5:])
    more = len(status.refusals) - 5
    fix = "allow what it needs with ralph.allowedTools"
    if any(r.startswith("Sandbox(") for r in status.refusals):  # the run's sandbox (SPEC §10)
        fix += ", or widen the sandbox (ralph.sandbox.allowWrite, ralph.sandbox.allowedDomains)"
    return types.Diagnostic(
        range=_line_range(state, line, encoding),
        message=f"the agent was refused: {rules}"
        + (f" and {more} more" if more > 0 else "")
        + f" — {fix}",
        severity=types.DiagnosticSeverity.Warning,
        source=SOURCE,
        code="refused",
    )
