"""Protocol hygiene found in review: every request is answered, out-of-range numbers are
refused or warned about (never an internal error), and commands act only on the workspace."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tests.faults.conftest import make_change
from tests.faults.helpers import FaultEnv, wait_until
from tests.faults.lsp_raw import CAPABILITIES, RawLsp

StartLsp = Callable[..., RawLsp]
HUGE = 1e400  # inf: on the wire `Infinity`, which the server reads as it reads `1e400`


def test_a_request_before_initialize_gets_server_not_initialized(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    server = start_lsp(initialize=False)
    answer = server.command("ralph.changes", {})
    assert answer["error"]["code"] == -32002, answer
    assert "initialize" in answer["error"]["message"]
    assert (
        server.request("textDocument/codeLens", {"textDocument": {"uri": "file:///x"}})["error"][
            "code"
        ]
        == -32002
    )
    server.initialize()  # and initialize still works afterwards
    assert "result" in server.command("ralph.changes", {})


def test_every_request_after_shutdown_gets_an_error(fx: FaultEnv, start_lsp: StartLsp) -> None:
    server = start_lsp()
    assert "result" in server.request("shutdown")
    for method, params in [
        ("workspace/executeCommand", {"command": "ralph.changes"}),
        ("textDocument/codeLens", {"textDocument": {"uri": fx.tasks().as_uri()}}),
        ("shutdown", None),
    ]:
        answer = server.request(method, params, timeout=5)
        assert answer.get("error", {}).get("code") == -32600, (method, answer)
    server.notify("exit")
    assert server.proc.wait(10) == 0


def test_huge_numbers_in_settings_are_a_warning_not_a_failed_initialize(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    server = start_lsp({"stuckAfter": HUGE, "maxIterations": -3, "stopGraceSeconds": HUGE})
    assert "result" in server.command("ralph.changes", {})
    warning = "ralph.stuckAfter: expected a whole number of at least 1, got inf"
    wait_until(lambda: warning in server.logs(), 10, "the settings warning")
    logs = server.logs()
    assert "ralph.maxIterations" in logs and "ralph.stopGraceSeconds" in logs


def test_huge_or_negative_counts_in_arguments_are_invalid_params(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    server = start_lsp({"agent": "custom", "agentCommand": fx.agent("check")})
    for bad in (HUGE, -1, 0, 2.5, float("nan")):
        answer = server.command("ralph.run", {"change": "alpha", "maxIterations": bad})
        assert answer.get("error", {}).get("code") == -32602, (bad, answer)
        assert "whole number of at least 1" in answer["error"]["message"]
    assert fx.spawns() == []


def test_a_root_outside_the_workspace_folders_is_refused(
    fx: FaultEnv, start_lsp: StartLsp, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    make_change(other, "beta")
    server = start_lsp({"agent": "custom", "agentCommand": fx.agent("check")})
    for command, arg in [
        ("ralph.run", {"change": "beta", "root": other.as_uri()}),
        ("ralph.changes", {"root": other.as_uri()}),
        ("ralph.history", {"change": "beta", "root": other.as_uri()}),
    ]:
        answer = server.command(command, arg)
        assert answer.get("error", {}).get("code") == -32602, (command, answer)
        assert "not in this editor's workspace folders" in answer["error"]["message"]
    assert fx.spawns() == []
    # The workspace's own root, named explicitly, still works.
    answer = server.command("ralph.changes", {"root": fx.root.as_uri()})
    assert [c["name"] for c in answer["result"]["changes"]] == ["alpha"]


def test_a_root_inside_a_workspace_folder_is_accepted(fx: FaultEnv, tmp_path: Path) -> None:
    # The workspace folder is a parent of the OpenSpec root (a monorepo).
    server = RawLsp(fx.root.parent, fx.env, stderr_path=fx.logs / "server.stderr")
    try:
        server.result(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": fx.root.parent.as_uri(),
                "capabilities": CAPABILITIES,
                "workspaceFolders": [{"uri": fx.root.parent.as_uri(), "name": "all"}],
            },
        )
        server.notify("initialized", {})
        answer = server.command("ralph.changes", {"root": fx.root.as_uri()})
        assert [c["name"] for c in answer["result"]["changes"]] == ["alpha"], answer
    finally:
        server.end()


def test_an_empty_array_argument_reads_as_an_empty_object(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    # Lua's empty table serialises as an array: Neovim sends `[[]]` for `{}`.
    server = start_lsp()
    answer = server.command("ralph.changes", [])
    assert [c["name"] for c in answer["result"]["changes"]] == ["alpha"], answer


def test_display_only_lenses_carry_a_registered_no_op_command(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    # Found with Neovim: running a status lens gave "Language server does not support command".
    server = start_lsp(initialize=False)
    provider = server.initialize()["capabilities"]["executeCommandProvider"]["commands"]
    assert "ralph.noop" in provider
    lenses = server.code_lens(fx.tasks().as_uri())
    # Status lenses (every lens below line 0 but the `▶ Run story` actions) are display-only.
    display = [
        lens
        for lens in lenses
        if lens["range"]["start"]["line"] > 0 and not lens["command"]["title"].startswith("▶")
    ]
    assert display and {lens["command"]["command"] for lens in display} == {"ralph.noop"}
    actions = [lens for lens in lenses if lens["command"]["title"] == "▶ Run story"]
    assert actions and all(lens["command"]["command"] == "ralph.run" for lens in actions)
    for arguments in ([], [None], [{"anything": 1}], [1, 2]):
        answer = server.command("ralph.noop", *arguments)
        assert answer.get("result") == {}, (arguments, answer)
