"""The conformance gate of a run (SPEC §13), beside its verification.

Before each verification a private folder is made for the reports (in the run's sandbox
temporary folder, which the checks may write and the host reads; without a sandbox, a private
temporary folder), and each command gets ``PYTEST_ADDOPTS=--junitxml=<folder>/<n>.xml`` appended
to any value it had: pytest writes its JUnit report there, and the command line the user sees is
unchanged; ``RALPH_JUNIT_DIR`` names the folder for any other runner (the examples' unittest
runner writes there). After it, the reports there and every ``*.xml`` written or changed under
the root during the verification are read (``conformance/junit.py``), the test files rescanned
(incrementally) and the table made. What the policy needs is :meth:`ConformanceGate.facts`; the
next prompt's Conformance section :meth:`prompt_args`; the record, the table per verification
and the last one's cases (``conformance-cases.json`` beside the record, for ``ralph-lsp
conformance``)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any, Protocol

from ralph_lsp.conformance import gate
from ralph_lsp.conformance.check import conformance
from ralph_lsp.conformance.globs import DEFAULT_TEST_GLOBS, REPORT_SKIP_DIRS
from ralph_lsp.conformance.junit import Case, find_reports, read_reports
from ralph_lsp.conformance.scan import Scanner, walk_files
from ralph_lsp.conformance.table import Table
from ralph_lsp.loop import sandboxing
from ralph_lsp.openspec.workspace import Change
from ralph_lsp.runs.history import (
    RunHistory,
    atomic_write_json,
    history_root,
    load_records,
    read_small_file,
)
from ralph_lsp.runs.status import Level, now_iso
from ralph_lsp.settings import Settings

CASES_FILE = "conformance-cases.json"
NO_REPORT = (
    "the verification wrote no JUnit XML report, so no test is known to pass: pytest is asked"
    " for one (PYTEST_ADDOPTS); another runner must write one under the root or into"
    " $RALPH_JUNIT_DIR"
)
#: Set for each verification command: a folder any test runner may write JUnit XML into.
JUNIT_DIR_VARIABLE = "RALPH_JUNIT_DIR"
Stamps = dict[str, tuple[int, int, int]]


class GateHost(Protocol):
    settings: Settings
    work: Change
    sandbox: sandboxing.RunSandbox | None
    history: RunHistory

    def log(self, text: str, level: Level = "info") -> None: ...


def run_cases(root: Path, run_id: str) -> list[Case] | None:
    """The cases a run kept of its last verification (None: it kept none, or not readably)."""
    path = history_root(root) / "runs" / run_id / CASES_FILE
    try:
        raw = json.loads(read_small_file(path))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, list):
        return None
    return [c for c in map(Case.from_json, raw) if c]


def last_verification(root: Path, change: str) -> tuple[dict[str, Any] | None, list[Case]]:
    """The newest record of ``change`` whose run verified, and that verification's cases: what
    ``ralph-lsp conformance`` and the editor's scenario lenses combine with the links now."""
    for record in load_records(root, change):
        if isinstance(record.get("conformance"), dict):
            return record, run_cases(root, str(record["runId"])) or []
    return None, []


def _reports_before(root: Path) -> Stamps:
    """(mtime_ns, size, inode) of every XML file under ``root`` before a verification."""
    return {
        rel: (st.st_mtime_ns, st.st_size, st.st_ino)
        for rel, st in walk_files(root, REPORT_SKIP_DIRS, others=True)
        if rel.endswith(".xml")
    }


def _changed_reports(root: Path, before: Stamps) -> list[Path]:
    after = find_reports(root, 0)
    out = []
    for path in after:
        rel = path.relative_to(root).as_posix()
        try:
            st = path.lstat()
        except OSError:
            continue
        if before.get(rel) != (st.st_mtime_ns, st.st_size, st.st_ino):
            out.append(path)
    return out


class ConformanceGate:
    def __init__(self, host: GateHost) -> None:
        self.host = host
        self.scanner: Scanner | None = None
        self.require = "off"  # what the gate holds the run to now: verified, linked or off
        self.rule = False  # the prompt's fixed part says how a test names a scenario
        self.table: Table | None = None  # of the last verification
        self.cases: list[Case] = []
        self.at: str | None = None
        self._folder: Path | None = None
        self._before: Stamps = {}

    def start(self, verification_on: bool) -> None:
        """At the run's start: the scanner, and what the gate holds the run to, said once."""
        s = self.host.settings
        # the gate off, the table is still made when a reviewer is to read it (SPEC §13)
        if s.conformance_require == "off" and s.review_agent is None:
            return
        if not verification_on:
            self.host.log("conformance: off (verified needs a verification command, and none runs)")
            return
        globs = s.conformance_test_globs or DEFAULT_TEST_GLOBS
        try:
            self.scanner = Scanner(self.host.work.root, globs)
        except ValueError as exc:
            self.host.log(f"ralph.conformance.testGlobs: {exc}; the defaults are used", "warning")
            self.scanner = Scanner(self.host.work.root)
        now = self._evaluate([], [])
        self.require = gate.effective(s.conformance_require, now.table, now.project_linked)
        self.rule = self.require != "off"
        self.host.log(f"conformance ({s.conformance_require}): {self._said(now.table)}")

    def _said(self, table: Table) -> str:
        if self.host.settings.conformance_require == "off":
            return f"off; {len(table.rows)} scenarios, {table.linked} linked now, for the reviewer"
        if self.require == "off":
            return "off: no test of the project names a scenario yet"
        return f"{self.require}; {len(table.rows)} scenarios, {table.linked} linked now"

    def _evaluate(self, cases: list[Case], warnings: list[str]) -> Any:
        assert self.scanner is not None
        work = self.host.work
        return conformance(work.root, work.folder, self.scanner, cases, warnings)

    def begin(self) -> None:
        """Before a verification: the reports' private folder, the XML files as they are."""
        if self.scanner is None:
            return
        box = self.host.sandbox
        parent = None if box is None else box.box.policy.tmp_dir
        self._folder = Path(tempfile.mkdtemp(prefix="ralph-junit-", dir=parent))
        self._before = _reports_before(self.host.work.root)

    def env_for(self, n: int) -> dict[str, str]:
        """The n-th command's PYTEST_ADDOPTS: its own, then the JUnit report's option."""
        if self._folder is None:
            return {}
        env = {**os.environ, **self.host.settings.env}
        option = "--junitxml=" + shlex.quote(str(self._folder / f"pytest-{n}.xml"))
        mine = env.get("PYTEST_ADDOPTS", "").strip()
        return {
            "PYTEST_ADDOPTS": f"{mine} {option}" if mine else option,
            # where any other runner may write its JUnit XML (the examples' unittest runner)
            JUNIT_DIR_VARIABLE: str(self._folder),
        }

    def end(self) -> None:
        """After a verification: the reports read, the table made, the cases kept."""
        folder, self._folder = self._folder, None
        if folder is None or self.scanner is None:
            return
        root = self.host.work.root
        try:
            paths = sorted(folder.glob("*.xml")) + _changed_reports(root, self._before)
            cases, warnings = read_reports(paths, root)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        now = self._evaluate(cases, warnings)
        s = self.host.settings
        self.require = gate.effective(s.conformance_require, now.table, now.project_linked)
        self.table, self.cases, self.at = now.table, cases, now_iso()
        self._keep_cases()
        if self.require == "off":  # auto, and no test names a scenario yet: nothing to say
            return
        for warning in [*now.table.warnings, *([] if paths else [NO_REPORT])]:
            self.host.log(f"conformance: {warning}", "warning")
        self.host.log(f"conformance: {now.table.summary()}")

    def _keep_cases(self) -> None:
        history = self.host.history
        if history.ok:
            try:
                atomic_write_json(history.dir / CASES_FILE, [c.to_json() for c in self.cases])
            except OSError as exc:
                self.host.log(f"conformance: the cases were not kept ({exc})", "warning")

    def facts(self) -> dict[str, Any]:
        """What the policy reads of the last verification (IterationResult's fields)."""
        if self.table is None or self.require == "off":
            return {}
        return {
            "conformance": self.table.summary(),
            "unmet": gate.first_unmet(self.table, self.require),
            "scenarios_verified": self.table.verified,
        }

    def said(self) -> tuple[str | None, str | None]:
        """(the summary, the first unmet scenario) for ``policy.before_start``."""
        facts = self.facts()
        return facts.get("conformance"), facts.get("unmet")

    def counters(self) -> dict[str, Any]:
        """The Counters fields the last verification sets (a run's first verification)."""
        facts = self.facts()
        return {
            "unmet": facts.get("unmet"),
            "scenarios_verified": facts.get("scenarios_verified", 0),
        }

    def prompt_args(self) -> dict[str, Any]:
        """The prompt's rule (fixed for the run) and its Conformance section (current state)."""
        section: list[str] = []
        if self.table is not None and self.require != "off":
            section = gate.prompt_section(self.table, self.require)
        return {"scenario_rule": gate.PROMPT_RULE if self.rule else None, "conformance": section}

    def table_json(self) -> dict[str, Any] | None:
        return None if self.table is None else self.table.to_json()

    def record_json(self) -> dict[str, Any] | None:
        """The record's ``conformance``: the last verification's table and where its cases are."""
        if self.table is None:
            return None
        return {
            "require": self.require,
            "at": self.at,
            "casesFile": CASES_FILE,
            **self.table.to_json(),
        }
