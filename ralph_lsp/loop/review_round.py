"""The review round (SPEC §13 "Review"): where a run would succeed, a fresh reviewer judges it.

The loop calls :func:`review_round` at the point of success (every task checked, verification
and conformance passing) when ``ralph.review.agent`` names a reviewer. One round:

1. confinement: with the sandbox on, the reviewer's own profile (the work tree read-only but
   the task files, ``loop/sandboxing.py``); with it off, the work tree taken as a git commit
   first (``git/review_guard.py``), and without either the review is refused, never run
   unconfined (the run fails and says why);
2. the prompt (``reviewer/prompt.py``): proposal, delta specs, the run's diff from where it
   started, the verification results and the conformance table;
3. the reviewer spawned once, as an iteration is (its output in the log and in
   ``review-<n>.log``), but never stopped for "every task checked": it starts that way;
4. the check of its edit (``reviewer/edit_check.py``): each task file's bytes before and after;
   anything but appended unchecked tasks puts every task file's bytes back, and with the
   sandbox off every write outside them is undone against the commit of step 1;
5. the round in the record (``reviews``), the log and a ``review`` event, and what comes next
   (``reviewer/rounds.py``): approved ends the run ``succeeded`` (``… ; review approved``),
   added tasks go back to the loop, and past ``maxRounds`` rounds that did not approve the
   run ends ``exhausted``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ralph_lsp.agents.reviewer_invocation import Reviewer, review_invocation, reviewer_of
from ralph_lsp.git import GitError
from ralph_lsp.git import review_guard as guard
from ralph_lsp.loop import policy
from ralph_lsp.loop.iteration import AgentIteration, IterationOutcome, Level
from ralph_lsp.loop.run_view import RunView as Run
from ralph_lsp.loop.sandboxing import REFUSAL_TOOL
from ralph_lsp.openspec.regular_files import read_regular
from ralph_lsp.openspec.tasks import MAX_TASKS_BYTES, TasksDoc
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.proc.process import AgentStartError, SpawnSpec
from ralph_lsp.reviewer.edit_check import check_edit
from ralph_lsp.reviewer.prompt import MAX_DIFF_CHARS, Check, ReviewContext, build_review_prompt
from ralph_lsp.reviewer.rounds import RoundRecord, after_round, verdict_of
from ralph_lsp.runs import safe_dir
from ralph_lsp.runs.events import ReviewEvent
from ralph_lsp.runs.history import atomic_write_text
from ralph_lsp.runs.receipts import costs_json
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import now_iso


class _Hooks:
    """What the reviewer's spawn needs of its run: the run's own, but tasks.md never reads as
    "every task checked" (it starts that way; the finish grace would stop the reviewer)."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self.settings = run.settings
        self.stop_event = run.stop_event

    def log(self, text: str, level: Level = "info") -> None:
        self._run.log(text, level)

    def update(self, *, transition: bool = False, **changes: Any) -> None:
        self._run.update(transition=transition, **changes)

    def poll_tasks(self) -> tuple[int, int]:
        return 0, 0

    def reason(self) -> str | None:
        return self._run.reason()

    async def paced(self) -> None:
        await self._run.paced()


class _RawLog:
    """The reviewer's raw output, as an iteration's: ``review-<n>.log`` in the run's folder."""

    def __init__(self, path: Path | None, cap: int) -> None:
        self.file = None
        self.left = cap
        if path is not None:
            with contextlib.suppress(OSError):
                self.file = open(path, "ab", opener=safe_dir.opener())  # noqa: SIM115

    def write(self, _stream: str, chunk: bytes) -> None:
        if self.file is not None and self.left > 0:
            with contextlib.suppress(OSError):
                self.file.write(chunk[: self.left])
            self.left -= len(chunk)

    def close(self) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):
                self.file.close()


@dataclass
class _Round:
    """What one round found, gathered as it goes."""

    n: int
    reviewer: Reviewer
    files: list[Path]
    saved: dict[Path, bytes | None]
    before: guard.Before | None = None
    started: str = field(default_factory=now_iso)
    added: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    listed: dict[Path, set[str]] = field(default_factory=dict)  # the task files' folders


def _read(path: Path, *, follow: bool = True) -> bytes | None:
    """A task file's bytes, or None when it is no regular file (``follow=False``: nor a link:
    after the round, what the reviewer left is never read or written through a link)."""
    try:
        return read_regular(path, MAX_TASKS_BYTES, follow=follow)
    except OSError:
        return None


async def _confine(run: Run, rnd: _Round) -> str | None:
    """The commit the round is checked against (sandbox off; for the diff either way), or why
    the review cannot run confined. Sandboxed, the run's latest checkpoint serves the diff (the
    work tree as the last iteration left it): no writes elsewhere to find, no snapshot to take."""
    latest = run.git.latest() if run.git is not None else None
    if run.sandbox is not None and latest is not None:
        rnd.before = guard.Before(*latest)
        return None
    repo = await asyncio.to_thread(guard.repo_of, run.work.root)
    if repo is not None:
        message = f"ralph: {run.change.name} before review {rnd.n} (run {run.id})"
        try:
            rnd.before = await asyncio.to_thread(guard.before_review, repo, message)
        except (GitError, OSError) as exc:
            if run.sandbox is None:
                return f"the work tree cannot be recorded before the review ({exc})"
    if run.sandbox is None and rnd.before is None:
        return (
            f"the sandbox is off and {run.work.root} is not in a git work tree: nothing would"
            " hold the reviewer to the task file, and a reviewer is never run unconfined"
            " (turn the sandbox on, or put the project in git)"
        )
    return None


async def _context(run: Run, rnd: _Round, conformance: str | None) -> ReviewContext:
    diff, base = "", "the run's start (not in git: no diff)"
    if rnd.before is not None:
        start = run.git.started_from if run.git is not None else None
        start = start or rnd.before.repo.rev("HEAD")
        base = f"commit {start[:12]}" if start else "the empty tree"
        try:
            diff, _ = await asyncio.to_thread(guard.run_diff, rnd.before, start, MAX_DIFF_CHARS)
        except GitError as exc:
            base = f"the run's start (no diff: {exc})"
    checks = tuple(
        Check(r.command, r.passed, "" if r.passed else r.describe())
        for r in run.verification.last_results
    )
    return ReviewContext(
        change=run.change.name,
        root=run.work.root,
        folder=run.work.folder,
        task_files=tuple(rnd.files),
        diff=diff,
        base=base,
        checks=checks,
        conformance=conformance,
    )


def _prompt_file(run: Run, n: int, prompt: str) -> tuple[Path, bool]:
    """Where the prompt is written: ``review-<n>.md`` beside the run's iterations, else a
    private temporary file (returned True: removed after)."""
    first = run.history.prompt_file(0)
    if first is not None:
        path = first.parent / f"review-{n}.md"
        with contextlib.suppress(OSError):
            path.write_text(prompt, encoding="utf-8")
            return path, False
    folder = None if run.sandbox is None else run.sandbox.box.policy.tmp_dir
    fd, name = tempfile.mkstemp(prefix="ralph-review-", suffix=".md", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(prompt)
    return Path(name), True


# Long: the spawn as agent_spawn._spawn does it, in the same order, with the reviewer's invocation.
async def _spawn(run: Run, rnd: _Round, prompt: str, prompt_file: Path) -> IterationOutcome:
    s = run.settings
    try:
        inv = review_invocation(
            rnd.reviewer,
            prompt,
            prompt_file,
            cwd=run.work.root,
            change_folder=run.work.folder,
            task_files=rnd.files,
            agent_user_config=s.agent_user_config,
            env={**os.environ, **s.env},
            sandboxed=run.sandbox is not None,
        )
        for path, text in inv.files.items():
            Path(path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write_text(Path(path), text)
    except (ValueError, OSError) as exc:
        return IterationOutcome(start_error=AgentStartError("not_found", str(exc)))
    env = {**os.environ, **inv.env, **s.env}
    spec = SpawnSpec(argv=inv.argv, cwd=run.work.root, env=env, stdin_data=inv.stdin_data)
    if run.sandbox is not None:
        spec = run.sandbox.reviewer(spec, rnd.files)
    first = run.history.prompt_file(0)
    raw = _RawLog(
        first.parent / f"review-{rnd.n}.log" if first else None, run.history.max_log_bytes
    )
    iteration = AgentIteration(_Hooks(run), inv, spec, raw.write)
    return await iteration.run_as(run, "the reviewer", raw.close)


def _listing(folders: list[Path]) -> dict[Path, set[str]]:
    out: dict[Path, set[str]] = {}
    for folder in folders:
        with contextlib.suppress(OSError):
            out[folder] = set(os.listdir(folder))
    return out


def _remove_new(run: Run, rnd: _Round) -> list[str]:
    """What the reviewer made beside its task files (their folders are writable to it, for an
    editor's rename), removed; ``created <path>`` for each."""
    found: list[str] = []
    for folder, before in rnd.listed.items():
        for name in sorted(set(_listing([folder]).get(folder, set())) - before):
            path = folder / name
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            found.append(f"the reviewer created {_shown(run, path)}")
    return found


def _shown(run: Run, path: Path) -> str:
    with contextlib.suppress(ValueError):
        return path.relative_to(run.work.root).as_posix()
    return str(path)


def _refused_writes(out: IterationOutcome) -> list[str]:
    """The writes the sandbox refused the reviewer (its output said so, or git's pointers were
    put back): a round that tried to write elsewhere does not approve."""
    return [
        f"the sandbox refused: {r.input}"
        for r in out.refusals
        if r.tool == REFUSAL_TOOL and r.input.startswith(("write:", "the reviewer wrote"))
    ]


async def _check(run: Run, rnd: _Round, out: IterationOutcome) -> None:
    """Step 4: the task files' edit judged, and what may not stand undone."""
    rnd.refusals += _refused_writes(out) + _remove_new(run, rnd)
    for path in rnd.files:
        before, after = rnd.saved[path], _read(path, follow=False)
        if after is None and before is not None:
            rnd.refusals.append(f"{path.name}: removed, or replaced by a link or no file")
            continue
        found = check_edit(before or b"", after or b"")
        rnd.added += found.added
        rnd.refusals += [f"{path.name}: {r}" for r in found.refusals]
    if rnd.refusals:  # the whole edit goes: every task file as it was
        rnd.added = []
        for path, data in rnd.saved.items():
            if data is not None and _read(path, follow=False) != data:
                _put_back(path, data)
    if run.sandbox is None and rnd.before is not None:
        message = f"ralph: {run.change.name} after review {rnd.n} (run {run.id})"
        try:
            undone = await asyncio.to_thread(guard.undo_writes, rnd.before, rnd.files, message)
        except (GitError, OSError) as exc:
            undone = [f"wrote outside the task file, and it could not be undone ({exc})"]
        rnd.refusals += [f"the reviewer {what}" for what in undone]


def _put_back(path: Path, data: bytes) -> None:
    """``path``'s bytes as they were: written in place when it is still a regular file, else
    what is there now (a link, a folder, a pipe) removed and the file made again; never through
    a link (a link put there must not make the host write the bytes elsewhere)."""
    if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.truncate()


def _failure(out: IterationOutcome) -> str | None:
    if out.timed_out:
        return "it timed out (iterationTimeoutSeconds)"
    if out.exit_code not in (0, None):
        return f"it exited {out.exit_code}" + (f": {out.last_error}" if out.last_error else "")
    if out.result is not None and out.result.is_error:
        return f"it reported an error: {out.last_error or 'no text'}"
    return None


def _record(run: Run, rnd: _Round, out: IterationOutcome) -> RoundRecord:
    cost, _ = run.budget.spawn_cost(out.result)
    failure = _failure(out)
    added, refused = tuple(rnd.added), tuple(rnd.refusals)
    return RoundRecord(
        round=rnd.n,
        reviewer=rnd.reviewer.name,
        # as the reviewer reported it, else as the run asked for it (as an iteration's receipt)
        model=(out.result.model if out.result else None) or rnd.reviewer.model,
        verdict=verdict_of(added, refused, failure),
        tasks_added=added,
        refusals=refused,
        cost_usd=cost,
        exit_code=out.exit_code,
        started_at=rnd.started,
        ended_at=now_iso(),
        detail=failure or "",
    )


def _tell(run: Run, record: RoundRecord) -> None:
    run.review.rounds.append(record.to_json())
    run.tally.add_review(run.review.rounds[-1])  # SPEC §15: part of what verified tasks cost
    run.status.costs = costs_json(run.tally.summary())
    run.save()
    run.emit(ReviewEvent(*run.key, record.to_json()))
    said = {
        "approved": "approved: it appended nothing",
        "rejected": f"rejected: {len(record.tasks_added)} task(s) appended",
        "refused": "refused: its edit was undone (" + "; ".join(record.refusals[:3]) + ")",
        "failed": f"failed: {record.detail}",
    }[record.verdict]
    level: Level = "info" if record.verdict in ("approved", "rejected") else "warning"
    run.log(f"⚖ review {record.round} by {record.reviewer}: {said}", level)


def _conformance(run: Run) -> str | None:
    """The conformance table of the run's last verification, as the reviewer reads it
    (Markdown), or None where no verification made one."""
    table = run.verification.gate.table
    return None if table is None else table.render_markdown()


async def _round(run: Run, reviewer: Reviewer, conformance: str | None) -> policy.End | RoundRecord:
    files = list(Change(run.work.root, run.work.name).task_files)
    rnd = _Round(len(run.review.rounds) + 1, reviewer, files, {p: _read(p) for p in files})
    rnd.listed = _listing(list(dict.fromkeys(p.parent for p in files)))
    refusal = await _confine(run, rnd)
    if refusal is not None:
        return policy.End(RunState.FAILED, f"review refused: {refusal}")
    run.update(reason=f"review {rnd.n} by {reviewer.name}", phase="agent", transition=True)
    prompt = build_review_prompt(await _context(run, rnd, conformance))
    path, temporary = _prompt_file(run, rnd.n, prompt)
    try:
        out = await _spawn(run, rnd, prompt, path)
    finally:
        if temporary:
            path.unlink(missing_ok=True)
    if out.start_error is not None:
        return policy.End(RunState.FAILED, f"the reviewer could not start: {out.start_error}")
    await _check(run, rnd, out)
    if out.stopped or run.stop_event.is_set():
        return policy.End(RunState.STOPPED, "stopped by the user")
    return _record(run, rnd, out)


async def review_round(
    run: Run, counters: policy.Counters, doc: TasksDoc
) -> tuple[policy.End | None, policy.Counters, TasksDoc]:
    """One review round of ``run.review.pending`` (a success): the run's end (approved,
    exhausted, or why it cannot be reviewed), or None and the loop goes on with the counters
    (the round's cost added) and tasks.md as the round left it."""
    success = run.review.pending
    reviewer = reviewer_of(run.settings)
    assert success is not None
    if reviewer is None:
        run.review.pending = None
        return success, counters, doc
    ended = await _round(run, reviewer, _conformance(run))
    if isinstance(ended, policy.End):
        return ended, counters, doc
    _tell(run, ended)
    counters = replace(counters, cost_usd=policy.add_cost(counters.cost_usd, ended.cost_usd))
    run.update(cost_usd=counters.cost_usd)
    then = after_round(ended, run.settings.review_max_rounds)
    if then.succeeded:
        return policy.End(RunState.SUCCEEDED, f"{success.reason}; review approved"), counters, doc
    if then.exhausted is not None:
        return policy.End(RunState.EXHAUSTED, then.exhausted), counters, doc
    if then.work:  # the loop works the appended tasks; a success later is reviewed again
        run.review.pending = None
    doc = run.read_doc()
    run.update(completed=doc.completed, total=doc.total, reason="running", phase=None)
    return None, counters, doc
