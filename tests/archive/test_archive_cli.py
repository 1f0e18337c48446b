"""`ralph-lsp archive` as a user runs it: refusals, all-or-nothing writes, the moved folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.archiving import writer
from ralph_lsp.archiving.writer import ArchiveBlocked, archive_change, today
from ralph_lsp.openspec.archive_plan import plan_archive

MAIN = """# auth Specification

## Purpose
Sign people in, keep them signed in, and sign them out again when they ask.

## Requirements
### Requirement: Login
The system SHALL sign a user in.

#### Scenario: ok
- WHEN the password is right
- THEN the user is in
"""

DELTA = """## MODIFIED Requirements
### Requirement: Login
The system SHALL sign a user in with a password.

#### Scenario: ok
- WHEN the password is right
- THEN the user is in

## ADDED Requirements
### Requirement: Logout
The system SHALL sign a user out.

#### Scenario: bye
- WHEN the user asks
- THEN the session ends
"""

NEW_SPEC = """## ADDED Requirements
### Requirement: Audit
The system MUST log each sign-in.

#### Scenario: logged
- WHEN a user signs in
- THEN a line is written
"""


def project(root: Path, tasks: str = "- [x] 1.1 done\n") -> Path:
    (root / "openspec" / "specs" / "auth").mkdir(parents=True)
    (root / "openspec" / "specs" / "auth" / "spec.md").write_text(MAIN)
    change = root / "openspec" / "changes" / "add-logout"
    for spec, text in (("auth", DELTA), ("audit", NEW_SPEC)):
        (change / "specs" / spec).mkdir(parents=True)
        (change / "specs" / spec / "spec.md").write_text(text)
    (change / "tasks.md").write_text(tasks)
    (change / "proposal.md").write_text("## Why\nx\n")
    return change


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralph_lsp", "archive", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_archive_writes_specs_and_moves_the_change(tmp_path: Path) -> None:
    project(tmp_path)
    done = run(tmp_path, "add-logout", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)["archive"]
    assert result["archivedAs"] == f"{today()}-add-logout"
    assert result["totals"] == {"added": 2, "modified": 1, "removed": 0, "renamed": 0}
    auth = (tmp_path / "openspec/specs/auth/spec.md").read_text()
    assert "with a password" in auth and "### Requirement: Logout" in auth
    audit = (tmp_path / "openspec/specs/audit/spec.md").read_text()
    assert audit.startswith("# audit Specification\n\n## Purpose\nTBD - created by archiving")
    assert (tmp_path / "openspec/changes/archive" / result["archivedAs"] / "tasks.md").is_file()
    assert not (tmp_path / "openspec/changes/add-logout").exists()


def test_without_yes_and_no_terminal_incomplete_tasks_are_refused(tmp_path: Path) -> None:
    project(tmp_path, tasks="- [x] 1.1 done\n- [ ] 1.2 not yet\n")
    before = tree(tmp_path)
    done = run(tmp_path, "add-logout", "--json")
    assert done.returncode == 1
    status = json.loads(done.stdout)["status"][0]
    assert status["code"] == "archive_tasks_incomplete"
    assert status["message"] == "1 incomplete task(s) found for change 'add-logout'."
    assert tree(tmp_path) == before
    human = run(tmp_path, "add-logout")
    assert human.returncode == 1
    assert human.stderr.splitlines() == [
        "ralph-lsp: 1 incomplete task(s) found for change 'add-logout', and no answer could be"
        " read from stdin.",
        "Fix: Complete the tasks or rerun with ralph-lsp archive add-logout --yes",
    ]
    assert tree(tmp_path) == before


def test_without_yes_spec_updates_need_confirmation(tmp_path: Path) -> None:
    project(tmp_path)
    done = run(tmp_path, "add-logout", "--json")
    assert json.loads(done.stdout)["status"][0]["code"] == "archive_confirmation_required"
    assert done.returncode == 1


def test_existing_target_and_unknown_change_are_refused(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "openspec/changes/archive" / f"{today()}-add-logout").mkdir(parents=True)
    before = tree(tmp_path)
    done = run(tmp_path, "add-logout", "--yes", "--json")
    assert json.loads(done.stdout)["status"][0]["code"] == "archive_target_exists"
    assert tree(tmp_path) == before
    missing = run(tmp_path, "nope", "--yes", "--json")
    assert json.loads(missing.stdout)["status"][0] == {
        "severity": "error",
        "code": "archive_change_not_found",
        "message": "Change 'nope' not found. Available changes: add-logout",
    }


def test_a_dated_name_is_kept(tmp_path: Path) -> None:
    change = project(tmp_path)
    change.rename(change.with_name("2025-01-02-add-logout"))
    plan = plan_archive(tmp_path, "2025-01-02-add-logout", "2030-01-01", yes=True)
    assert plan.archive_name == "2025-01-02-add-logout"


def test_a_failed_move_puts_every_spec_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path)
    before = tree(tmp_path)

    def refuse(src: object, dst: object, **dir_fds: int) -> None:
        raise OSError("disk says no")

    monkeypatch.setattr(writer.os, "rename", refuse)
    with pytest.raises(OSError, match="disk says no"):
        archive_change(tmp_path, "add-logout", yes=True)
    assert tree(tmp_path) == before
    assert not (tmp_path / "openspec/specs/audit").exists()
    assert not (tmp_path / "openspec/changes/archive").exists()


def test_a_failed_second_write_puts_the_first_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path)
    before = tree(tmp_path)
    real_replace = writer.os.replace
    calls: list[str] = []

    def second_fails(src: str, dst: str, **dir_fds: int) -> None:
        calls.append(str(dst))
        if len(calls) == 2:
            raise OSError("no space left")
        real_replace(src, dst, **dir_fds)

    monkeypatch.setattr(writer.os, "replace", second_fails)
    with pytest.raises(OSError, match="no space left"):
        archive_change(tmp_path, "add-logout", yes=True)
    assert tree(tmp_path) == before


def test_skip_specs_moves_only_the_folder(tmp_path: Path) -> None:
    project(tmp_path)
    done = run(tmp_path, "add-logout", "--yes", "--skip-specs", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["archive"]["specsUpdated"] is False
    assert (tmp_path / "openspec/specs/auth/spec.md").read_text() == MAIN
    assert not (tmp_path / "openspec/specs/audit").exists()


def test_blocked_diagnostic_carries_the_fix() -> None:
    blocked = ArchiveBlocked("archive_target_exists", "x", "do y")
    assert blocked.diagnostic() == {
        "severity": "error",
        "code": "archive_target_exists",
        "message": "x",
        "fix": "do y",
    }


def test_on_a_terminal_the_questions_are_asked(tmp_path: Path) -> None:
    import os
    import pty

    project(tmp_path, tasks="- [ ] 1.1 not yet\n")
    leader, follower = pty.openpty()
    try:
        os.write(leader, b"y\ny\n")
        done = subprocess.run(
            [sys.executable, "-m", "ralph_lsp", "archive", "add-logout", "--root", str(tmp_path)],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 incomplete task(s) found for change 'add-logout'. Continue? (y/N)" in done.stdout
    assert "Proceed with spec updates? (y/N)" in done.stdout
    assert f"archived as '{today()}-add-logout'" in done.stdout
    assert (tmp_path / "openspec/specs/audit/spec.md").is_file()


def test_on_a_terminal_no_means_nothing_changes(tmp_path: Path) -> None:
    import os
    import pty

    project(tmp_path, tasks="- [ ] 1.1 not yet\n")
    before = tree(tmp_path)
    leader, follower = pty.openpty()
    try:
        os.write(leader, b"n\n")
        done = subprocess.run(
            [sys.executable, "-m", "ralph_lsp", "archive", "add-logout", "--root", str(tmp_path)],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 1
    assert "Archive cancelled." in done.stderr
    assert tree(tmp_path) == before
