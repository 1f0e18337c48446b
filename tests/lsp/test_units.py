"""The server layer's pure parts, without a connection: arguments, rendering, batching, config."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from lsprotocol import types
from lsprotocol.types import MessageType

from ralph_lsp.loop.engine import RunStatus
from ralph_lsp.server import render
from ralph_lsp.server.args import one_object, path_of_uri, positive_int
from ralph_lsp.server.config import Config
from ralph_lsp.server.documents import DocumentStore
from ralph_lsp.server.errors import InvalidArguments
from ralph_lsp.server.logs import MAX_LINE, LogBatcher
from ralph_lsp.server.run_progress import end_message, report_message

ROOT = Path("/w")
TEXT = "## 1. A\n- [x] 1.1 a\n- [ ] 1.2 b\n## 2. B\n- [ ] 2.1 c\n"


def status(state: str = "running", **kw: object) -> RunStatus:
    values: dict[str, object] = {
        "run_id": "r-1",
        "change": "c",
        "root": ROOT,
        "state": state,
        "iteration": 2,
        "max_iterations": 20,
        "completed": 1,
        "total": 3,
        "reason": None,
        "started_at": "t0",
        "updated_at": "t1",
        "cost_usd": None,
        "story": "1",
    }
    values.update(kw)
    return RunStatus(**values)  # type: ignore[arg-type]


def doc(tmp_path: Path, text: str = TEXT) -> DocumentStore:
    path = tmp_path / "tasks.md"
    path.write_text(text)
    return DocumentStore(lambda uri: None)


# -- arguments -----------------------------------------------------------------------------


def test_one_object() -> None:
    assert one_object("ralph.status", []) == {}
    assert one_object("ralph.status", [None]) == {}
    assert one_object("ralph.status", [{"change": "a"}]) == {"change": "a"}
    with pytest.raises(InvalidArguments, match="got 2 arguments"):
        one_object("ralph.status", [{}, {}])
    with pytest.raises(InvalidArguments, match="got a boolean"):
        one_object("ralph.status", [True])
    with pytest.raises(InvalidArguments, match="unknown field 'x'"):
        one_object("ralph.status", [{"x": 1}])


def test_positive_int_refuses_bools_and_fractions() -> None:
    for bad in (True, 0, -1, 1.5, "2"):
        with pytest.raises(InvalidArguments):
            positive_int("ralph.run", {"maxIterations": bad}, "maxIterations")
    assert positive_int("ralph.run", {"maxIterations": 3.0}, "maxIterations") == 3
    assert positive_int("ralph.run", {}, "maxIterations") is None


def test_path_of_uri() -> None:
    assert path_of_uri("c", "file:///a%20b/c") == Path("/a b/c")
    assert path_of_uri("c", "/plain/path") == Path("/plain/path")
    for bad in ("relative/path", "https://x/y", "file://server/share"):
        with pytest.raises(InvalidArguments):
            path_of_uri("c", bad)


# -- rendering -----------------------------------------------------------------------------


def titles(lenses: list[types.CodeLens]) -> list[tuple[int, str]]:
    return [(lens.range.start.line, lens.command.title) for lens in lenses if lens.command]


def test_lenses_idle_and_running(tmp_path: Path) -> None:
    state = doc(tmp_path).get(tmp_path / "tasks.md")
    idle = render.code_lenses(state, ROOT, "c", None)
    assert titles(idle) == [
        (0, "▶ Run change · 1/3 tasks"),
        (0, "✎ Run with guidance"),
        (0, "1/2 done"),
        (0, "▶ Run story"),
        (3, "0/1 done"),
        (3, "▶ Run story"),
        (1, "✓ done"),
        (2, "○ pending"),
        (4, "○ pending"),
    ]
    running = render.code_lenses(state, ROOT, "c", status())
    assert titles(running)[:2] == [(0, "■ Stop · iteration 2 · 1/3 tasks"), (0, "✎ Guide")]
    assert not any(title.endswith("Run story") for _, title in titles(running))
    verifying = render.code_lenses(state, ROOT, "c", replace(status(), phase="verifying"))
    assert titles(verifying)[0] == (0, "■ Stop · verifying · 1/3 tasks")
    assert running[1].command is not None
    assert running[1].command.command == "ralph.sendGuidance"
    assert running[1].command.arguments == [{"change": "c", "root": "file:///w"}]
    assert (2, "● in progress") in titles(running)
    assert (4, "○ pending") in titles(running)
    # A finished run shows "Run" again.
    assert titles(render.code_lenses(state, ROOT, "c", status("stuck")))[0][1].startswith("▶")


def test_story_done_and_empty_story(tmp_path: Path) -> None:
    state = doc(tmp_path, "## 1. A\n- [x] 1.1 a\n## Notes\n").get(tmp_path / "tasks.md")
    assert titles(render.code_lenses(state, ROOT, "c", None))[2:4] == [
        (0, "✓ done"),
        (2, "0/0 done"),
    ]


def test_diagnostics_for_a_run(tmp_path: Path) -> None:
    state = doc(tmp_path).get(tmp_path / "tasks.md")
    assert render.diagnostics(state, None, None) == []
    [info] = render.diagnostics(state, status(), None)
    assert info.severity == types.DiagnosticSeverity.Information
    assert info.range.start.line == 0 and info.source == "ralph"
    ended = render.diagnostics(state, status("exhausted", reason="20 iterations ran"), None)
    assert [(d.range.start.line, d.code) for d in ended] == [
        (2, "run-exhausted"),
        (4, "run-exhausted"),
    ]
    assert all("ended exhausted: 20 iterations ran" in d.message for d in ended)
    assert render.diagnostics(state, status("stopped"), None) == []
    assert render.diagnostics(state, status("succeeded"), None) == []


def test_a_refusal_is_a_warning_on_the_story_being_worked_on(tmp_path: Path) -> None:
    state = doc(tmp_path).get(tmp_path / "tasks.md")
    refused = replace(status(), refusals=("Bash(make build)",))
    [warning] = [d for d in render.diagnostics(state, refused, None) if d.code == "refused"]
    assert warning.severity == types.DiagnosticSeverity.Warning
    assert warning.range.start.line == 0  # story "1" of the sample sits on line 0
    assert warning.message == (
        "the agent was refused: Bash(make build) — allow what it needs with ralph.allowedTools"
    )
    assert not [d for d in render.diagnostics(state, status(), None) if d.code == "refused"]


def test_columns() -> None:
    text = "a😀b"
    assert render.column(text, 3, None) == 4  # UTF-16: the emoji is two units
    assert render.column(text, 3, types.PositionEncodingKind.Utf8) == 6
    assert render.column(text, 3, types.PositionEncodingKind.Utf32) == 3
    assert render.column(text, 99, None) == 4


def test_progress_messages() -> None:
    assert report_message(status(iteration=0)) == "starting"
    assert report_message(status()) == "iteration 2 · 1/3"
    assert report_message(replace(status(), phase="verifying")) == "verifying · 1/3"
    waiting = replace(status(), phase="waiting", waiting={"kind": "rateLimit"})
    assert report_message(waiting) == "iteration 2 · rate limited · 1/3"
    assert end_message(status("stuck", reason="no task checked in 3 iterations")) == (
        "stuck: no task checked in 3 iterations"
    )
    assert end_message(status("stopped")) == "stopped"


# -- documents -----------------------------------------------------------------------------


def test_buffer_wins_and_disk_cache_follows_edits(tmp_path: Path) -> None:
    path = tmp_path / "tasks.md"
    path.write_text("- [ ] a\n")
    buffers: dict[str, tuple[int | None, str]] = {}
    store = DocumentStore(buffers.get)
    assert store.get(path).doc.completed == 0
    path.write_text("- [x] a\n")  # same size, maybe the same mtime tick
    store.invalidate(path)  # what the watcher does
    assert store.get(path).doc.completed == 1
    buffers["file:///x"] = (1, "- [ ] a\n- [ ] b\n")
    store.opened(path, "file:///x")
    assert store.get(path).doc.total == 2 and store.get(path).from_buffer
    assert store.uri_for(path) == "file:///x"
    store.closed(path)
    assert store.get(path).doc.total == 1
    path.unlink()
    assert store.get(path).doc.total == 0


# -- configuration -------------------------------------------------------------------------


def test_trust_and_once_only_warnings() -> None:
    warnings: list[str] = []
    config = Config(warnings.append)
    assert config.trusted
    config.from_initialization_options({"trusted": False, "agentCommand": 5, "stuckAfter": "x"})
    assert not config.trusted
    config.settings()
    config.settings()
    assert len(warnings) == 1 and "stuckAfter" in warnings[0]  # agentCommand not even read
    assert config.from_did_change({"ralph": {"trusted": True, "agentCommand": ["a"]}})
    assert config.trusted
    assert config.settings().agent_command == ("a",)
    assert not config.from_did_change(None)
    assert config.from_did_change({"trusted": False})
    assert not config.trusted
    raw = config.from_pull({"trusted": True, "maxIterations": 2})
    assert config.trusted and raw == {"maxIterations": 2}
    assert config.settings(raw).max_iterations == 2


# -- log batching --------------------------------------------------------------------------


async def test_lines_are_batched_by_level_and_capped() -> None:
    sent: list[tuple[MessageType, str]] = []
    batcher = LogBatcher(lambda level, text: sent.append((level, text)), max_message=100)
    for i in range(10):
        batcher.add(f"line {i}")
    batcher.add("oops", MessageType.Warning)
    batcher.add("x" * (MAX_LINE + 10))
    await asyncio.sleep(0.1)
    assert sent[0] == (MessageType.Info, "\n".join(f"line {i}" for i in range(10)))
    assert sent[1] == (MessageType.Warning, "oops")
    assert sent[2][1].endswith("[10 more characters]")
    assert all(len(text) <= MAX_LINE + 40 for _, text in sent)


async def test_a_flood_is_sent_a_few_messages_per_tick_and_sheds_its_oldest_lines() -> None:
    sent: list[tuple[MessageType, str]] = []
    batcher = LogBatcher(
        lambda level, text: sent.append((level, text)),
        max_message=1000,
        max_per_flush=2,
        max_backlog=50_000,
    )
    for i in range(100_000):
        batcher.add(f"flood {i}")
    batcher.flush(2)
    assert len(sent) == 3  # the drop notice and two capped messages, not everything at once
    assert "log lines dropped" in sent[0][1]
    assert all(len(text) <= 1000 for _, text in sent[1:])
    batcher.flush()
    assert sent[-1][1].endswith("flood 99999")
    batcher.close()
