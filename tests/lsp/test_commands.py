"""The ``ralph.*`` commands over a real connection: results, refusals, and malformed calls."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import CHANGE, PROFILES, Session, StartSession

# Every command test runs as VS Code and as a minimal client (no workspace/configuration,
# no codeLens/refresh, no work-done progress).
pytestmark = pytest.mark.parametrize("client_profile", PROFILES, indirect=True)


async def refused(session: Session, name: str, arguments: list[Any] | None) -> str:
    with pytest.raises(JsonRpcException) as info:
        await session.command_raw(name, arguments)
    return str(info.value.message)


async def test_changes_lists_the_change_with_counts_and_stories(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    result = await s.command("ralph.changes", {})
    assert result == {
        "changes": [
            {
                "name": CHANGE,
                "root": workspace.as_uri(),
                "tasksUri": s.tasks_uri,
                "completed": 0,
                "total": 8,
                "stories": [
                    {"id": "1", "title": "Command line", "line": 2, "completed": 0, "total": 3},
                    {"id": "2", "title": "Shouting", "line": 7, "completed": 0, "total": 2},
                    {"id": "3", "title": "Tests and docs", "line": 11, "completed": 0, "total": 3},
                ],
                "run": None,
            }
        ]
    }
    # A palette invocation sends no argument at all: that is `{}`.
    assert await s.command_raw("ralph.changes", None) == result
    assert await s.command_raw("ralph.changes", []) == result


async def test_changes_counts_the_open_buffer(start_session: StartSession, workspace: Path) -> None:
    s = await start_session(workspace)
    s.open(s.tasks_md.read_text().replace("- [ ] 1.1", "- [x] 1.1"))
    result = await s.command("ralph.changes", {})
    assert result["changes"][0]["completed"] == 1


MALFORMED: list[tuple[str, list[Any] | None, str]] = [
    ("ralph.run", None, 'ralph.run needs "change"'),
    ("ralph.run", [], 'ralph.run needs "change"'),
    ("ralph.run", [None], 'ralph.run needs "change"'),
    ("ralph.run", [42], "takes one JSON object argument, got a number"),
    ("ralph.run", ["add-greeting-cli"], "takes one JSON object argument, got a string"),
    ("ralph.run", [{"change": CHANGE}, {}], "got 2 arguments"),
    ("ralph.run", [{"change": 7}], '"change" must be a non-empty string, got a number'),
    ("ralph.run", [{"change": ""}], '"change" must be a non-empty string'),
    ("ralph.run", [{"change": CHANGE, "maxIterations": 0}], '"maxIterations" must be'),
    ("ralph.run", [{"change": CHANGE, "maxIterations": "3"}], '"maxIterations" must be'),
    ("ralph.run", [{"change": CHANGE, "iterationScope": "all"}], '"iterationScope" must be'),
    ("ralph.run", [{"change": CHANGE, "maxIteration": 3}], "unknown field 'maxIteration'"),
    ("ralph.run", [{"change": CHANGE, "root": 5}], '"root" must be a non-empty string'),
    ("ralph.run", [{"change": CHANGE, "root": "http://x/y"}], "file: URI"),
    ("ralph.stop", [{}], 'ralph.stop needs "change"'),
    ("ralph.guide", [{"change": CHANGE}], 'ralph.guide needs "text"'),
    ("ralph.guide", [{"change": CHANGE, "text": ["a"]}], '"text" must be a non-empty string'),
    ("ralph.guide", [{"change": CHANGE, "text": "   "}], '"text" is blank'),
    ("ralph.status", [{"change": 1}], '"change" must be a non-empty string'),
    ("ralph.history", [], 'ralph.history needs "change"'),
    ("ralph.changes", [[1]], "got an array"),  # `[]` alone reads as {} (Lua's empty table)
]


async def test_malformed_arguments_get_an_error_and_the_connection_survives(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    for name, arguments, expected in MALFORMED:
        with pytest.raises(JsonRpcException) as info:
            await s.command_raw(name, arguments)
        assert expected in info.value.message, (name, arguments)
        assert info.value.code == -32602, (name, arguments)  # Invalid params
        assert "Traceback" not in info.value.message
        # The server is still there and answers.
        assert (await s.command("ralph.status", {}))["runs"] == []
    assert s.process.returncode is None
    # Answers to bad calls are not server failures: nothing about them in the log.
    assert s.logs() == ""


async def test_unknown_change_lists_the_known_ones(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    for name in ("ralph.run", "ralph.stop", "ralph.history", "ralph.status"):
        message = await refused(s, name, [{"change": "nope"}])
        assert message == f"unknown change 'nope' (known: {CHANGE})", name
    message = await refused(s, "ralph.guide", [{"change": "nope", "text": "hi"}])
    assert message == f"unknown change 'nope' (known: {CHANGE})"


async def test_a_path_is_not_a_change_name(start_session: StartSession, workspace: Path) -> None:
    s = await start_session(workspace)
    message = await refused(s, "ralph.run", [{"change": "../x"}])
    assert message == f"unknown change '../x' (known: {CHANGE})"
    message = await refused(s, "ralph.run", [{"change": f"../changes/{CHANGE}"}])
    assert message.startswith("unknown change")


async def test_stop_and_guide_of_an_idle_change_say_it_is_not_running(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    assert await refused(s, "ralph.stop", [{"change": CHANGE}]) == (
        f"change '{CHANGE}' is not running"
    )
    message = await refused(s, "ralph.guide", [{"change": CHANGE, "text": "use argparse"}])
    assert message == f"change '{CHANGE}' is not running"


async def test_status_and_history_of_a_change_that_never_ran(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace)
    assert await s.command("ralph.status", {}) == {"runs": []}
    assert await s.command("ralph.status", {"change": CHANGE}) == {"runs": []}
    assert await s.command("ralph.history", {"change": CHANGE}) == {"runs": []}


async def test_root_may_be_given_and_must_be_an_openspec_root(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    s = await start_session(workspace)
    result = await s.command("ralph.changes", {"root": workspace.as_uri()})
    assert [c["name"] for c in result["changes"]] == [CHANGE]
    message = await refused(s, "ralph.run", [{"change": CHANGE, "root": tmp_path.as_uri()}])
    assert "is not an OpenSpec root" in message
    assert workspace.as_uri() in message  # it lists the open roots


async def test_root_is_required_when_several_roots_are_open(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(workspace, other)
    (other / "openspec" / "changes" / CHANGE).rename(other / "openspec" / "changes" / "second")
    s = await start_session(workspace, folders=[workspace, other])
    names = [(c["root"], c["name"]) for c in (await s.command("ralph.changes", {}))["changes"]]
    assert names == [(workspace.as_uri(), CHANGE), (other.as_uri(), "second")]
    message = await refused(s, "ralph.history", [{"change": CHANGE}])
    assert "several OpenSpec roots are open" in message
    assert workspace.as_uri() in message and other.as_uri() in message
    assert await s.command("ralph.history", {"change": "second", "root": other.as_uri()}) == {
        "runs": []
    }


async def test_no_root_open(start_session: StartSession, tmp_path: Path) -> None:
    s = await start_session(tmp_path, folders=[tmp_path])
    assert await s.command("ralph.changes", {}) == {"changes": []}
    message = await refused(s, "ralph.run", [{"change": CHANGE}])
    assert "no OpenSpec root is open" in message
