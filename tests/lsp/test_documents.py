"""Code lenses and diagnostics of tasks.md, from the open buffer or the disk, kept live."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from lsprotocol import types

from tests.lsp.conftest import CHANGE, Session, StartSession, wait_until

SAMPLE = """\
# Tasks

## 1. Setup
- [x] 1.1 Create the package
- [ ] 1.2 Add the parser
  - [ ] nested detail

## 2. Feature
- [x] 2.1 First
- [X] 2.2 Second
"""


async def wait_until_lens(s: Session, title: str, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while (await s.lenses())[0][1] != title:
        assert time.monotonic() < deadline, f"the first lens never became {title!r}"
        await asyncio.sleep(0.02)


def ref(root: Path) -> list[dict[str, str]]:
    return [{"change": CHANGE, "root": root.as_uri()}]


async def test_lens_titles_and_commands(start_session: StartSession, workspace: Path) -> None:
    s = await start_session(workspace)
    s.tasks_md.write_text(SAMPLE)
    story_1 = [{**ref(workspace)[0], "story": "1"}]
    assert await s.lenses() == [
        (0, "▶ Run change · 3/5 tasks", "ralph.run", ref(workspace)),
        (0, "✎ Run with guidance", "ralph.runChangeWithGuidance", ref(workspace)),
        (2, "1/3 done", "ralph.noop", None),
        (2, "▶ Run story", "ralph.run", story_1),
        (3, "✓ done", "ralph.noop", None),
        (4, "○ pending", "ralph.noop", None),
        (5, "○ pending", "ralph.noop", None),
        (7, "✓ done", "ralph.noop", None),
        (8, "✓ done", "ralph.noop", None),
        (9, "✓ done", "ralph.noop", None),
    ]


BLOCKED = """\
## 1. Build
- [ ] 1.1 Write the worker
## 2. Deploy
- [ ] 2.1 Deploy the worker to staging
  - Blocked: needs the staging API token (a person must create it)
- [x] 2.2 Write the runbook
"""


async def test_a_blocked_task_has_its_lens_and_a_warning(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    s.tasks_md.write_text(BLOCKED)
    lenses = await s.lenses()
    assert (3, "⊘ blocked", "ralph.noop", None) in lenses
    assert (1, "○ pending", "ralph.noop", None) in lenses
    # Run story only where there is a task to work on: story 2's one open task is blocked.
    run_story = [(line, args) for line, title, _, args in lenses if title == "▶ Run story"]
    assert run_story == [(0, [{**ref(workspace)[0], "story": "1"}])]
    blocked = await wait_until(
        lambda: [d for d in s.diagnostics() if d.code == "blocked"], what="the blocked warning"
    )
    assert len(blocked) == 1
    assert blocked[0].range.start.line == 3
    assert blocked[0].severity == types.DiagnosticSeverity.Warning
    assert "needs the staging API token (a person must create it)" in blocked[0].message
    # Unblocking is deleting the line.
    s.tasks_md.write_text(BLOCKED.replace("  - Blocked: needs the staging API token", "  note"))
    deadline = time.monotonic() + 5
    while any(title == "⊘ blocked" for _, title, _, _ in await s.lenses()):
        assert time.monotonic() < deadline, "the blocked lens stayed after the line was deleted"
        await asyncio.sleep(0.02)
    assert (3, "○ pending", "ralph.noop", None) in await s.lenses()


async def test_no_lenses_outside_a_change(start_session: StartSession, workspace: Path) -> None:
    s = await start_session(workspace)
    other = workspace / "tasks.md"
    other.write_text(SAMPLE)
    assert await s.lenses(other.as_uri()) == []


def summary(diagnostics: list[types.Diagnostic]) -> list[tuple[int, int, int, str | None, str]]:
    return [
        (
            d.range.start.line,
            d.range.start.character,
            d.range.end.character,
            str(d.code) if d.code is not None else None,
            d.message,
        )
        for d in diagnostics
    ]


async def test_diagnostics_for_suspicious_task_lines(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    s.tasks_md.write_text(
        "## 1. One\n"
        "- [] 1.1 empty box\n"
        "- [~] 1.2 tilde box\n"
        "- [ ] 1.2 duplicate id\n"
        "- [ ] 2.1 wrong story\n"
        "-[ ] 1.3 no space\n"
    )
    every = await wait_until(lambda: s.diagnostics(), what="diagnostics of the edited file")
    # OpenSpec's own task-file warnings (SPEC §11) may stand beside ours, under their source.
    assert all(d.source in ("ralph", "openspec") for d in every)
    diags = [d for d in every if d.source == "ralph"]
    assert all(d.severity == types.DiagnosticSeverity.Warning for d in diags)
    codes = [(line, code) for line, _, _, code, _ in summary(diags)]
    assert codes == [
        (1, "empty-box"),
        (2, "odd-box"),
        (3, "duplicate-id"),
        (4, "story-mismatch"),
        (5, "no-space"),
    ]
    _, start, end, _, message = summary(diags)[2]
    assert (start, end) == (6, 9)  # the id itself
    assert "also on line 3" in message


async def test_columns_are_utf16(start_session: StartSession, workspace: Path) -> None:
    s = await start_session(workspace)
    s.tasks_md.write_text("## 1. 😀 One\n- [ ] 1.1 😀 a\n- [ ] 1.1 😀 dup\n")
    diags = await wait_until(lambda: s.diagnostics(), what="diagnostics")
    assert summary(diags)[0][:3] == (2, 6, 9)


async def test_disk_edit_refreshes_lenses_and_diagnostics(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    before = len(s.refreshes)
    start = time.monotonic()
    text = s.tasks_md.read_text()
    s.tasks_md.write_text(text.replace("- [ ] 1.1", "- [x] 1.1").replace("- [ ] 1.2", "- [~] 1.2"))
    await wait_until(lambda: len(s.refreshes) > before, timeout=5, what="codeLens refresh")
    await wait_until(lambda: s.diagnostics(), timeout=5, what="diagnostics after a disk edit")
    assert time.monotonic() - start < 2
    assert [d.code for d in s.diagnostics()] == ["odd-box"]
    assert (await s.lenses())[0][1] == "▶ Run change · 1/8 tasks"


async def test_atomic_rename_saves_are_seen_every_time(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    folder = s.tasks_md.parent
    lines = s.tasks_md.read_text().split("\n")
    task_lines = [i for i, line in enumerate(lines) if line.startswith("- [ ]")]
    for n, i in enumerate(task_lines, start=1):
        lines[i] = lines[i].replace("- [ ]", "- [x]", 1)
        tmp = folder / f".tasks.md.tmp{n}"
        tmp.write_text("\n".join(lines))
        before = len(s.refreshes)
        os.replace(tmp, s.tasks_md)
        await wait_until(lambda b=before: len(s.refreshes) > b, timeout=5, what=f"save {n}")
        await wait_until_lens(s, f"▶ Run change · {n}/8 tasks")


async def test_the_open_buffer_wins_over_the_disk(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    disk = s.tasks_md.read_text()
    s.open(disk.replace("- [ ] 1.1", "- [x] 1.1"), version=1)
    assert (await s.lenses())[0][1] == "▶ Run change · 1/8 tasks"

    # An unsaved edit with a problem: diagnostics follow the buffer.
    s.edit(disk.replace("- [ ] 1.1", "- [x] 1.1").replace("- [ ] 2.1", "- [] 2.1"), version=2)
    await wait_until(
        lambda: [d.code for d in s.diagnostics()] == ["empty-box"], what="buffer diagnostics"
    )
    assert (await s.lenses())[0][1] == "▶ Run change · 1/8 tasks"

    # The disk changes underneath: the buffer still wins while it is open.
    s.tasks_md.write_text(disk.replace("- [ ]", "- [x]"))
    await wait_until(lambda: s.refreshes, what="a refresh")
    assert (await s.lenses())[0][1] == "▶ Run change · 1/8 tasks"
    changes = await s.command("ralph.changes", {})
    assert changes["changes"][0]["completed"] == 1

    # Closed: the disk again.
    s.close()
    await wait_until(lambda: s.diagnostics() == [], what="disk diagnostics after close")
    assert (await s.lenses())[0][1] == "▶ Run change · 8/8 tasks"


async def test_odd_bytes_never_break_lenses(start_session: StartSession, workspace: Path) -> None:
    s = await start_session(workspace)
    s.tasks_md.write_bytes(
        b"\xef\xbb\xbf# Tasks\r\n## 1. One\r\n- [x] 1.1 caf\xe9\r\n"
        b"- [ ] 1.2 nul \x00 byte\r\n\xff\xfe\r\n"
    )
    lenses = await s.lenses()
    assert lenses[0][1] == "▶ Run change · 1/2 tasks"
    assert [title for _, title, _, _ in lenses[1:]] == [
        "✎ Run with guidance",
        "1/2 done",
        "▶ Run story",
        "✓ done",
        "○ pending",
    ]


async def test_a_missing_tasks_md_has_no_tasks(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    s.tasks_md.unlink()
    assert await s.lenses() == [(0, "▶ Run change · 0/0 tasks", "ralph.run", ref(workspace))]
    assert (await s.command("ralph.changes", {}))["changes"][0]["total"] == 0


async def test_an_unmodified_open_buffer_follows_the_disk(
    start_session: StartSession, workspace: Path
) -> None:
    # Neovim and Helix do not reload a changed file by themselves: an open buffer that holds no
    # edits of its own must follow the agent's edits on disk, with no didChange.
    s = await start_session(workspace)
    disk = s.tasks_md.read_text()
    s.open(disk, version=1)
    assert (await s.lenses())[0][1] == "▶ Run change · 0/8 tasks"
    before = len(s.refreshes)
    s.tasks_md.write_text(disk.replace("- [ ] 1.1", "- [x] 1.1").replace("- [ ] 1.2", "- [x] 1.2"))
    await wait_until(lambda: len(s.refreshes) > before, what="a refresh")
    await wait_until_lens(s, "▶ Run change · 2/8 tasks")
    changes = await s.command("ralph.changes", {})
    assert changes["changes"][0]["completed"] == 2

    # An edit of its own: the buffer wins again, whatever the disk says.
    s.edit(disk.replace("- [ ] 3.1", "- [x] 3.1"), version=2)
    await wait_until_lens(s, "▶ Run change · 1/8 tasks")
    s.tasks_md.write_text(disk.replace("- [ ]", "- [x]"))
    await wait_until(lambda: len(s.refreshes) > before + 1, what="another refresh")
    assert (await s.lenses())[0][1] == "▶ Run change · 1/8 tasks"

    # Saved: what it saved is on disk, and it follows the disk from there on.
    saved = disk.replace("- [ ] 3.1", "- [x] 3.1")
    s.tasks_md.write_text(saved)
    s.client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(s.tasks_uri))
    )
    await s.lenses()  # a request after it: the server has read the saved file by now
    s.tasks_md.write_text(saved.replace("- [ ] 3.2", "- [x] 3.2"))
    await wait_until_lens(s, "▶ Run change · 2/8 tasks")


async def test_a_huge_buffer_is_not_analysed_and_says_so(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    disk = s.tasks_md.read_text()
    s.open(disk, version=1)
    huge = disk + ("- [ ] filler task\n" * 1_000_000)  # 18 MB
    s.edit(huge, version=2)
    await wait_until(
        lambda: [d.code for d in s.diagnostics()] == ["too-large"], what="the too-large warning"
    )
    assert (await s.lenses())[0][1] == "▶ Run change · 0/0 tasks"
    s.edit(disk, version=3)
    await wait_until(lambda: s.diagnostics() == [], what="the warning to go")
