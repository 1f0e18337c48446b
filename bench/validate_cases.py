"""OpenSpec validation (SPEC §11): edit → diagnostics on the corpus's largest change,
`ralph-lsp validate --all` against `openspec validate --all` over the corpus, and a main spec of
10,000 requirements."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from bench import openspec
from bench.client import session
from bench.common import PY, bench_env, percentile, rnd, scratch
from bench.report import Results

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "openspec-changes"


def _largest_change() -> tuple[str, str, Path]:
    """(repo, change, its largest delta spec) of the corpus change with the most delta bytes."""
    best: tuple[int, str, str, Path] | None = None
    for change in CORPUS.glob("*/openspec/changes/*"):
        deltas = list(change.glob("specs/**/spec.md"))
        size = sum(d.stat().st_size for d in deltas)
        if deltas and (best is None or size > best[0]):
            biggest = max(deltas, key=lambda d: d.stat().st_size)
            best = (size, change.parents[2].name, change.name, biggest)
    assert best is not None, "no corpus change with a delta"
    return best[1], best[2], best[3]


async def edit_to_diagnostics(results: Results, edits: int) -> None:
    """didChange of the open delta → its publishDiagnostics, alternating a finding on and off."""
    if not CORPUS.is_dir():
        results.skip(("validate_edit_to_diagnostics_ms",), f"no corpus at {CORPUS}")
        return
    repo, change, delta = _largest_change()
    with scratch("validate-edits") as tmp:
        root = tmp / repo
        shutil.copytree(CORPUS / repo, root)
        path = root / delta.relative_to(CORPUS / repo)
        text = path.read_text(encoding="utf-8", errors="replace")
        # an orphan requirement at the end: one more finding, on and off
        broken = text + "\n## Notes\n\n### Requirement: Bench orphan\nThe system SHALL x.\n"
        samples: list[float] = []
        async with session(root) as c:
            uri = c.open_document(path)
            await c.quiet(1.0, 30)
            for i in range(1, edits + 1):
                t0 = time.perf_counter()
                c.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        types.VersionedTextDocumentIdentifier(uri=uri, version=i + 1),
                        [types.TextDocumentContentChangeWholeDocument(broken if i % 2 else text)],
                    )
                )
                ev = await c.wait_for(
                    lambda e: (
                        e.method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS and e.params.uri == uri
                    ),
                    since=t0,
                    timeout=5,
                )
                if ev is not None:
                    samples.append((ev.t - t0) * 1000)
    p50 = {"p50": rnd(percentile(samples, 50)), "p95": rnd(percentile(samples, 95))}
    results.put("validate_edit_to_diagnostics_ms", p50, len(samples))
    results.details["validate_edit_to_diagnostics_ms"] = {
        "change": f"{repo}/{change}",
        "file": str(delta.relative_to(CORPUS)),
        "bytes": len(text.encode()),
        "edits": edits,
        "answered": len(samples),
    }


def _wall(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=300, check=False)
    return (time.perf_counter() - t0) * 1000, out.stdout.decode("utf-8", "replace")


def validate_vs_openspec(results: Results) -> None:
    """One `validate --all --json` of each tool in each corpus repository, wall times summed."""
    try:
        theirs_argv = openspec.command()
    except openspec.Unavailable as exc:
        results.skip(("validate_vs_openspec",), str(exc))
        return
    script = Path(PY).with_name("ralph-lsp")
    ours_argv = [str(script)] if script.exists() else [PY, "-m", "ralph_lsp"]
    env, os_env = bench_env(), bench_env(**openspec.ENV, OPENSPEC_NO_UPDATE_CHECK="1", CI="1")
    ours_ms = theirs_ms = 0.0
    disagree: list[str] = []
    repos = sorted(p for p in CORPUS.iterdir() if (p / "openspec").is_dir())
    with scratch("validate-all") as tmp:
        for repo in repos:
            root = tmp / repo.name
            shutil.copytree(repo, root)
            mine, our_out = _wall([*ours_argv, "validate", "--all", "--json"], root, env)
            theirs, their_out = _wall([*theirs_argv, "validate", "--all", "--json"], root, os_env)
            ours_ms, theirs_ms = ours_ms + mine, theirs_ms + theirs
            if _summary(our_out) != _summary(their_out):
                disagree.append(repo.name)
    results.put("validate_vs_openspec", round(ours_ms / theirs_ms, 3), 1)
    results.details["validate_vs_openspec"] = {
        "repositories": len(repos),
        "ralph_lsp_validate_all_ms": rnd(ours_ms),
        "openspec_validate_all_ms": rnd(theirs_ms),
        "summaries_disagree": disagree,
    }


def _summary(out: str) -> Any:
    import json

    try:
        return json.loads(out)["summary"]
    except (ValueError, KeyError):
        return None


def ten_thousand_requirements(results: Results, reps: int) -> None:
    """`validate_spec` of a synthetic main spec with 10,000 requirements, in-process."""
    from ralph_lsp.openspec.validation.blocks import extract_requirements_section
    from ralph_lsp.openspec.validation.spec_rules import validate_spec
    from ralph_lsp.openspec.validation.structure import structure_issues
    from ralph_lsp.openspec.validation.text import header_lines, lines_and_mask

    parts = ["# big\n\n## Purpose\nA synthetic main spec with ten thousand requirements.\n\n"]
    parts.append("## Requirements\n\n")
    for i in range(10_000):
        parts.append(
            f"### Requirement: Requirement number {i}\nThe system SHALL do thing {i}.\n\n"
            f"#### Scenario: Case {i}\n- **WHEN** input {i}\n- **THEN** output {i}\n\n"
        )
    with scratch("validate-10k") as tmp:
        file = tmp / "openspec" / "specs" / "big" / "spec.md"
        file.parent.mkdir(parents=True)
        file.write_text("".join(parts))
        size = file.stat().st_size
        times = []
        for _ in range(reps):
            caches = (extract_requirements_section, structure_issues, lines_and_mask, header_lines)
            for cached in caches:
                cached.cache_clear()  # each repetition reads the spec afresh
            t0 = time.perf_counter()
            report = validate_spec(file)
            times.append((time.perf_counter() - t0) * 1000)
    assert report.valid, [i.message for i in report.issues[:3]]
    results.put("validate_10k_requirements_ms", rnd(percentile(times, 50)), reps)
    results.details["validate_10k_requirements_ms"] = {"bytes": size, "median_of": reps}
