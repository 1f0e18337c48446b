"""The host's check of a reviewer's edit of a task file (SPEC §13): only appended unchecked
tasks stand; every other change is a refusal."""

from __future__ import annotations

import pytest

from ralph_lsp.reviewer.edit_check import check_edit

BEFORE = (
    b"# Tasks\n\n## 1. Command line\n- [x] 1.1 Add cli\n- [x] 1.2 Print\n\n## 2. Docs\n"
    b"- [x] 2.1 Doc\n"
)


def test_nothing_changed_is_an_approval() -> None:
    found = check_edit(BEFORE, BEFORE)
    assert found.added == () and found.refusals == () and not found.changed


def test_tasks_appended_under_a_review_heading_stand() -> None:
    after = BEFORE + (
        b"\n## Review\n\n- [ ] R.1 Scenario Shout twice: no test names it (specs/cli/spec.md:12)\n"
        b"  evidence: hello/cli.py:4 prints once\n- [ ] R.2 Requirement Exit code: tests/x.py:3\n"
    )
    found = check_edit(BEFORE, after)
    assert found.refusals == ()
    assert found.added == (
        "- [ ] R.1 Scenario Shout twice: no test names it (specs/cli/spec.md:12)",
        "- [ ] R.2 Requirement Exit code: tests/x.py:3",
    )


def test_a_task_appended_to_the_story_it_belongs_to_stands() -> None:
    after = BEFORE.replace(b"- [x] 1.2 Print\n", b"- [x] 1.2 Print\n- [ ] 1.3 Print twice\n")
    assert check_edit(BEFORE, after).added == ("- [ ] 1.3 Print twice",)


@pytest.mark.parametrize(
    ("after", "said"),
    [
        (BEFORE.replace(b"- [x] 1.1", b"- [ ] 1.1"), "checked or unchecked line 4"),
        (BEFORE.replace(b"- [x] 1.1 Add cli", b"- [x] 1.1 Add the cli"), "line 4"),
        (BEFORE.replace(b"- [x] 2.1 Doc\n", b""), "removed line 8"),
        (BEFORE.replace(b"## 2. Docs", b"## 2. Documentation"), "rewrote line 7"),
        (BEFORE + b"- [x] R.1 Already done\n", "added a checked task at line 9"),
        (BEFORE + b"Some prose the reviewer wrote\n", "added text that is no unchecked task"),
        (BEFORE + b"## Notes\n", "added text that is no unchecked task"),
    ],
)
def test_any_other_edit_is_refused(after: bytes, said: str) -> None:
    found = check_edit(BEFORE, after)
    assert found.refusals and said in found.refusals[0], found.refusals


def test_checking_an_open_task_is_refused() -> None:
    before = BEFORE + b"- [ ] 2.2 Left open\n"
    found = check_edit(before, before.replace(b"- [ ] 2.2", b"- [x] 2.2"))
    assert found.refusals == (
        "checked or unchecked line 9 ('- [ ] 2.2 Left open' became '- [x] 2.2 Left open')",
    )


def test_bytes_that_are_not_utf8_are_compared_as_they_are() -> None:
    before = BEFORE + b"- [x] 3.1 caf\xe9\n"
    assert check_edit(before, before + b"- [ ] R.1 x\n").added == ("- [ ] R.1 x",)
    assert check_edit(before, before.replace(b"\xe9", b"\xe8")).refusals
