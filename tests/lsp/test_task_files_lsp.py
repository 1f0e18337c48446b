"""A project whose OpenSpec schema tracks todo.md: the server gives todo.md the task lenses and
diagnostics tasks.md gets elsewhere (SPEC §11), from the disk and from the open buffer."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsprotocol import types

from tests.lsp.conftest import StartSession, wait_until
from tests.test_task_files import TODO_SCHEMA

NAME = "todo-change"


def todo_workspace(workspace: Path) -> Path:
    changes = workspace / "openspec" / "changes"
    shutil.move(changes / "add-greeting-cli", changes / NAME)
    change = changes / NAME
    (change / "tasks.md").rename(change / "todo.md")
    schema = workspace / "openspec" / "schemas" / "todo-driven"
    schema.mkdir(parents=True)
    (schema / "schema.yaml").write_text(TODO_SCHEMA)
    (workspace / "openspec" / "config.yaml").write_text("schema: todo-driven\n")
    return change / "todo.md"


async def test_todo_md_gets_lenses_and_diagnostics(
    start_session: StartSession, workspace: Path
) -> None:
    todo = todo_workspace(workspace)
    s = await start_session(workspace)
    uri = todo.as_uri()
    await wait_until(lambda: uri in s.client.diagnostics, what="todo.md's diagnostics")
    lenses = await s.lenses(uri)
    ref = [{"change": NAME, "root": workspace.as_uri()}]
    assert lenses[0] == (0, "▶ Run change · 0/8 tasks", "ralph.run", ref)
    text = todo.read_text().replace("- [ ] 1.1", "- [x] 1.1").replace("- [ ] 1.2", "- [~] 1.2")
    s.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
        )
    )
    await wait_until(
        lambda: [d.code for d in s.client.diagnostics.get(uri, [])] == ["odd-box"],
        what="the open buffer's diagnostics",
    )
    assert (await s.lenses(uri))[0][1] == "▶ Run change · 1/8 tasks"
    changes = await s.command("ralph.changes")
    listed = changes["changes"] if isinstance(changes, dict) else changes.changes
    first = listed[0] if isinstance(listed[0], dict) else listed[0]._asdict()
    assert first["tasksUri"] == uri


async def test_a_disk_edit_of_todo_md_refreshes_its_lenses(
    start_session: StartSession, workspace: Path
) -> None:
    todo = todo_workspace(workspace)
    s = await start_session(workspace)
    uri = todo.as_uri()
    await wait_until(lambda: uri in s.client.diagnostics, what="todo.md's diagnostics")
    before = len(s.refreshes)
    todo.write_text(todo.read_text().replace("- [ ] 1.1", "- [x] 1.1"))
    await wait_until(lambda: len(s.refreshes) > before, timeout=5, what="codeLens refresh")
    assert (await s.lenses(uri))[0][1] == "▶ Run change · 1/8 tasks"
