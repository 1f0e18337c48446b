"""JUnit XML reports (SPEC §13 "Verified"): each runner's shape matched to a link's test, and
every hostile report a warning that counts as no report, never a crash, a hang or another file
read."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ralph_lsp.conformance.junit import (
    MAX_REPORT_BYTES,
    Case,
    find_reports,
    matches,
    parse_report,
    read_report,
    read_reports,
)
from ralph_lsp.conformance.links import TestRef as Ref

# Small reports in the shape each runner writes (attributes and nesting as they emit them).
PYTEST = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite
 name="pytest" errors="0" failures="1" skipped="0" tests="3" time="0.1"><testcase
 classname="tests.test_cli" name="test_shout" time="0.001" /><testcase
 classname="tests.test_cli.TestTwice" name="test_twice[2]" time="0.001"><failure
 message="assert 1 == 2">boom</failure></testcase><testcase classname="tests.test_cli"
 name="test_skip" time="0"><skipped type="pytest.skip" message="later" /></testcase>
 </testsuite></testsuites>"""
JEST_JUNIT = """<?xml version="1.0" encoding="UTF-8"?><testsuites name="jest tests" tests="1"
 failures="0" errors="0" time="0.5"><testsuite name="cli" errors="0" failures="0" skipped="0"
 timestamp="2026-01-01T00:00:00" time="0.4" tests="1"><testcase classname="cli shouts once"
 name="cli shouts once" time="0.002"></testcase></testsuite></testsuites>"""
VITEST = """<?xml version="1.0" encoding="UTF-8" ?><testsuites name="vitest tests" tests="1"
 failures="1" errors="0" time="0.3"><testsuite name="src/cli.test.ts" timestamp="2026-01-01"
 hostname="h" tests="1" failures="1" errors="0" skipped="0" time="0.01"><testcase
 classname="src/cli.test.ts" name="cli &gt; shouts twice" time="0.001"><failure
 message="expected" type="AssertionError">x</failure></testcase></testsuite></testsuites>"""
GOTESTSUM = """<?xml version="1.0" encoding="UTF-8"?><testsuites tests="2" failures="0"
 errors="0" time="0.2"><testsuite tests="2" failures="0" time="0.1" name="example.com/m/pkg"
 timestamp="2026-01-01T00:00:00Z"><properties><property name="go.version" value="go1.23"/>
 </properties><testcase classname="example.com/m/pkg" name="TestShout" time="0.0"></testcase>
 <testcase classname="example.com/m/pkg" name="TestShout/sub" time="0.0"></testcase>
 </testsuite></testsuites>"""
NEXTEST = """<?xml version="1.0" encoding="UTF-8"?><testsuites name="nextest-run" tests="1"
 failures="0" errors="0" uuid="u" timestamp="2026-01-01T00:00:00Z" time="0.1"><testsuite
 name="shout::cli" tests="1" disabled="0" errors="0" failures="0"><testcase
 name="tests::shouts" classname="shout::cli" timestamp="2026-01-01T00:00:00Z" time="0.001">
 </testcase></testsuite></testsuites>"""
SUREFIRE = """<?xml version="1.0" encoding="UTF-8"?><testsuite
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" name="com.example.CliTest" time="0.02"
 tests="1" errors="1" skipped="0" failures="0"><properties><property name="java.version"
 value="21"/></properties><testcase name="twice" classname="com.example.CliTest" time="0.01">
 <error message="npe" type="java.lang.NullPointerException">at x</error></testcase>
 </testsuite>"""


def _cases(xml: str) -> list[Case]:
    found = parse_report(xml.encode())
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("xml", "ref", "outcome"),
    [
        (PYTEST, Ref("tests/test_cli.py", "test_shout", "python"), "passed"),
        (PYTEST, Ref("tests/test_cli.py", "TestTwice::test_twice", "python"), "failed"),
        (PYTEST, Ref("tests/test_cli.py", "test_skip", "python"), "skipped"),
        (JEST_JUNIT, Ref("src/cli.test.js", "shouts once", "js"), "passed"),
        (VITEST, Ref("src/cli.test.ts", "shouts twice", "js"), "failed"),
        (GOTESTSUM, Ref("pkg/shout_test.go", "TestShout", "go"), "passed"),
        (NEXTEST, Ref("tests/cli.rs", "shouts", "rust"), "passed"),
        (SUREFIRE, Ref("src/test/java/com/example/CliTest.java", "twice", "java"), "failed"),
    ],
)
def test_each_runners_report_matches_the_links_test(xml: str, ref: Ref, outcome: str) -> None:
    found = [c.outcome for c in _cases(xml) if matches(ref, c)]
    assert found == [outcome]


def test_a_case_of_another_file_or_test_does_not_match() -> None:
    cases = _cases(PYTEST) + _cases(VITEST) + _cases(GOTESTSUM)
    for ref in (
        Ref("tests/test_api.py", "test_shout", "python"),
        Ref("tests/test_cli.py", "test_sho", "python"),
        Ref("src/api.test.ts", "shouts twice", "js"),
        Ref("other/shout_test.go", "TestShout", "go"),
    ):
        assert [c for c in cases if matches(ref, c)] == [], ref


def test_another_xml_file_is_no_report_and_no_warning(tmp_path: Path) -> None:
    (tmp_path / "coverage.xml").write_text('<?xml version="1.0"?><coverage line-rate="1"/>')
    assert read_report(tmp_path / "coverage.xml", "coverage.xml") == (None, None)


BOMB = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
    '<testsuite><testcase classname="a" name="&lol3;"/></testsuite>'
)


def test_hostile_reports_are_warnings_and_no_report(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the host's secret")
    external = (
        f'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY x SYSTEM "file://{secret}">]>'
        '<testsuite><testcase classname="a" name="&x;"/></testsuite>'
    )
    (tmp_path / "bomb.xml").write_text(BOMB)
    (tmp_path / "external.xml").write_text(external)
    (tmp_path / "broken.xml").write_text("<testsuite><testcase")
    with open(tmp_path / "huge.xml", "wb") as f:
        f.truncate(MAX_REPORT_BYTES + 1)
    (tmp_path / "link.xml").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo.xml")
    names = ["bomb", "external", "broken", "huge", "link", "fifo"]
    started = time.monotonic()
    cases, warnings = read_reports([tmp_path / f"{n}.xml" for n in names], tmp_path)
    assert time.monotonic() - started < 5  # the FIFO with no writer did not block
    assert cases == []
    assert len(warnings) == 6 and all("counted as no report" in w for w in warnings)
    joined = "\n".join(warnings)
    assert "EntitiesForbidden" in joined and "malformed XML" in joined
    assert "symbolic link" in joined and "named pipe" in joined and "over the 16 MiB" in joined
    assert "the host's secret" not in joined


def test_reports_are_found_where_the_runners_write_them_but_not_in_dependencies(
    tmp_path: Path,
) -> None:
    for rel in ("target/surefire-reports/TEST-a.xml", "build/junit.xml", "node_modules/x/r.xml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(SUREFIRE)
    old = tmp_path / "old.xml"
    old.write_text(SUREFIRE)
    os.utime(old, ns=(1, 1))
    found = [p.relative_to(tmp_path).as_posix() for p in find_reports(tmp_path, 10)]
    assert found == ["build/junit.xml", "target/surefire-reports/TEST-a.xml"]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_cases_or_a_reason_never_a_crash(data: bytes) -> None:
    try:
        parse_report(data)
    except ValueError as exc:
        assert str(exc)
