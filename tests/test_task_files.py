"""Task files follow the change's OpenSpec schema (`apply.tracks`), as the CLI 1.13.2 counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralph_lsp.openspec.task_files import forget, task_files, user_schemas_dir
from ralph_lsp.openspec.workspace import Change, root_of_file

TODO_SCHEMA = """name: todo-driven
version: 1
description: tracks todo.md
artifacts:
  - id: proposal
    generates: proposal.md
    description: why
    template: proposal.md
    instruction: |
      Write it.
      generates: not-this.md
  - id: todo
    generates: todo.md
    description: the work
    template: todo.md
    requires: [proposal]
apply:
  requires: [todo]
  tracks: todo.md
"""


def make_project(root: Path, *, schema_in: str = "project", where: str = "config") -> Path:
    change = root / "openspec" / "changes" / "c"
    change.mkdir(parents=True)
    (change / "tasks.md").write_text("- [ ] 1.1 not tracked\n")
    (change / "todo.md").write_text("## 1. Work\n- [x] 1.1 one\n- [ ] 1.2 two\n- [ ] 1.3 three\n")
    if where == "config":
        (root / "openspec" / "config.yaml").write_text("schema: todo-driven\n")
    else:
        (change / ".openspec.yaml").write_text("schema: todo-driven\ncreated: 2026-01-01\n")
    if schema_in == "project":
        folder = root / "openspec" / "schemas" / "todo-driven"
        folder.mkdir(parents=True)
        (folder / "schema.yaml").write_text(TODO_SCHEMA)
    return change


def test_project_schema_named_by_config_tracks_todo(tmp_path: Path) -> None:
    change = make_project(tmp_path)
    assert task_files(tmp_path, change) == [change / "todo.md"]
    doc = Change(tmp_path, "c").read_doc()
    assert (doc.completed, doc.total) == (1, 3)
    assert root_of_file(change / "todo.md") == tmp_path
    assert root_of_file(change / "notes.md") is None


def test_change_metadata_wins_and_user_data_folder_is_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    assert user_schemas_dir() == data / "openspec" / "schemas"
    root = tmp_path / "p"
    change = make_project(root, schema_in="user", where="metadata")
    (root / "openspec" / "config.yaml").write_text("schema: spec-driven\n")
    assert task_files(root, change) == [change / "tasks.md"]  # not found yet: the default
    folder = data / "openspec" / "schemas" / "todo-driven"
    folder.mkdir(parents=True)
    (folder / "schema.yaml").write_text(TODO_SCHEMA)
    forget()  # (a root's schemas are looked at again after half a second)
    assert task_files(root, change) == [change / "todo.md"]


def test_user_data_folder_per_platform(tmp_path: Path) -> None:
    assert user_schemas_dir({"LOCALAPPDATA": "X"}, "win32") == Path("X", "openspec", "schemas")
    home = Path.home()
    assert user_schemas_dir({}, "darwin") == home / ".local" / "share" / "openspec" / "schemas"


def test_glob_tracks_several_files_and_missing_falls_back(tmp_path: Path) -> None:
    change = make_project(tmp_path)
    schema = tmp_path / "openspec" / "schemas" / "todo-driven" / "schema.yaml"
    schema.write_text(TODO_SCHEMA.replace("todo.md", "work/*.md"))
    forget()
    assert task_files(tmp_path, change) == [change / "tasks.md"]  # no match: tasks.md
    (change / "work").mkdir()
    (change / "work" / "b.md").write_text("- [ ] b\n")
    (change / "work" / "a.md").write_text("- [x] a\n")
    assert task_files(tmp_path, change) == [change / "work" / "a.md", change / "work" / "b.md"]


def test_broken_schema_falls_back_to_tasks_md(tmp_path: Path) -> None:
    change = make_project(tmp_path)
    (tmp_path / "openspec" / "schemas" / "todo-driven" / "schema.yaml").write_text("a: [\n")
    forget()
    assert task_files(tmp_path, change) == [change / "tasks.md"]


def test_changes_listing_counts_the_tracked_file(tmp_path: Path) -> None:
    make_project(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "ralph_lsp", "changes", "--json", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    change = json.loads(out)["changes"][0]
    assert (change["completed"], change["total"]) == (1, 3)
    assert change["tasksUri"].endswith("/openspec/changes/c/todo.md")


def test_a_demo_run_follows_todo_md_to_success(tmp_path: Path) -> None:
    from tests.conftest import DEMO_RUN, copy_example

    root = tmp_path / "hello"
    copy_example(root)
    change = root / "openspec" / "changes" / "add-greeting-cli"
    (change / "tasks.md").rename(change / "todo.md")
    schema = root / "openspec" / "schemas" / "todo-driven"
    schema.mkdir(parents=True)
    (schema / "schema.yaml").write_text(TODO_SCHEMA)
    (root / "openspec" / "config.yaml").write_text("schema: todo-driven\n")
    prompt = subprocess.run(
        [sys.executable, "-m", "ralph_lsp", "prompt", "add-greeting-cli", "--root", str(root)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(change / "todo.md") in prompt
    assert "mark it done in todo.md" in prompt and "tasks.md" not in prompt
    out = subprocess.run(
        DEMO_RUN,
        cwd=root,
        env={**os.environ, "RALPH_DEMO_DELAY": "0"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stdout.rstrip().splitlines()[-1].startswith("succeeded: every task is checked (8/8)")
    assert "- [ ]" not in (change / "todo.md").read_text()
    assert not (change / "tasks.md").exists()
