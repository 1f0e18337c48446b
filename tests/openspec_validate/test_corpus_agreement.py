"""Every recorded `openspec validate` answer of the corpus (1,382 rows) agrees with ours.

The domain runs in-process for speed; a few rows also go through the real `ralph-lsp validate`
subprocess in a copy of the repository, as the corpus README asks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.openspec_validate.corpus import corpus, differences, rows, run_in_process


def test_every_row_agrees_in_process() -> None:
    all_rows = rows()
    assert len(all_rows) == 1382
    failures = []
    for row in all_rows:
        root = corpus() / row["repo_slug"]
        got = run_in_process(root, row["kind"], row["item"], row["strict"])
        want = row["output"]["items"][0]
        diff = differences(got, want, root)
        if diff:
            where = f"{row['repo_slug']} {row['kind']} {row['item']} strict={row['strict']}"
            failures.append(where + "\n    " + "\n    ".join(diff))
    assert not failures, f"{len(failures)} rows disagree:\n" + "\n".join(failures[:20])


def _sample() -> list[dict[str, object]]:
    """A few rows of each shape: valid and not, change and spec, strict and not, with lines."""
    picked: dict[tuple[object, ...], dict[str, object]] = {}
    for row in rows():
        issues = row["output"]["items"][0]["issues"]
        key = (row["kind"], row["exit_code"], row["strict"], any("line" in i for i in issues))
        picked.setdefault(key, row)
    return list(picked.values())


def test_rows_through_the_real_command(tmp_path: Path) -> None:
    sample = _sample()
    assert len(sample) >= 8
    copies: dict[str, Path] = {}
    failures = []
    for row in sample:
        slug = str(row["repo_slug"])
        if slug not in copies:
            copies[slug] = tmp_path / slug
            shutil.copytree(corpus() / slug, copies[slug])
        root = copies[slug]
        argv = [sys.executable, "-m", "ralph_lsp", *row["argv"]]  # type: ignore[misc]
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60)
        out = json.loads(done.stdout)
        want = row["output"]  # type: ignore[index]
        assert out["version"] == want["version"]
        assert out["summary"] == want["summary"]
        assert set(out["items"][0]) == set(want["items"][0])
        diff = differences(
            out["items"][0],
            want["items"][0],
            root.resolve(),
            exit_got=done.returncode,
            exit_want=row["exit_code"],  # type: ignore[arg-type]
        )
        if diff:
            failures.append(f"{slug} {row['item']}: " + "; ".join(diff))
    assert not failures
