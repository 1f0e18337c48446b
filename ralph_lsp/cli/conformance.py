"""``ralph-lsp conformance CHANGE [--json]``: the change's conformance table (SPEC §13).

The scenarios and the tests that name them are read now (the change's delta specs, the
project's test files); whether those tests passed is what the JUnit reports of the last run's
last verification said (the cases kept beside its record, ``conformance-cases.json``). Exit 0
only when every scenario is verified, 1 otherwise, 2 for a usage error (an unknown change).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ralph_lsp.cli.common import change_of, root_of
from ralph_lsp.cli.jsonout import dumps_indented
from ralph_lsp.conformance.check import conformance
from ralph_lsp.conformance.globs import DEFAULT_TEST_GLOBS
from ralph_lsp.conformance.scan import Scanner
from ralph_lsp.loop.conformance_step import last_verification
from ralph_lsp.settings import Settings


def cmd_conformance(args: argparse.Namespace, out: TextIO) -> int:
    root = root_of(args.root)
    change = change_of(root, args.change)  # a usage error (2) for an unknown change
    globs = Settings().conformance_test_globs or DEFAULT_TEST_GLOBS
    record, cases = last_verification(root, change.name)
    found = conformance(root, change.folder, Scanner(root, globs), cases)
    table = found.table
    if args.json:
        data = table.to_json()
        data["run"] = record["runId"] if record else None
        out.write(dumps_indented(data) + "\n")
    else:
        print(table.render_markdown(), file=out)
        where = f"run {record['runId']}'s last verification" if record else "no verification yet"
        print(f"\n{table.summary()} ({where})", file=out)
    if record is None:
        print(
            f"ralph-lsp: {change.name} has no verified run yet: no test is known to pass",
            file=sys.stderr,
        )
    return 0 if table.verified == len(table.rows) else 1
