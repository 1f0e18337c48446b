"""A change's conformance table in one call: its scenarios, the links the scanner finds now, and
the cases of a verification's reports (what the loop, the CLI and the server each call)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.bursts import collector_paused
from ralph_lsp.conformance.junit import Case
from ralph_lsp.conformance.links import Mention
from ralph_lsp.conformance.scan import Scanner
from ralph_lsp.conformance.scenarios import Scenario, change_scenarios, main_spec_titles
from ralph_lsp.conformance.table import Table, Titles, build_table, resolve_links

# the titles of the last call, with what they resolved: a rescan with unchanged specs reuses them
_LAST: list[tuple[tuple[object, ...], Titles]] = []


def _titles(scenarios: Sequence[Scenario], main: Sequence[tuple[str, str]]) -> Titles:
    """The titles of these scenarios, reused from the last call when they are the same. Read
    once into a local: the server's conformance worker and a run hosted in the server may
    call at the same time, and each must get its own call's titles."""
    key = (*((s.capability, s.title) for s in scenarios), None, *main)
    last = _LAST[0] if _LAST else None
    if last is None or last[0] != key:
        last = (key, Titles(scenarios, main))
        _LAST[:] = [last]
    return last[1]


@dataclass(frozen=True)
class Conformance:
    table: Table
    project_linked: bool  # a test names a scenario of the main specs (the `auto` gate)


@collector_paused  # the scan's tuples, then the links and rows of every scenario
def conformance(
    root: Path,
    change_folder: Path,
    scanner: Scanner,
    cases: Sequence[Case] = (),
    warnings: Sequence[str] = (),
    files: Mapping[str, Sequence[Mention]] | None = None,
) -> Conformance:
    """The table of the change at ``change_folder`` (below ``root``), ``warnings`` (the
    reports') first among its warnings; the mentions are ``scanner.scan()``'s, or ``files``
    (what an update of the scanner just gave: the server's path after a file change)."""
    scenarios, spec_warnings = change_scenarios(root, change_folder)
    main = main_spec_titles(root)
    files = scanner.scan() if files is None else files
    links, link_warnings = resolve_links(files, _titles(scenarios, main))
    own = {(s.capability, s.title) for s in scenarios}
    project_linked = any((link.capability, link.title) not in own for link in links)
    mine = [link for link in links if (link.capability, link.title) in own]
    every = [*warnings, *spec_warnings, *scanner.warnings, *link_warnings]
    return Conformance(build_table(scenarios, mine, cases, every), project_linked)
