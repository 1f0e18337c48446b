"""JUnit XML reports, the test runners' own word on which tests passed (SPEC §13 "Verified").

A report is read with defusedxml: one that is malformed, over :data:`MAX_REPORT_BYTES`, a link,
a FIFO or anything but a regular file, or that declares entities (a billion laughs) or external
ones, is a warning and counts as no report; reading one never blocks, follows a link or opens
another file. Its ``testcase`` s become :class:`Case` s (classname, name, file, outcome), and
:func:`matches` says whether a case is a link's test, as each runner names tests: pytest
(``tests.test_cli`` / ``test_shout[param]``), jest-junit and vitest (the ``it`` title at the end
of the name), gotestsum (package path / ``TestX``), cargo nextest (``module::x``) and Surefire
(``com.example.FooTest`` / ``x``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ralph_lsp.conformance.globs import REPORT_SKIP_DIRS
from ralph_lsp.conformance.links import TestRef
from ralph_lsp.conformance.scan import walk_files
from ralph_lsp.openspec.regular_files import read_regular

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

MAX_REPORT_BYTES = 16 * 1024 * 1024
#: Reports read after one verification at most (a tree of stray XML is not read whole).
MAX_REPORTS = 200
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    file: str
    outcome: str  # passed, failed (a failure or an error) or skipped

    def to_json(self) -> list[str]:
        return [self.classname, self.name, self.file, self.outcome]

    @classmethod
    def from_json(cls, v: object) -> Case | None:
        if isinstance(v, list) and len(v) == 4 and all(isinstance(x, str) for x in v):
            return cls(v[0], v[1], v[2], v[3])
        return None


def _outcome(case: Element) -> str:
    tags = {child.tag for child in case}
    if tags & {"failure", "error"}:
        return FAILED
    return SKIPPED if "skipped" in tags else PASSED


def parse_report(data: bytes) -> list[Case] | None:
    """The cases of a JUnit report's bytes; None when it is no JUnit report (another XML);
    ``ValueError`` saying why when it cannot be read safely."""
    # The XML parser is loaded with the first report, not with the server that lists cases.
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root = fromstring(data)
    except DefusedXmlException as exc:
        raise ValueError(f"refused: {type(exc).__name__} (entities are not read)") from None
    except (ParseError, ValueError, RecursionError) as exc:
        raise ValueError(f"malformed XML ({exc})") from None
    if root.tag not in ("testsuites", "testsuite"):
        return None
    return [
        Case(c.get("classname", ""), c.get("name", ""), c.get("file", ""), _outcome(c))
        for c in root.iter("testcase")
    ]


def read_report(path: Path, shown: str) -> tuple[list[Case] | None, str | None]:
    """(its cases or None, a warning or None) for one report file."""
    try:
        data = read_regular(path, MAX_REPORT_BYTES, follow=False)
    except OSError as exc:
        return None, f"JUnit report {shown}: {exc.strerror or exc}; counted as no report"
    try:
        return parse_report(data), None
    except ValueError as exc:
        return None, f"JUnit report {shown}: {exc}; counted as no report"


def find_reports(root: Path, since_ns: int) -> list[Path]:
    """Every ``*.xml`` below ``root`` changed at or after ``since_ns`` (a link or a FIFO too,
    for :func:`read_report` to refuse), outside dependency and version-control folders."""
    found: list[Path] = []
    for rel, st in walk_files(root, REPORT_SKIP_DIRS, others=True):
        if rel.endswith(".xml") and not stat.S_ISDIR(st.st_mode) and st.st_mtime_ns >= since_ns:
            found.append(root / rel)
    return sorted(found)


def read_reports(paths: list[Path], root: Path) -> tuple[list[Case], list[str]]:
    """Every case of ``paths`` (at most :data:`MAX_REPORTS` files), and the warnings."""
    cases: list[Case] = []
    warnings: list[str] = []
    for path in paths[:MAX_REPORTS]:
        shown = os.path.relpath(path, root) if path.is_relative_to(root) else path.name
        found, warning = read_report(path, shown)
        cases += found or []
        if warning:
            warnings.append(warning)
    if len(paths) > MAX_REPORTS:
        warnings.append(f"{len(paths) - MAX_REPORTS} more XML files were not read")
    return cases, warnings


# --- a case against a link's test ----------------------------------------------------------


def _dotted_suffix(a: str, b: str) -> bool:
    """One dotted name ends the other (pytest's classname depends on its rootdir)."""
    return a == b or a.endswith("." + b) or b.endswith("." + a)


def _path_suffix(a: str, b: str) -> bool:
    a, b = a.replace("\\", "/").lstrip("./"), b.replace("\\", "/").lstrip("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _python(ref: TestRef, case: Case) -> bool:
    *classes, func = ref.name.split("::")
    name = case.name.split("[", 1)[0]
    if name != func:
        return False
    if case.file and not _path_suffix(case.file, ref.file):
        return False
    module = ref.file.removesuffix(".py").replace("/", ".")
    return _dotted_suffix(case.classname, ".".join([module, *classes]))


def _ends_title(text: str, title: str) -> bool:
    return text == title or (text.endswith(title) and text[-len(title) - 1] in " >›")


def _js(ref: TestRef, case: Case) -> bool:
    where = case.file or (case.classname if "/" in case.classname else "")
    if where and not _path_suffix(where, ref.file):
        return False
    return _ends_title(case.name, ref.name) or _ends_title(case.classname, ref.name)


def _go(ref: TestRef, case: Case) -> bool:
    folder = os.path.dirname(ref.file)
    package = case.classname.replace("\\", "/")
    in_package = not folder or package == folder or package.endswith("/" + folder)
    return case.name == ref.name and in_package


def _rust(ref: TestRef, case: Case) -> bool:
    return case.name == ref.name or case.name.endswith("::" + ref.name)


def _java(ref: TestRef, case: Case) -> bool:
    stem = os.path.basename(ref.file).removesuffix(".java")
    name_ok = case.name == ref.name or case.name.startswith(ref.name + "(")
    return name_ok and (case.classname == stem or case.classname.endswith("." + stem))


_MATCHERS = {"python": _python, "js": _js, "go": _go, "rust": _rust, "java": _java}


def matches(ref: TestRef, case: Case) -> bool:
    """Whether the report's ``case`` is the run of the link's test ``ref``."""
    matcher = _MATCHERS.get(ref.language)
    return matcher is not None and matcher(ref, case)
