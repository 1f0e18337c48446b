"""``python -m bench.checkpoints``: what a git checkpoint costs per iteration (SPEC §8).

Builds a repository of 10,000 files (1 KiB each, 100 folders), then times what a run does per
iteration: record a checkpoint after an "iteration" that edits 5 files and adds 2, in two
states of the repository:

- ``committed``: every file is committed (the user's index knows them all);
- ``untracked``: the same files, none of them committed (the worst case: git must hash every
  file for the first checkpoint of a run).

It also times ``diff`` of one iteration, a ``restore`` (with its undo checkpoint) and, for
scale, a plain ``git status`` of the same repository. Prints
p50/p95 in milliseconds and writes them to ``bench/checkpoints.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from ralph_lsp.git import checkpoints as cp
from ralph_lsp.git import refs
from ralph_lsp.git.command import find_repo
from ralph_lsp.git.restore import restore

HERE = Path(__file__).resolve().parent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def git(cwd: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b")
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_repo(path: Path, files: int, commit: bool) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    block = ("x" * 63 + "\n") * 16
    for i in range(files):
        folder = path / f"pkg{i % 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i:05d}.py").write_text(f"# file {i}\n{block}")
    if commit:
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "10k files")
    else:
        (path / "README").write_text("only this is committed\n")
        git(path, "add", "README")
        git(path, "commit", "-q", "-m", "readme")
    return path


def iterate(root: Path, n: int) -> None:
    """What an agent's iteration might do: edit 5 files and add 2."""
    for k in range(5):
        p = root / f"pkg{(n * 7 + k) % 100:03d}" / f"mod{(n * 7 + k) % 10000:05d}.py"
        p.write_text(p.read_text() + f"# iteration {n}\n")
    for k in range(2):
        (root / f"pkg{n % 100:03d}" / f"new_{n}_{k}.py").write_text(f"# new in {n}\n")


def measure(root: Path, iterations: int) -> dict[str, float]:
    c = cp.open_checkpointer(root, "bench", "r-1", lambda m: None)
    assert c is not None
    t0 = time.perf_counter()
    c.record(0)
    first = (time.perf_counter() - t0) * 1000
    times = []
    for n in range(1, iterations + 1):
        iterate(root, n)
        t0 = time.perf_counter()
        made, changed = c.record(n)
        times.append((time.perf_counter() - t0) * 1000)
        assert made is not None and len(changed) == 7, changed
    c.close()
    repo = find_repo(root)
    assert repo is not None
    t0 = time.perf_counter()
    _, before, after = refs.iteration_pair(repo, "bench", "r-1", 2)
    cp.patch(repo, before.commit, after.commit)
    diff_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    restore(repo, "bench", "r-1", after)
    restore_ms = (time.perf_counter() - t0) * 1000
    status = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True)
        status.append((time.perf_counter() - t0) * 1000)
    return {
        "git_status_ms": round(percentile(status, 50), 1),  # for scale: the user's own command
        "first_checkpoint_ms": round(first, 1),
        "checkpoint_p50_ms": round(percentile(times, 50), 1),
        "checkpoint_p95_ms": round(percentile(times, 95), 1),
        "diff_ms": round(diff_ms, 1),
        "restore_ms": round(restore_ms, 1),
        "iterations": iterations,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    results: dict[str, object] = {"files": args.files}
    with tempfile.TemporaryDirectory(prefix="ralph-bench-git-") as tmp:
        for state, commit in (("committed", True), ("untracked", False)):
            root = make_repo(Path(tmp) / state, args.files, commit)
            results[state] = measure(root, args.iterations)
            print(state, json.dumps(results[state]))
    (HERE / "checkpoints.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
