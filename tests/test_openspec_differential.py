"""Differential test: our counts against the real OpenSpec CLI 1.13.2 on generated edge cases.

The corpus test covers real files; this one covers the rule's corners (JavaScript whitespace,
boxes followed by links, astral characters, long list numbers, CR/CRLF) with a few hundred
generated files in one `openspec list --json` call.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from ralph_lsp.openspec.tasks import count_tasks
from tests.conftest import openspec_cli

WS = ["", " ", "  ", "\t", "\u00a0", "\ufeff", "\u2028", "\u0085", "\u001c", "\u3000", "\r", "\v"]
BULLETS = ["-", "*", "+", "1.", "1)", "123456789.", "1234567890.", "a.", "", "--", "•", "0)"]
BOXES = [
    "[ ]",
    "[x]",
    "[X]",
    "[]",
    "[~]",
    "[-]",
    "[  ]",
    "[ x ]",
    "[xx]",
    "[😀]",
    "[é]",
    "[]]",
    "[[]",
    "[\t]",
    "[\ufffd]",
    "[ \u00a0]",
    "[x ]",
    "[(]",
    "[\ud7ff]",
    "[\U0001f600 ]",
]
AFTER = ["", " task", "(http://x)", "[ref]", " (a)", "task", "\r", " [x] nested", "((", "]"]


@pytest.fixture(scope="module")
def openspec() -> str:
    return openspec_cli()


@pytest.mark.parametrize("seed", [1, 2])
def test_counts_agree_with_the_real_cli(openspec: str, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    changes = tmp_path / "openspec" / "changes"
    expected = {}
    for i in range(300):
        lines = [
            rng.choice(WS)
            + rng.choice(BULLETS)
            + rng.choice(WS)
            + rng.choice(BOXES)
            + rng.choice(AFTER)
            for _ in range(rng.randint(1, 6))
        ]
        text = rng.choice(["\n", "\r\n", "\r"]).join(lines)
        folder = changes / f"c{i:04d}"
        folder.mkdir(parents=True)
        (folder / "tasks.md").write_bytes(text.encode("utf-8", "surrogatepass"))
        expected[folder.name] = count_tasks(text)
    out = subprocess.run(
        [openspec, "list", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    got = {
        c["name"]: (c["completedTasks"], c["totalTasks"]) for c in json.loads(out.stdout)["changes"]
    }
    mismatches = {k: (v, got.get(k)) for k, v in expected.items() if got.get(k) != v}
    assert mismatches == {}
