"""The conformance gate (SPEC §13 "Gate"): which scenarios still stop a run, said as the
project's current state.

``ralph.conformance.require``: ``verified`` (every scenario's test passed in the last
verification), ``linked`` (every scenario has a test that names it), ``off``, or ``auto``:
``verified`` once any test of the project names any scenario (of the change or of the main
specs), else ``off``: a project that never linked a scenario is not held back by a gate it has
not adopted, and one that did is held to it.
"""

from __future__ import annotations

from ralph_lsp.conformance.table import FAILING, NOT_RUN, UNLINKED, VERIFIED, Row, Table

REQUIRES = ("auto", "verified", "linked", "off")

#: The prompt's fixed part, when the gate is on: how a test names a scenario.
PROMPT_RULE = (
    "Each scenario of the change's delta specs (`#### Scenario: <title>`) needs a test that"
    " names it and passes: write `Scenario: <title>` in the test's docstring, in a comment"
    " inside the test, or in its title string (`Scenario: <capability>/<title>` when two"
    " capabilities share a title)."
)


def effective(require: str, table: Table, project_linked: bool = False) -> str:
    """``verified``, ``linked`` or ``off``: ``auto`` decided by the table and the project."""
    if require != "auto":
        return require
    return VERIFIED if table.linked or project_linked else "off"


def unmet(table: Table, require: str) -> list[Row]:
    """The rows that keep the gate shut, in spec order."""
    if require == VERIFIED:
        return [r for r in table.rows if r.state != VERIFIED]
    if require == "linked":
        return [r for r in table.rows if r.state == UNLINKED]
    return []


def sentence(row: Row) -> str:
    """One unmet scenario as the project's state now."""
    if row.state == UNLINKED:
        return f"Scenario *{row.title}* has no test that names it ({row.spec}:{row.line})"
    if row.state == FAILING:
        return f"the test for *{row.title}*, {row.test}, fails"
    if row.state == NOT_RUN:
        return (
            f"the test for *{row.title}*, {row.test}, did not run in the verification"
            " (no JUnit report names it)"
        )
    return f"Scenario *{row.title}* is verified by {row.test}"


def first_unmet(table: Table, require: str) -> str | None:
    """The first unmet scenario's sentence, capitalised, for a run's reason; None when met."""
    rows = unmet(table, require)
    if not rows:
        return None
    text = sentence(rows[0])
    more = len(rows) - 1
    return text[:1].upper() + text[1:] + (f" (and {more} more unmet)" if more else "")


def prompt_section(table: Table, require: str) -> list[str]:
    """The Conformance section of the next prompt (empty when the gate is met)."""
    rows = unmet(table, require)
    if not rows:
        return []
    out = ["## Conformance", f"{table.summary()}. Not yet met:"]
    out += [f"- {sentence(r)[:1].upper() + sentence(r)[1:]}." for r in rows[:200]]
    if len(rows) > 200:
        out.append(f"- … and {len(rows) - 200} more scenarios")
    out.append(
        "The change is done only when every scenario's test names it"
        + (" and passes." if require == VERIFIED else ".")
    )
    return out
