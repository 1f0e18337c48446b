"""Live fuzz: seeded mutations of corpus changes, ralph-lsp validate beside the real CLI.

Each seed copies one corpus repository, mutates 20 of its changes (delta specs written wrong in
the ways authors do: `###`/`####` swapped, SHALL dropped, a requirement duplicated, a section
renamed, fences, CRLF, a scenario dropped, an unpaired rename, a main spec deleted...) and runs
`validate --all --json`, strict and not, through both tools: two Node starts per seed.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openspec_validate.corpus import corpus, differences
from tests.openspec_validate.mutations import mutate_change, mutate_file
from tests.test_openspec_differential import openspec  # noqa: F401  (the fixture)

CLI_ENV = {
    "OPENSPEC_TELEMETRY": "0",
    "DO_NOT_TRACK": "1",
    "OPENSPEC_NO_UPDATE_CHECK": "1",
    "NO_COLOR": "1",
    "CI": "1",
}
REPOS = ["CeeLav__Astrum", "johnnyblabs__intellij-openspec", "Daoming-Chen__Kinex"]
COPIES = 3  # mutated copies of each change: 7 changes, 21 cases a seed


def _project(tmp_path: Path, seed: int) -> tuple[Path, list[str]]:
    rng = random.Random(seed)
    slug = REPOS[seed % len(REPOS)]
    root = tmp_path / slug
    shutil.copytree(corpus() / slug, root)
    changes = sorted(p for p in (root / "openspec" / "changes").iterdir() if p.is_dir())
    notes = []
    for change in changes:
        for n in range(COPIES):
            copy = change.with_name(f"{change.name}-fz{n}")
            shutil.copytree(change, copy)
            notes.append(f"{copy.name}: {mutate_change(rng, copy, root / 'openspec' / 'specs')}")
    specs = sorted((root / "openspec" / "specs").glob("**/spec.md"))
    for spec in rng.sample(specs, min(3, len(specs))):
        notes.append(f"main spec {spec.parent.name}: {mutate_file(rng, spec)}")
    return root, notes


def _run(argv: list[str], root: Path, env: dict[str, str]) -> tuple[int, dict[str, object]]:
    done = subprocess.run(
        argv,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("seed", [int(s) for s in os.environ.get("FUZZ_SEEDS", "1,2").split(",")])
def test_mutated_changes_agree_with_the_real_cli(openspec: str, tmp_path: Path, seed: int) -> None:  # noqa: F811
    root, notes = _project(tmp_path, seed)
    env = {
        **os.environ,
        **CLI_ENV,
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    failures = []
    for strict in ([], ["--strict"]):
        theirs_rc, theirs = _run([openspec, "validate", "--all", "--json", *strict], root, env)
        ours_rc, ours = _run(
            [sys.executable, "-m", "ralph_lsp", "validate", "--all", "--json", *strict], root, env
        )
        assert (ours_rc == 0) == (theirs_rc == 0), (ours_rc, theirs_rc)
        assert ours["summary"] == theirs["summary"]
        want = {(i["type"], i["id"]): i for i in theirs["items"]}  # type: ignore[attr-defined]
        got = {(i["type"], i["id"]): i for i in ours["items"]}  # type: ignore[attr-defined]
        assert got.keys() == want.keys()
        for key, item in want.items():
            diff = differences(got[key], item, root.resolve())
            if diff:
                failures.append(f"{key} strict={bool(strict)}:\n    " + "\n    ".join(diff))
    assert not failures, "\n".join(notes) + "\n" + "\n".join(failures)
