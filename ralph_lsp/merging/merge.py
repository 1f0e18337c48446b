"""One run's merge (SPEC §12): check → merged commit → verification in a scratch integration
worktree → compare-and-swap of the target → the checked-out work tree follows.

On a conflict or a failed verification the target does not move and the run's branch is parked
``needs-review`` (the files, or the failing output's tail); when the target moved meanwhile the
merge is made again once from the new target, then refused with the reason. No LSP imports.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph_lsp.archiving.writer import ArchiveBlocked, archive_change
from ralph_lsp.git import GitError, Repo, forget_drivers
from ralph_lsp.git import merge as gm
from ralph_lsp.loop import verify
from ralph_lsp.loop.iteration import bounded
from ralph_lsp.loop.sandboxing import RunSandbox
from ralph_lsp.merging.run_branch import (
    MERGED,
    NEEDS_REVIEW,
    RunBranch,
    current_branch,
    find_run,
    open_repo,
    set_branch_state,
)
from ralph_lsp.runs.status import RunEnd
from ralph_lsp.settings import Settings

Say = Callable[[str], None]
REFUSED = "refused"
#: A train's merge verified on its merged result whose target has not moved yet (:func:`finish`).
VERIFIED = "verified"
#: What a parked run's record keeps of the failing verification's output.
TAIL_CHARS = 8 * 1024


@dataclass
class Outcome:
    """What became of one run's merge: ``merged``, ``needs-review`` or ``refused``."""

    change: str
    run_id: str
    branch: str
    into: str
    strategy: gm.Strategy
    state: str = REFUSED
    reason: str = ""
    commit: str | None = None
    conflicts: list[str] = field(default_factory=list)
    output_tail: str | None = None
    verification: list[dict[str, Any]] = field(default_factory=list)
    verify_ms: int = 0
    attempts: int = 0
    base: str | None = None  # the target commit the merged commit was made on
    message: str = ""
    archive: str = ""  # archiveOnSuccess: what became of the change's archive

    def to_json(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "runId": self.run_id,
            "branch": self.branch,
            "into": self.into,
            "strategy": self.strategy,
            "state": self.state,
            "reason": self.reason,
            "commit": self.commit,
            "conflicts": self.conflicts,
            "outputTail": self.output_tail,
            "verification": self.verification,
            "attempts": self.attempts,
            "archive": self.archive or None,
        }


class Scratch:
    """The integration worktree: made at its first use, moved to each merged result to verify
    (a train reuses it), removed by :meth:`close`."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.path: Path | None = None
        self._identity: dict[str, str] | None = None
        self._opening: asyncio.Task[Path] | None = None
        self._opened_at = ""
        self._scrubbing: asyncio.Task[None] | None = None

    def identity(self) -> dict[str, str]:
        """The committer's identity, read once for the whole train (two git calls a merge)."""
        if self._identity is None:
            self._identity = gm.commit_identity(self.repo)
        return self._identity

    def prepare(self, commit: str) -> None:
        """Start making the worktree (at ``commit``, the target) while the merge is checked
        and made: at its first use it then only moves to the merged commit."""
        if self.path is None and self._opening is None:
            self._opened_at = commit
            self._opening = asyncio.create_task(
                asyncio.to_thread(gm.open_integration, self.repo, commit)
            )

    def scrub(self) -> None:
        """After a train's verification: what it wrote is removed while the next merge is
        checked and made (``git clean`` off the path between two verifications)."""
        if self.path is not None and self._scrubbing is None:
            self._scrubbing = asyncio.create_task(
                asyncio.to_thread(gm.clean_integration, self.path)
            )

    async def _scrubbed(self) -> bool:
        scrubbing, self._scrubbing = self._scrubbing, None
        if scrubbing is None:
            return False
        try:
            await scrubbing
        except (GitError, OSError):
            return False  # cleaned again with the move
        return True

    async def at(self, commit: str) -> Path:
        scrubbed = await self._scrubbed()
        if self._opening is not None:
            opening, self._opening = self._opening, None
            self.path = await opening
            if self._opened_at == commit:
                return self.path
        if self.path is None:
            self.path = await asyncio.to_thread(gm.open_integration, self.repo, commit)
        else:
            await asyncio.to_thread(gm.reset_integration, self.path, commit, clean=not scrubbed)
        return self.path

    async def close(self) -> None:
        await self._scrubbed()
        if self._opening is not None:
            opening, self._opening = self._opening, None
            with contextlib.suppress(GitError, OSError):
                self.path = await opening
        if self.path is not None:
            path, self.path = self.path, None
            await asyncio.to_thread(gm.close_integration, self.repo, path, later=True)


@dataclass(frozen=True)
class Step:
    """How a train asks for one merge: made on ``base`` (the previous merge's verified commit,
    before the target has moved to it) and, with ``hold``, left :data:`VERIFIED` for
    :func:`finish` to move the target; ``again``: a retry, its one attempt left; ``more``: a
    merge follows in the same scratch worktree (cleaned for it once this one is verified)."""

    base: str | None = None
    hold: bool = False
    again: bool = False
    more: bool = False


@dataclass(frozen=True)
class MergeRequest:
    root: Path
    change: str
    run_id: str | None = None
    into: str | None = None
    strategy: gm.Strategy = "merge"


async def merge_run(
    req: MergeRequest, settings: Settings, say: Say, stop: asyncio.Event | None = None
) -> Outcome:
    """Merge one run's branch; never raises for what the outcome can say (a refusal)."""
    repo = open_repo(req.root)
    await asyncio.to_thread(gm.require_merge_tree, repo)
    run = await asyncio.to_thread(find_run, repo, req.root, req.change, req.run_id)
    into = req.into if req.into else await asyncio.to_thread(current_branch, repo)
    return await merge_branch(repo, run, into, req.strategy, settings, say, stop)


async def merge_branch(
    repo: Repo,
    run: RunBranch,
    into: str,
    strategy: gm.Strategy,
    settings: Settings,
    say: Say,
    stop: asyncio.Event | None = None,
    scratch: Scratch | None = None,
    step: Step = Step(),
) -> Outcome:
    """Merge ``run``'s branch into ``into`` (in ``scratch`` when given: a train's, kept open)."""
    work = Scratch(repo) if scratch is None else scratch
    outcome = Outcome(run.change, run.run_id, run.branch, into, strategy)
    try:
        for attempt in (2,) if step.again else (1, 2):
            outcome.attempts = attempt
            try:
                await _attempt(
                    repo, run, outcome, settings, say, stop or asyncio.Event(), work, step
                )
            except gm.TargetMoved as exc:
                outcome.state, outcome.reason = REFUSED, str(exc)
                if attempt == 1:
                    say(f"⎇ {exc}: merging again from the new {into}")
                    continue
                _park(run, outcome, f"{exc}, twice: merge again when it stays put")
            except (gm.MergeError, GitError, OSError) as exc:
                outcome.state, outcome.reason = REFUSED, str(exc)
            break
        if outcome.state != VERIFIED:  # a held one is said once its target moved (a train's)
            say(f"⎇ {run.change}: {outcome.state}: {outcome.reason}")
    finally:
        if scratch is None:
            await work.close()
    return outcome


async def _attempt(
    repo: Repo,
    run: RunBranch,
    o: Outcome,
    settings: Settings,
    say: Say,
    stop: asyncio.Event,
    work: Scratch,
    step: Step,
) -> None:
    tips = await asyncio.to_thread(gm.branch_tips, repo, o.into, run.branch)
    target, tip = step.base or tips[o.into], tips[run.branch]
    if target is None:
        raise gm.MergeError(f"the target branch {o.into!r} does not exist")
    if tip is None:
        raise gm.MergeError(f"the run's branch {run.branch!r} does not exist any more")
    # the conflict check runs beside the ancestry test (one git call less between two
    # verifications of a train); its answer is not used when the branch is merged already
    checking = asyncio.ensure_future(asyncio.to_thread(gm.check, repo, target, tip))
    if await asyncio.to_thread(gm.is_ancestor, repo, tip, target):
        with contextlib.suppress(gm.MergeError, GitError, OSError):
            await checking
        o.state, o.commit = MERGED, target
        o.reason = f"{run.branch} is already in {o.into}"
        return
    work.prepare(target)
    check = await checking
    if not check.clean:
        o.conflicts = check.conflicts
        _park(run, o, f"conflicts with {o.into} in {', '.join(check.conflicts)}")
        return
    say(f"⎇ {run.change}: {run.branch} merges cleanly into {o.into}; verifying the result")
    message = f"ralph: merge {run.change} (run {run.run_id}) into {o.into}"
    if o.strategy == "rebase":
        commit = await _rebase(repo, run, o, target, tip, work)
    else:
        commit = await asyncio.to_thread(
            gm.commit_merge,
            repo,
            check,
            o.strategy,
            message,
            await asyncio.to_thread(work.identity),
        )
    if commit is not None:
        wt = await work.at(commit)
        if settings.archive_on_success:
            commit = await asyncio.to_thread(_archive, repo, run, o, (wt, commit), work)
        await _verify(repo, run, o, wt, settings, say, stop)
        if step.more:
            work.scrub()
    if commit is None or o.state == NEEDS_REVIEW:
        return
    o.state, o.base, o.commit, o.message = VERIFIED, target, commit, message
    if not step.hold:
        await asyncio.to_thread(finish, repo, run, o)


def finish(repo: Repo, run: RunBranch, o: Outcome) -> None:
    """Move the target of a :data:`VERIFIED` merge (a compare-and-swap from ``o.base``) and
    record the run merged; raises what :func:`gm.advance` raises, with nothing moved."""
    assert o.state == VERIFIED and o.base is not None and o.commit is not None
    gm.advance(repo, o.into, o.base, o.commit, o.message)
    o.state = MERGED
    o.reason = f"merged into {o.into} as {o.commit[:12]} {_verified(o)}"
    if o.archive:
        o.reason += f"; {run.change} {o.archive}"
    set_branch_state(run.root, run.run_id, MERGED, _record(o))


async def _rebase(
    repo: Repo, run: RunBranch, o: Outcome, target: str, tip: str, work: Scratch
) -> str | None:
    """The branch's commits replayed on the target in the scratch worktree; None: parked."""
    wt = await work.at(target)
    commit, conflicts = await asyncio.to_thread(gm.rebase_onto, repo, wt, target, tip)
    if commit is None:
        o.conflicts = conflicts
        _park(run, o, f"replaying its commits on {o.into} conflicts in {', '.join(conflicts)}")
    return commit


async def _verify(
    repo: Repo,
    run: RunBranch,
    o: Outcome,
    wt: Path,
    settings: Settings,
    say: Say,
    stop: asyncio.Event,
) -> None:
    """The project's verification in the integration worktree, as a run runs it."""
    root = wt / run.root.resolve().relative_to(repo.top.resolve())
    try:
        cmds = verify.commands(settings.verify_commands, root)
    except ValueError as exc:
        raise gm.MergeError(str(exc)) from None
    if not cmds or settings.verify_when == "off":
        say(f"⎇ {run.change}: no verification command (verifyCommands): nothing is verified")
        return
    box = await _sandbox(settings, root, say)
    runner = verify.Runner(
        root,
        {**os.environ, **settings.env},
        bounded(settings.verify_timeout_seconds) or 0.0,
        stop,
        lambda lines, _err: say("\n".join(lines)),
        grace=bounded(settings.stop_grace_seconds) or 0.0,
        wrap=box.check if box is not None else None,
    )
    started = time.monotonic()
    try:
        if box is not None:
            box.watch_git()
        results = await runner.run(cmds)
    finally:
        if box is not None:  # git's pointers put back before the train runs git again
            box.undo_git(f"{run.change}'s verification")
            await box.close()
        forget_drivers()  # the checks ran the run's code: git's configuration is looked at anew
    o.verify_ms += int((time.monotonic() - started) * 1000)
    o.verification = [dict(r.to_json()) for r in results]
    failed = next((r for r in results if not r.passed), None)
    if failed is not None:
        o.output_tail = failed.output_tail[-TAIL_CHARS:]
        _park(run, o, f"the merged result fails verification: {failed.describe()}")
    elif len(results) < len(cmds):
        raise gm.MergeError("verification was stopped: nothing was merged")


async def _sandbox(settings: Settings, root: Path, say: Say) -> RunSandbox | None:
    """The sandbox the merged result's checks run in, as a run's do (SPEC §10): the code they
    run is what the run's agent wrote. One that cannot start stops the merge (fail closed).
    No egress proxy: a check has no network but its loopback, and no proxy in view."""
    try:
        return await RunSandbox.open(settings, root, root, lambda t, _l: say(t), egress=False)
    except RunEnd as end:
        raise gm.MergeError(f"the merged result is not verified: {end.reason}") from None


def _archive(repo: Repo, run: RunBranch, o: Outcome, at: tuple[Path, str], work: Scratch) -> str:
    """``archiveOnSuccess``: the change archived on the merged result, in a commit after the
    merge commit (verified with it, moved with it by the one compare-and-swap); a refusal
    (already archived, invalid) leaves the merge as it is, with the reason said."""
    wt, commit = at
    root = wt / run.root.resolve().relative_to(repo.top.resolve())
    try:
        plan = archive_change(root, run.change, yes=True)
    except ArchiveBlocked as blocked:
        o.archive = f"not archived: {blocked.message}"
        return commit
    message = f"ralph: archive {run.change} as {plan.archive_name}"
    made = gm.commit_all(wt, message, work.identity())
    o.archive = f"archived as {plan.archive_name}"
    return made or commit


def _verified(o: Outcome) -> str:
    if not o.verification:
        return "(no verification command: nothing was verified)"
    return f"after verification ({', '.join(v['command'] for v in o.verification)})"


def _park(run: RunBranch, o: Outcome, reason: str) -> None:
    o.state, o.reason = NEEDS_REVIEW, f"{reason}; {o.into} was not moved, {run.branch} is kept"
    set_branch_state(run.root, run.run_id, NEEDS_REVIEW, _record(o))


def _record(o: Outcome) -> dict[str, Any]:
    keep = ("into", "strategy", "commit", "reason", "conflicts", "outputTail")
    return {k: v for k, v in o.to_json().items() if k in keep}
