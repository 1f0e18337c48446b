"""The scenario lenses and diagnostics of a delta spec (SPEC §13), through a real pytest-lsp
client and a real server: the state is what a real run's verification said (pytest's own JUnit
report, kept beside the run's record) combined with the links the test files make now, and it
follows the test files on disk (only the changed file read again) and a run's verification."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from ralph_lsp.loop.engine import Engine
from ralph_lsp.runs.status import FINAL_STATES
from ralph_lsp.settings import Settings
from tests.conformance.conftest import CHANGE, SPEC, write_project
from tests.engine.conftest import fake
from tests.git.conftest import git, init_repo
from tests.lsp.conftest import Session, StartSession, wait_until

UNLINKED = "○ no test names this scenario"


@pytest.fixture
def shout_project(tmp_path: Path) -> Path:
    """The conformance tests' project (a pytest `make test`, three scenarios), committed."""
    root = write_project(init_repo(tmp_path / "shout"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the change, before any work")
    return root


def _spec(root: Path) -> Path:
    return root / "openspec" / "changes" / CHANGE / "specs" / "cli" / "spec.md"


def _line(title: str, text: str = SPEC) -> int:
    return text.splitlines().index(f"#### Scenario: {title}")


def _open(s: Session, path: Path) -> None:
    s.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri=path.as_uri(), language_id="markdown", version=1, text=path.read_text()
            )
        )
    )


def _save(s: Session, path: Path, text: str) -> None:
    """An edit of the open document, saved: the buffer and the disk agree."""
    uri = path.as_uri()
    s.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    path.write_text(text)
    s.client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
    )


async def _lenses_become(s: Session, path: Path, want: dict[int, str]) -> dict[int, str]:
    """Until the lenses of ``path`` are ``want`` (line → title); asks again after refreshes."""
    last: dict[int, str] = {}

    async def ask() -> bool:
        nonlocal last
        last = {line: title for line, title, _, _ in await s.lenses(path.as_uri())}
        return last == want

    deadline = asyncio.get_running_loop().time() + 60
    while not await ask():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the lenses stayed {last}, not {want}")
        await asyncio.sleep(0.1)
    return last


async def _lens_is(s: Session, path: Path, line: int, title: str) -> None:
    async def ask() -> str | None:
        found = {n: t for n, t, _, _ in await s.lenses(path.as_uri())}
        return found.get(line)

    deadline = asyncio.get_running_loop().time() + 60
    while (now := await ask()) != title:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the lens of line {line} stayed {now!r}, not {title!r}")
        await asyncio.sleep(0.1)


async def _real_run(project: Path, mode: str) -> None:
    """A real run of the fake agent (a subprocess in the sandbox), one iteration: its
    verification runs `make test` (pytest, with its JUnit report) and keeps the cases."""
    engine = Engine(lambda _event: None)
    agent = fake("scenario_tests.py", mode)
    await engine.start(
        project, CHANGE, Settings(agent="custom", agent_command=tuple(agent), max_iterations=1)
    )
    await asyncio.wait_for(engine.wait(project, CHANGE), 240)


async def test_a_delta_spec_shows_each_scenarios_state_and_follows_the_test_files(
    start_session: StartSession, shout_project: Path
) -> None:
    await _real_run(shout_project, "mixed")  # one verified, one failing, one untested
    s = await start_session(shout_project)
    spec = _spec(shout_project)
    _open(s, spec)
    await _lenses_become(
        s,
        spec,
        {
            _line("Shout once"): "✓ verified · tests/test_shout.py::test_shout",
            _line("Shout twice"): "✗ failing · tests/test_shout.py::test_shout_twice",
            _line("Empty input"): UNLINKED,
        },
    )

    def unlinked() -> list[types.Diagnostic]:
        return [d for d in s.diagnostics(spec.as_uri()) if d.code == "conformance.unlinked"]

    found = await wait_until(unlinked, timeout=30, what="the unlinked scenario's diagnostic")
    assert [(d.range.start.line, d.severity, d.source) for d in found] == [
        (_line("Empty input"), types.DiagnosticSeverity.Information, "ralph-lsp")
    ]
    assert "Empty input" in found[0].message

    # A requirement without SHALL: OpenSpec's finding and the new scenario's share one list.
    text = SPEC + "\n### Requirement: Whisper\nIt whispers.\n\n#### Scenario: Whisper\n- ok\n"
    _save(s, spec, text)

    def both() -> bool:
        shown = s.diagnostics(spec.as_uri())
        lines = {d.range.start.line for d in shown if d.code == "conformance.unlinked"}
        ours = lines == {_line("Empty input", text), _line("Whisper", text)}
        return ours and any(d.source == "openspec" for d in shown)

    await wait_until(both, timeout=30, what="openspec's and conformance's diagnostics together")

    # A new test file on disk names the untested scenario: only that file is read again.
    (shout_project / "tests" / "test_empty.py").write_text(
        "def test_empty():\n    # Scenario: Empty input\n    pass\n"
    )
    await _lenses_become(
        s,
        spec,
        {
            _line("Shout once", text): "✓ verified · tests/test_shout.py::test_shout",
            _line("Shout twice", text): "✗ failing · tests/test_shout.py::test_shout_twice",
            _line("Empty input", text): "○ not run · tests/test_empty.py::test_empty",
            _line("Whisper", text): UNLINKED,
        },
    )
    await wait_until(
        lambda: "conformance: tests/test_empty.py read again (1 file(s) read)" in s.logs(),
        what="the log line of the one file read",
    )
    lines = {d.range.start.line for d in unlinked()}
    assert lines == {_line("Whisper", text)}  # the diagnostic went with the link

    # An unsaved edit of an open test file links too; closed unsaved, the disk's text counts.
    test_file = shout_project / "tests" / "test_shout.py"
    on_disk = test_file.read_text()
    _open(s, test_file)
    edited = on_disk + '\n\ndef test_whisper():\n    """Scenario: Whisper"""\n'
    s.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=test_file.as_uri(), version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )
    whisper = _line("Whisper", text)
    await _lens_is(s, spec, whisper, "○ not run · tests/test_shout.py::test_whisper")
    assert "conformance: tests/test_shout.py read from its buffer" in s.logs()
    assert test_file.read_text() == on_disk
    s.client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(test_file.as_uri()))
    )
    await _lens_is(s, spec, whisper, UNLINKED)


async def test_the_lens_turns_verified_when_a_runs_verification_ends(
    start_session: StartSession, shout_project: Path
) -> None:
    agent = fake("scenario_tests.py", "lazy")  # tests Shout once and Empty input, which pass
    s = await start_session(
        shout_project, settings={"agent": "custom", "agentCommand": agent, "maxIterations": 1}
    )
    spec = _spec(shout_project)
    _open(s, spec)
    lines = [_line("Shout once"), _line("Shout twice"), _line("Empty input")]
    await _lenses_become(s, spec, dict.fromkeys(lines, UNLINKED))
    await s.command("ralph.run", {"change": CHANGE})
    await _lenses_become(
        s,
        spec,
        {
            lines[0]: "✓ verified · tests/test_shout.py::test_shout",
            lines[1]: UNLINKED,
            lines[2]: "✓ verified · tests/test_shout.py::test_empty",
        },
    )
    ended = lambda: any(st["state"] in FINAL_STATES for st in s.statuses)  # noqa: E731
    await wait_until(ended, timeout=120, what="the run's end")


async def test_without_inotify_watchfiles_follows_the_test_files(
    start_session: StartSession, shout_project: Path
) -> None:
    # RALPH_WATCH=poll: the fallback the watch takes where inotify cannot be had, or its first
    # watches are refused (the per-user limit), as the openspec/ watch does.
    s = await start_session(shout_project, env={"RALPH_WATCH": "poll"})
    spec = _spec(shout_project)
    _open(s, spec)
    await _lens_is(s, spec, _line("Shout once"), UNLINKED)
    await asyncio.sleep(0.5)  # watchfiles gives no sign of when its watch is in place
    (shout_project / "tests" / "test_once.py").write_text(
        'def test_once():\n    """Scenario: Shout once"""\n'
    )
    await _lens_is(s, spec, _line("Shout once"), "○ not run · tests/test_once.py::test_once")
    assert "conformance: tests/test_once.py read again (1 file(s) read)" in s.logs()


async def test_unsaved_edits_leave_the_lenses_at_the_saved_text_and_a_save_moves_them(
    start_session: StartSession, shout_project: Path
) -> None:
    """The lenses follow a delta spec's saved text: an unsaved edit only validates the buffer
    (its openspec findings follow it), and the table is computed again once it is saved."""
    s = await start_session(shout_project)
    spec = _spec(shout_project)
    _open(s, spec)
    titles = ("Shout once", "Shout twice", "Empty input")  # no test names them yet
    saved = await _lenses_become(s, spec, {_line(t): UNLINKED for t in titles})
    moved = "# cli\n\n" + SPEC + "\n### Requirement: Whisper\nIt whispers.\n"
    s.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=spec.as_uri(), version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=moved)],
        )
    )
    await wait_until(
        lambda: any(d.source == "openspec" for d in s.diagnostics(spec.as_uri())),
        timeout=30,
        what="the unsaved buffer's openspec finding",
    )
    await asyncio.sleep(0.5)  # a table computed again would have asked for a refresh by now
    assert {n: t for n, t, _, _ in await s.lenses(spec.as_uri())} == saved
    _save(s, spec, moved)
    await _lenses_become(s, spec, {line + 2: title for line, title in saved.items()})
