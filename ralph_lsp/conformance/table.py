"""The conformance table (SPEC §13): each scenario of a change, its state and its test.

:class:`Row` and :class:`Table` are what the CLI prints, the history keeps per verification, the
prompt's Conformance section is phrased from, and the reviewer reads. :func:`build_table` makes
one from the change's scenarios, the test files' mentions (resolved against the titles here:
``Scenario: <title>``, or ``Scenario: <capability>/<title>`` where a title repeats across
capabilities, where an unqualified mention is an *ambiguous* warning, never a guess) and the
cases of the last verification's JUnit reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from ralph_lsp.conformance.junit import FAILED, PASSED, Case, matches
from ralph_lsp.conformance.links import Mention, TestRef
from ralph_lsp.conformance.scenarios import Scenario

# where a title may end: before a character that is not a letter or digit, after one that is not
# a space
_BOUNDARY = re.compile(r"(?<! )[^\w]|_")
_CLOSERS = " \"'`.,;:!?)]}*/>-"
VERIFIED, FAILING, NOT_RUN, UNLINKED = "verified", "failing", "not-run", "unlinked"
STATES = (VERIFIED, FAILING, NOT_RUN, UNLINKED)
_MARKS = {
    VERIFIED: "✓ verified",
    FAILING: "✗ failing",
    NOT_RUN: "○ not run",
    UNLINKED: "○ unlinked",
}


@dataclass(frozen=True)
class Row:
    key: str
    capability: str
    requirement: str
    title: str
    state: str  # verified, failing, not-run or unlinked
    test: str | None  # the linked test's id (the failing one when one fails)
    spec: str  # the delta spec, relative to the root
    line: int  # 1-based line of the scenario's header

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # every field, each named as in JSON


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


@dataclass(frozen=True)
class Table:
    rows: tuple[Row, ...]
    warnings: tuple[str, ...] = ()

    @property
    def verified(self) -> int:
        return sum(1 for r in self.rows if r.state == VERIFIED)

    @property
    def linked(self) -> int:
        return sum(1 for r in self.rows if r.state != UNLINKED)

    def summary(self) -> str:
        """``3/4 scenarios verified``."""
        n = len(self.rows)
        return f"{self.verified}/{n} scenario{'' if n == 1 else 's'} verified"

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "verified": self.verified,
            "total": len(self.rows),
            "rows": [r.to_json() for r in self.rows],
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, v: Any) -> Table | None:
        """A table read back from a record (None when it is not one)."""
        if not isinstance(v, Mapping) or not isinstance(v.get("rows"), list):
            return None
        rows = []
        for r in v["rows"]:
            try:
                rows.append(Row(**{k: r[k] for k in Row.__dataclass_fields__}))
            except (KeyError, TypeError):
                return None
        warnings = v.get("warnings")
        return cls(tuple(rows), tuple(w for w in warnings or [] if isinstance(w, str)))

    def render_markdown(self) -> str:
        """``| scenario | state | test |``, one row per scenario, then the warnings."""
        out = ["| scenario | state | test |", "| --- | --- | --- |"]
        for r in self.rows:
            test = f"`{_cell(r.test)}`" if r.test else "—"
            out.append(f"| {_cell(r.key)} | {_MARKS[r.state]} | {test} |")
        out += [f"- warning: {w}" for w in self.warnings]
        return "\n".join(out)


# --- resolving mentions --------------------------------------------------------------------


class Titles:
    """The titles a mention may name: the change's scenarios, and others (the main specs'),
    which count for the ``auto`` gate only."""

    def __init__(self, scenarios: Sequence[Scenario], others: Iterable[tuple[str, str]] = ()):
        self.by_title: dict[str, set[str]] = {}  # title → its capabilities
        for cap, title in [*((s.capability, s.title) for s in scenarios), *others]:
            self.by_title.setdefault(title, set()).add(cap)
        self.capabilities = {c for caps in self.by_title.values() for c in caps}
        self._memo: dict[str, tuple[str | None, str | None, bool]] = {}

    def _prefixes(self, text: str) -> Iterable[str]:
        """The prefixes of ``text`` that end at a word's end, longest first."""
        ends = [m.start() for m in _BOUNDARY.finditer(text, 1)]
        for i in [len(text), *reversed(ends)]:
            yield text[:i].rstrip()

    def resolve(self, text: str) -> tuple[str | None, str | None, bool]:
        """(capability or None when unqualified, title, ambiguous) of the scenario ``text``
        names, or (None, None, False); each text resolved once per set of titles."""
        found = self._memo.get(text)
        if found is None:
            found = self._memo[text] = self._resolve(text)
        return found

    def _resolve(self, text: str) -> tuple[str | None, str | None, bool]:
        quick = text.rstrip(_CLOSERS)  # the usual mention: the title, then a quote or a dot
        caps = self.by_title.get(quick)
        if caps and "/" not in text:
            return (next(iter(caps)), quick, False) if len(caps) == 1 else (None, quick, True)
        cut = -1
        while (cut := text.find("/", cut + 1)) > 0:
            if text[:cut] in self.capabilities:
                cap = text[:cut]
                for p in self._prefixes(text[cut + 1 :]):
                    if cap in self.by_title.get(p, ()):
                        return cap, p, False
        for p in self._prefixes(text):
            caps = self.by_title.get(p)
            if caps:
                return (next(iter(caps)), p, False) if len(caps) == 1 else (None, p, True)
        return None, None, False


class Link(NamedTuple):
    """A mention that names a scenario. (A tuple, as :class:`Mention`: a table links thousands,
    and a frozen dataclass is slow to build.)"""

    capability: str
    title: str
    test: TestRef
    file: str
    line: int


_link = tuple.__new__  # a Link without the Python-level __new__ of a NamedTuple


def resolve_links(
    files: Mapping[str, Sequence[Mention]], titles: Titles
) -> tuple[list[Link], list[str]]:
    """Every mention that names a title, and the warnings (ambiguous, outside every test)."""
    links: list[Link] = []
    warnings: list[str] = []
    for rel in sorted(files):
        for m in files[rel]:
            cap, title, ambiguous = titles.resolve(m.text)
            if ambiguous:
                caps = ", ".join(sorted(titles.by_title[title or ""]))
                warnings.append(
                    f"{rel}:{m.line}: ambiguous: scenario {title!r} is in {caps}; write"
                    f" `Scenario: <capability>/{title}`"
                )
            elif cap is not None and title is not None:
                if m.test is None:
                    warnings.append(
                        f"{rel}:{m.line}: names scenario {title!r} outside any test: not a link"
                    )
                else:
                    links.append(_link(Link, (cap, title, m.test, rel, m.line)))
    return links, warnings


# --- states --------------------------------------------------------------------------------


def _short(name: str) -> str:
    return name.split("[", 1)[0].split("(", 1)[0].rsplit("::", 1)[-1].rsplit(".", 1)[-1]


class Results:
    """The cases of the last verification's reports, found by a test's last name."""

    def __init__(self, cases: Sequence[Case]) -> None:
        self.cases = cases
        self.by_short: dict[str, list[Case]] = {}
        for c in cases:
            self.by_short.setdefault(_short(c.name), []).append(c)

    def state_of(self, ref: TestRef) -> str:
        if not self.cases:
            return NOT_RUN
        pool = self.cases if ref.language == "js" else self.by_short.get(_short(ref.name), [])
        outcomes = {c.outcome for c in pool if matches(ref, c)}
        if FAILED in outcomes:
            return FAILING
        return VERIFIED if PASSED in outcomes else NOT_RUN


_RANK = {FAILING: 0, VERIFIED: 1, NOT_RUN: 2}


def _state(tests: list[TestRef], results: Results) -> tuple[str, str | None]:
    """A scenario's state and the test shown: failing when any fails, else verified when any
    passed, else not run; unlinked without a test."""
    if not tests:
        return UNLINKED, None
    if len(tests) == 1:
        return results.state_of(tests[0]), tests[0].id
    states = sorted(((results.state_of(t), t.id) for t in tests), key=lambda x: _RANK[x[0]])
    if states[0][0] != FAILING:
        return next(((st, t) for st, t in states if st == VERIFIED), states[0])
    return states[0]


# (scenario, state, test) → its row: a rescan makes the same rows again (a frozen dataclass is
# slow to build, and a table has thousands)
_ROWS: dict[tuple[str, str, str, str, int, str, str | None], Row] = {}


def _row(s: Scenario, tests: list[TestRef], results: Results) -> Row:
    state, test = _state(tests, results)
    # the scenario's fields, not the scenario: a tuple of strings hashes without the Python
    # call a frozen dataclass's hash is
    key = (s.capability, s.requirement, s.title, s.spec, s.line, state, test)
    row = _ROWS.get(key)
    if row is None:
        if len(_ROWS) >= 100_000:
            _ROWS.clear()
        row = _ROWS[key] = Row(
            s.key, s.capability, s.requirement, s.title, state, test, s.spec, s.line
        )
    return row


def build_table(
    scenarios: Sequence[Scenario],
    links: Sequence[Link],
    cases: Sequence[Case],
    warnings: Sequence[str] = (),
) -> Table:
    """Each scenario's row: ``failing`` when a linked test failed or errored, else
    ``verified`` when one passed, else ``not-run`` (linked, in no report), else ``unlinked``."""
    by_scenario: dict[tuple[str, str], list[TestRef]] = {}
    for link in links:
        tests = by_scenario.setdefault((link.capability, link.title), [])
        if link.test not in tests:
            tests.append(link.test)
    results = Results(cases)
    rows = tuple(_row(s, by_scenario.get((s.capability, s.title), []), results) for s in scenarios)
    return Table(rows, tuple(warnings))
