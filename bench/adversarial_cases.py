"""Validation on adversarial input (issue 46, fault 5): the time of the worst of a set of
crafted 3 MB files against a plain 3 MB spec, in-process; and, through a real client, how soon
`ralph.changes` is answered while the server validates a crafted 3 MB spec an edit brought."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types

from bench.client import session
from bench.common import percentile, rnd, scratch
from bench.report import Results

SIZE = 3_000_000
SUFFIX = ". Update Purpose after archive."
HEAD = "# Crafted\n\n## Purpose\n"
REQS = "\n\n## Requirements\n### Requirement: A\nThe system SHALL work.\n\n#### Scenario: s\n- ok\n"
BODY = HEAD + "x" * 60 + "\n\n## Requirements\n"


def _run(unit: str) -> str:
    return unit * (SIZE // len(unit))


# name → (which reader: "main" or "delta", the file's text); each was quadratic or is a shape
# the audit tried (long lines with no newline, runs of `#`, repeated prefixes, CRLF mixes)
CRAFTED: dict[str, tuple[str, Callable[[], str]]] = {
    "purpose_of_suffixes": ("main", lambda: HEAD + _run(SUFFIX) + REQS),
    "purpose_of_prefixes": (
        "main",
        lambda: HEAD + _run("TBD - created by archiving change ") + REQS,
    ),
    "purpose_one_line": ("main", lambda: HEAD + "TBD" + _run(" ") + "x" + REQS),
    "header_of_spaces": ("main", lambda: BODY + "##" + _run(" ") + "x\u2028\n"),
    "hashes": ("main", lambda: BODY + _run("#") + "\n"),
    "closing_run": ("main", lambda: BODY + "### Requirement: a" + _run(" ") + "#x\nSHALL\n"),
    "scenarios": (
        "main",
        lambda: BODY + "### Requirement: a\nSHALL\n" + _run("#### Scenario: s\n"),
    ),
    "crlf_mix": ("main", lambda: BODY + _run("### Requirement: a\r\nThe system SHALL.\r\r\n")),
    "skipped_h3": ("delta", lambda: "## ADDED Requirements\n### a" + _run(" ") + "b\n"),
    "removed_bullet": (
        "delta",
        lambda: "## REMOVED Requirements\n- ### Requirement: a" + _run(" ") + "b\n",
    ),
    "renamed_spaces": ("delta", lambda: "## RENAMED Requirements\n" + _run(" ") + "x\n"),
}
PLAIN = (
    HEAD
    + _run("What this capability is for, written by someone who knows. ")
    + "\n\n## Requirements\n"
    + "### Requirement: A\nThe system SHALL work.\n\n#### Scenario: s\n- ok\n"
)


# a plain 3 MB spec of ordinary requirements (as the 10,000-requirement case writes them)
DENSE = BODY + "".join(
    f"### Requirement: Requirement number {i}\nThe system SHALL do thing {i}.\n\n"
    f"#### Scenario: Case {i}\n- **WHEN** input {i}\n- **THEN** output {i}\n\n"
    for i in range(21_000)
)


def _time(check: Callable[[str], object], text: str, reps: int) -> float:
    """The median of `reps` validations, each of a text not seen before (the readers cache)."""
    times = []
    for k in range(reps):
        fresh = f"{text}\n<!-- {k} -->\n"
        t0 = time.perf_counter()
        check(fresh)
        times.append((time.perf_counter() - t0) * 1000)
    return percentile(times, 50)


def worst_3mb(results: Results, reps: int) -> None:
    """`validate_adversarial_3mb_ms`: the worst crafted file's median; the plain spec's too."""
    from ralph_lsp.openspec.validation.blocks import parse_delta_spec
    from ralph_lsp.openspec.validation.delta_rules import structural_issues
    from ralph_lsp.openspec.validation.spec_rules import spec_issues

    def main(text: str) -> object:
        return spec_issues(text, None)

    def delta(text: str) -> object:
        return structural_issues(parse_delta_spec(text), "specs/a/spec.md", Path("spec.md"))

    readers = {"main": main, "delta": delta}
    each = {name: rnd(_time(readers[kind], make(), reps)) for name, (kind, make) in CRAFTED.items()}
    plain = _time(main, PLAIN, reps)
    dense = _time(main, DENSE, reps)
    worst = max(each, key=lambda name: each[name])
    results.put("validate_adversarial_3mb_ms", each[worst], reps)
    results.details["validate_adversarial_3mb_ms"] = {
        "worst": worst,
        "bytes": SIZE,
        "plain_3mb_spec_ms": rnd(plain),
        "plain_requirements_3mb_ms": rnd(dense),
        "worst_over_plain_requirements": round(each[worst] / dense, 2),
        "each_ms": each,
    }


def _crafted_spec() -> str:
    """The LSP test's crafted spec: half a Purpose of suffixes, half requirements without
    SHALL whose headers end in long space runs (each one a finding)."""
    block = "### Requirement: R{}" + " " * 80 + "\nThe system works.\n\n#### Scenario: s\n- ok\n\n"
    count = SIZE // 2 // len(block)
    blocks = "".join(block.format(i) for i in range(count))
    return f"{HEAD}{SUFFIX * (SIZE // 2 // len(SUFFIX))}\n\n## Requirements\n{blocks}"


async def request_during_crafted_edit(results: Results, edits: int) -> None:
    """`validate_crafted_edit_request_ms`: `ralph.changes` sent right after each didChange that
    brings a crafted 3 MB spec (or takes it away again), to its answer."""
    crafted = _crafted_spec()
    with scratch("validate-crafted") as tmp:
        root = tmp / "proj"
        (root / "openspec" / "changes" / "c").mkdir(parents=True)
        (root / "openspec" / "changes" / "c" / "tasks.md").write_text("- [ ] 1.1 x\n")
        path = root / "openspec" / "specs" / "crafted" / "spec.md"
        path.parent.mkdir(parents=True)
        path.write_text(PLAIN)
        samples: list[float] = []
        idle: list[float] = []
        async with session(root) as c:
            uri = c.open_document(path)
            await c.quiet(1.0, 30)
            for _ in range(edits):  # the same request with no edit before it
                t0 = time.perf_counter()
                await c.command("ralph.changes", {})
                idle.append((time.perf_counter() - t0) * 1000)
            for i in range(1, edits + 1):
                c.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        types.VersionedTextDocumentIdentifier(uri=uri, version=i + 1),
                        [types.TextDocumentContentChangeWholeDocument(crafted if i % 2 else PLAIN)],
                    )
                )
                t0 = time.perf_counter()
                await c.command("ralph.changes", {})
                samples.append((time.perf_counter() - t0) * 1000)
                await c.quiet(0.5, 60)  # the edit's findings sent before the next edit
    p50 = {"p50": rnd(percentile(samples, 50)), "p95": rnd(percentile(samples, 95))}
    results.put("validate_crafted_edit_request_ms", p50, len(samples))
    results.details["validate_crafted_edit_request_ms"] = {
        "bytes": len(crafted),
        "edits": edits,
        "crafted_edits_p50": rnd(percentile(samples[0::2], 50)),
        "plain_edits_p50": rnd(percentile(samples[1::2], 50)),
        "no_edit_p50": rnd(percentile(idle, 50)),
        "no_edit_p95": rnd(percentile(idle, 95)),
    }
