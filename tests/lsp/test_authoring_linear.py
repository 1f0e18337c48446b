"""A crafted delta cannot stall the server through its outline (issue 46, fault 5): the
document symbols, read on the event loop, used the CLI's scenario-name pattern, quadratic in a
long run of spaces inside a name (a 40 KB `#### Scenario:` line took seconds), and found each
requirement's section by a walk over every section above it.

A real client asks for the symbols of a delta with such lines and of a plain delta of the same
size; the crafted one must cost about what the plain one costs. On a loaded machine only the
ratio is asserted (best of three of each, against a generous bound), never a time."""

from __future__ import annotations

import time
from pathlib import Path

from lsprotocol import types

from tests.lsp.conftest import Session, StartSession, wait_until
from tests.lsp.test_openspec_diagnostics import delta, do_edit, do_open

RUN = 40_000
HEAD = "## ADDED Requirements\n### Requirement: A\nThe system SHALL work.\n\n"
PAIRS = "## Notes\n### Requirement: R\nThe system SHALL x.\n\n" * 500


def crafted(filler: str) -> str:
    """Two scenarios whose names hold a long run of `filler`, then sections alternating with
    requirements (spaces: the crafted delta; letters: a plain delta of the same size, whose
    first requirement lacks its SHALL, so that the two have different findings)."""
    scenario = "#### Scenario: a" + filler * RUN + "x\n- **WHEN** a\n- **THEN** b\n\n"
    head = HEAD if filler == " " else HEAD.replace("SHALL work", "works")
    return head + scenario * 2 + PAIRS


async def symbols(s: Session, uri: str) -> tuple[float, list[types.DocumentSymbol]]:
    """The best of three round trips of a document-symbol request, and its answer."""
    best, got = float("inf"), None
    for _ in range(3):
        start = time.monotonic()
        got = await s.client.text_document_document_symbol_async(
            types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))
        )
        best = min(best, time.monotonic() - start)
    assert isinstance(got, list)
    return best, got  # type: ignore[return-value]


async def test_the_symbols_of_a_crafted_delta_cost_what_a_plain_ones_do(
    start_session: StartSession, workspace: Path
) -> None:
    file = delta(workspace)
    file.parent.mkdir(parents=True, exist_ok=True)
    plain = crafted("b")
    file.write_text(plain)
    uri = file.as_uri()
    s = await start_session(workspace)
    do_open(s.client, uri, plain)
    await wait_until(lambda: uri in s.client.diagnostics, what="the plain delta's diagnostics")
    plain_time, plain_symbols = await symbols(s, uri)
    s.client.diagnostics.pop(uri, None)
    do_edit(s.client, uri, crafted(" "), 2)
    await wait_until(lambda: uri in s.client.diagnostics, what="the crafted delta's diagnostics")
    crafted_time, crafted_symbols = await symbols(s, uri)
    names = [c.name for c in crafted_symbols[0].children or []]
    assert names == ["a" + " " * RUN + "x"] * 2
    assert len(crafted_symbols) == len(plain_symbols) == 501
    assert crafted_time <= 10 * max(plain_time, 0.05), (plain_time, crafted_time)
