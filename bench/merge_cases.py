"""Merging a run's branch (SPEC §12): what the conflict check and the merge train cost.

- ``merge_check_ms``: ``git merge-tree --write-tree`` of a run's branch (5 files changed) against
  a target that moved on (5 other files changed) in a repository of 10,000 files (1 KiB each,
  100 folders), as :func:`ralph_lsp.git.merge.check` runs it; p50/p95 in ms.
- ``merge_train_overhead``: a train of three runs, each verified on its merged result by a
  command that takes about a second (a small test suite): the train's wall time over the sum of
  its verifications, minus one (0.05 = 5 % spent on git, worktrees and records); the median of
  ``trains`` trains, each in a fresh repository (one train is a single sample of a shared
  machine's load), every round's numbers in the details.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from bench.checkpoints import git, make_repo, percentile
from bench.report import Results
from ralph_lsp.git import find_repo
from ralph_lsp.git import merge as gm
from ralph_lsp.settings import settings_from_dict


def _branch(root: Path, name: str, files: dict[str, str]) -> None:
    wt = root.parent / f"wt-{name.replace('/', '-')}"
    git(root, "worktree", "add", "-q", "-b", name, str(wt), "main")
    for path, text in files.items():
        (wt / path).parent.mkdir(parents=True, exist_ok=True)
        (wt / path).write_text(text)
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", name)
    git(root, "worktree", "remove", str(wt))


def check_10k(results: Results, reps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_repo(Path(tmp) / "repo", 10_000, commit=True)
        git(root, "branch", "-M", "main")
        _branch(root, "ralph/x", {f"pkg{i:03d}/mod{i:05d}.py": f"# run {i}\n" for i in range(5)})
        for i in range(50, 55):
            (root / f"pkg{i:03d}/mod{i:05d}.py").write_text(f"# main {i}\n")
        git(root, "commit", "-qam", "main moves on")
        repo = find_repo(root)
        assert repo is not None
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            result = gm.check(repo, "main", "ralph/x")
            times.append((time.perf_counter() - t0) * 1000)
            assert result.clean
        results.put(
            "merge_check_ms",
            {"p50": round(percentile(times, 50), 2), "p95": round(percentile(times, 95), 2)},
            reps,
        )


async def _train(root: Path, verify_s: float) -> dict[str, float]:
    from ralph_lsp.merging.train import merge_train

    line = f"{sys.executable} -c 'import time; time.sleep({verify_s})'"
    settings, _ = settings_from_dict({"verifyCommands": [line]})
    result = await merge_train(root, settings, lambda _text: None, into="main")
    assert result.count("merged") == 3, result.to_json()
    return {"train_ms": result.duration_ms, "verify_ms": result.verify_ms}


async def train_overhead(results: Results, verify_s: float, trains: int = 1) -> None:
    rounds = [await _one_train(verify_s) for _ in range(max(1, trains))]
    overheads = sorted(r["train_ms"] / r["verify_ms"] - 1 for r in rounds)
    results.put("merge_train_overhead", round(percentile(overheads, 50), 4), len(rounds))
    results.details["merge_train_overhead"] = {"rounds": rounds}


async def _one_train(verify_s: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_repo(Path(tmp) / "repo", 300, commit=True)
        git(root, "branch", "-M", "main")
        runs = root / ".ralph" / "runs"
        for k, change in enumerate(("a", "b", "c")):
            _branch(root, f"ralph/{change}", {f"{change}.txt": f"{change}\n"})
            (runs / f"r-{change}").mkdir(parents=True)
            record = {
                "runId": f"r-{change}",
                "change": change,
                "state": "succeeded",
                "startedAt": f"2026-01-01T00:00:0{k}Z",
                "iterations": [],
                "worktree": {"branch": f"ralph/{change}"},
            }
            (runs / f"r-{change}" / "record.json").write_text(json.dumps(record))
        (root / ".ralph" / ".gitignore").write_text("*\n")
        got = await _train(root, verify_s)
        gm.settle()  # the scratch worktree's files, deleted after the train's result
        return got
