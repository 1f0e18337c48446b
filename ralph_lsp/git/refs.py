"""The checkpoints' refs (SPEC §8): how they are named and found.

A checkpoint is ``refs/ralph/@<rootId>/<change>/<runId>/<n>`` (``<rootId>``: a hash of the
OpenSpec root's real path, since refs are shared by every work tree and root of a repository
while ``.ralph/`` is not); a restore's undo is ``…/<change>/@undo/<k>``. v2's
``refs/ralph/<change>/<runId>/<n>`` are still read for runs the root's history names. This
module names refs, lists them, and picks a run and an iteration's pair of checkpoints.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph_lsp.git.command import (
    Repo,
)

REF_PREFIX = "refs/ralph"


UNDO = "@undo"  # '@' never starts a ref component made by ref_component: no run is named so


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


class CheckpointError(Exception):
    """A checkpoint that cannot be found or used; the message says what exists instead."""


def ref_component(name: str) -> str:
    """``name`` as one valid ref component: anything but letters, digits, '-' and '_' as %XX."""
    return "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in name)


def root_id(root: Path) -> str:
    """The ref component of one OpenSpec root: stable for its real path, unlike any change's."""
    real = os.path.realpath(root).encode("utf-8", "surrogateescape")
    return "@" + hashlib.sha256(real).hexdigest()[:12]


def change_prefix(root: Path, change: str) -> str:
    return f"{REF_PREFIX}/{root_id(root)}/{ref_component(change)}"


def legacy_prefix(change: str) -> str:
    """Where v2 kept a change's checkpoints, shared by every work tree of the repository."""
    return f"{REF_PREFIX}/{ref_component(change)}"


def run_prefix(root: Path, change: str, run_id: str) -> str:
    return f"{change_prefix(root, change)}/{ref_component(run_id)}"


def ref_name(root: Path, change: str, run_id: str, n: int | str) -> str:
    return f"{run_prefix(root, change, run_id)}/{n}"


def undo_prefix(root: Path, change: str) -> str:
    return f"{change_prefix(root, change)}/{UNDO}"


@dataclass(frozen=True)
class Checkpoint:
    commit: str
    ref: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "commit": self.commit}

    @property
    def name(self) -> str:
        return self.ref or self.commit


def list_refs(repo: Repo, prefix: str) -> list[tuple[str, str]]:
    """(refname, commit) under ``prefix``, newest commit first."""
    text = repo.git(
        "for-each-ref", "--sort=-committerdate", "--format=%(refname) %(objectname)", prefix + "/"
    )
    return [tuple(line.rsplit(" ", 1)) for line in text.splitlines() if " " in line]  # type: ignore[misc]


def _components(repo: Repo, prefix: str) -> list[str]:
    """The distinct ref components right under ``prefix``, newest commit first."""
    seen: list[str] = []
    for ref, _ in list_refs(repo, prefix):
        part = ref[len(prefix) + 1 :].split("/")[0]
        if part not in seen and not part.startswith("@"):
            seen.append(part)
    return seen


def run_ids(repo: Repo, change: str, root: Path | None = None) -> list[str]:
    """The run ids (as ref components) with checkpoints of ``change`` in this root, newest
    first (``root`` defaults to the work tree's top)."""
    return _components(repo, change_prefix(root or repo.top, change))


def _legacy_run_ids(repo: Repo, change: str) -> list[str]:
    return _components(repo, legacy_prefix(change))


def found_prefix(repo: Repo, change: str, run_id: str, root: Path | None = None) -> str:
    """Where a run's checkpoints are: this root's refs, else the refs v2 wrote."""
    scoped = run_prefix(root or repo.top, change, run_id)
    if list_refs(repo, scoped):
        return scoped
    legacy = f"{legacy_prefix(change)}/{ref_component(run_id)}"
    return legacy if list_refs(repo, legacy) else scoped


def iterations(repo: Repo, change: str, run_id: str, root: Path | None = None) -> dict[int, str]:
    """Iteration number → checkpoint commit of one run (0 is the state before iteration 1)."""
    prefix = found_prefix(repo, change, run_id, root)
    found: dict[int, str] = {}
    for ref, commit in list_refs(repo, prefix):
        last = ref.rsplit("/", 1)[1]
        if last.isdigit():
            found[int(last)] = commit
    return dict(sorted(found.items()))


def pick_run(
    repo: Repo,
    change: str,
    run_id: str | None,
    newest_first: Sequence[str],
    root: Path | None = None,
) -> str:
    """``run_id``, or the newest run (by ``newest_first``, this root's history, else by date)
    that has checkpoints. v2's shared refs count only for runs named here or in the history:
    they may be another work tree's."""
    have = run_ids(repo, change, root)
    legacy = _legacy_run_ids(repo, change)
    if run_id is not None:
        if ref_component(run_id) not in have + legacy:
            listing = ", ".join(have[:5]) or "none"
            raise CheckpointError(
                f"run {run_id!r} of {change!r} has no checkpoints (runs: {listing})"
            )
        return run_id
    for rid in newest_first:
        if ref_component(rid) in have + legacy:
            return rid
    if have:
        return have[0]
    raise CheckpointError(
        f"no checkpoints of {change!r} yet: runs record them in a git work tree (ralph.checkpoints)"
    )


def iteration_pair(
    repo: Repo, change: str, run_id: str, n: int | None, root: Path | None = None
) -> tuple[int, Checkpoint, Checkpoint]:
    """The checkpoints before and after iteration ``n`` (default: the run's last iteration)."""
    its = iterations(repo, change, run_id, root)
    prefix = found_prefix(repo, change, run_id, root)
    numbered = [k for k in its if k > 0]
    if n is None:
        if not numbered:
            raise CheckpointError(f"run {run_id} has no iteration checkpoints")
        n = numbered[-1]
    if n not in its or n < 1:
        listing = ", ".join(str(k) for k in numbered) or "none"
        raise CheckpointError(
            f"run {run_id} has no checkpoint after iteration {n} (iterations: {listing})"
        )
    after = Checkpoint(its[n], f"{prefix}/{n}")
    if n - 1 in its:
        before = Checkpoint(its[n - 1], f"{prefix}/{n - 1}")
    else:  # an earlier checkpoint failed: the commit's parent is the last one that was made
        parent = repo.rev(f"{its[n]}^")
        if parent is None:
            raise CheckpointError(f"iteration {n}'s checkpoint has no earlier state to compare")
        before = Checkpoint(parent)
    return n, before, after


def resolve_checkpoint(repo: Repo, name: str) -> Checkpoint:
    """A checkpoint named by its ref (``refs/ralph/…``) or its commit id (hex); nothing else."""
    if name.startswith(REF_PREFIX + "/") and ".." not in name:
        commit = repo.rev(name)
        if commit is None:
            raise CheckpointError(f"no checkpoint {name}")
        return Checkpoint(commit, name)
    if 4 <= len(name) <= 64 and all(c in "0123456789abcdef" for c in name.lower()):
        commit = repo.rev(name)
        if commit is not None:
            return Checkpoint(commit)
    raise CheckpointError(f"{name!r} is not a checkpoint (a refs/ralph/… ref or a commit id)")
