"""Fuzzing what the server accepts: random command arguments of random JSON types for every
``ralph.*`` command, random ``didChange`` content and ranges, random settings. Zero crashes:
every bad argument is answered with a JSON-RPC error (never an internal error or a traceback),
and after each example a normal request still answers on the same connection.

One server serves the whole module (starting one costs about a second); its agent command is
the fault agent's harmless ``check``, and every process it starts is checked gone at the end.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralph_lsp.server.args import FIELDS
from ralph_lsp.settings import SETTING_NAMES as SERVER_SETTINGS
from tests.faults.conftest import TASKS, make_change
from tests.faults.helpers import FAULT_AGENT, TAG, tagged_processes
from tests.faults.lsp_raw import RawLsp
from tests.tags import scratch

COMMANDS = FIELDS  # every command and its fields, from their one declaration
SETTING_NAMES = (*SERVER_SETTINGS, "trusted")  # every setting, from its one declaration
ANSWER_CODES = {-32602, -32803}  # Invalid params, RequestFailed

# Text that includes lone surrogates, NULs and other awkward code points now and then.
awkward_text = st.one_of(
    st.text(max_size=24),
    st.text(st.characters(codec=None, categories=["Cs", "Cc", "Zl", "Zp", "So"]), max_size=6),
    st.sampled_from(["alpha", "../alpha", "archive", "", " ", "\x00", "$(id)", "a\nb", "nope"]),
)
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    awkward_text,
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Fuzzed:
    def __init__(self, server: RawLsp, root: Path, doc_uri: str) -> None:
        self.server = server
        self.root = root
        self.doc_uri = doc_uri
        self.version = 1

    def still_answers(self) -> None:
        """A normal request answers on the same connection; the server process is alive."""
        answer = self.server.request(
            "workspace/executeCommand", {"command": "ralph.status", "arguments": [{}]}, 10
        )
        assert "result" in answer and isinstance(answer["result"]["runs"], list), answer
        assert self.server.proc.poll() is None


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    base = tmp_path_factory.mktemp("fuzz-lsp")
    root = base / "project"
    make_change(root, "alpha")
    doc = make_change(root, "doc") / "tasks.md"
    logs = scratch(root)  # the agents' logs: in the work tree, the one folder they may write
    tag = uuid.uuid4().hex
    env = {**os.environ, TAG: tag, "FAULT_LOG_DIR": str(logs), "TMPDIR": str(base)}
    settings_ = {
        "agent": "custom",
        "agentCommand": [sys.executable, str(FAULT_AGENT), "check"],
        "maxIterations": 3,
    }
    server = RawLsp(root, env, settings=settings_, init_options=settings_)
    server.initialize()
    server.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": doc.as_uri(),
                "languageId": "markdown",
                "version": 1,
                "text": TASKS,
            }
        },
    )
    state = Fuzzed(server, root, doc.as_uri())
    try:
        yield state
        state.still_answers()
    finally:
        server.end()
        deadline = time.monotonic() + 5
        while (left := tagged_processes(tag)) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"processes left running: {left}"


def arguments_for(command: str) -> st.SearchStrategy[Any]:
    fields = COMMANDS[command]
    value_for = {
        "change": st.one_of(json_value, awkward_text),
        "root": st.one_of(
            json_value,
            st.sampled_from(["file:///", "file:///nonexistent", "relative/path", "http://x/y", ""]),
        ),
    }
    known = st.fixed_dictionaries(
        {},
        optional={f: value_for.get(f, json_value) for f in fields},
    )
    return st.one_of(
        st.none(),
        st.lists(json_value, max_size=3),
        st.lists(known, min_size=1, max_size=1),
        st.lists(st.dictionaries(st.text(max_size=12), json_value, max_size=3), max_size=1),
    )


@FUZZ
@given(data=st.data(), command=st.sampled_from(sorted(COMMANDS)))
def test_random_command_arguments_get_an_answer(
    fuzzed: Fuzzed, data: st.DataObject, command: str
) -> None:
    arguments = data.draw(arguments_for(command), label="arguments")
    params: dict[str, Any] = {"command": command}
    if arguments is not None:
        params["arguments"] = arguments
    answer = fuzzed.server.request("workspace/executeCommand", params, 20)
    if "error" in answer:
        error = answer["error"]
        assert error["code"] in ANSWER_CODES, error
        assert isinstance(error["message"], str) and error["message"], error
        assert "Traceback" not in error["message"] and "bug in ralph-lsp" not in error["message"]
    else:
        assert isinstance(answer["result"], dict), answer
    malformed = arguments is not None and (
        len(arguments) > 1
        # `[]` reads as `{}` (Lua's empty table), like null
        or (
            (len(arguments) == 1 and not isinstance(arguments[0], (dict, type(None))))
            and arguments[0] != []
        )
    )
    if malformed:
        assert answer.get("error", {}).get("code") == -32602, answer
    fuzzed.still_answers()


position = st.fixed_dictionaries(
    {
        "line": st.integers(0, 2**31 - 1) | st.integers(0, 30),
        "character": st.integers(0, 2**31 - 1) | st.integers(0, 80),
    }
)
change_event = st.one_of(
    st.fixed_dictionaries({"text": st.one_of(st.text(max_size=300), st.just(TASKS))}),
    st.fixed_dictionaries(
        {
            "range": st.fixed_dictionaries({"start": position, "end": position}),
            "text": st.text(max_size=60),
        }
    ),
)


@FUZZ
@given(changes=st.lists(change_event, min_size=1, max_size=4))
def test_random_did_change_keeps_lenses_answering(
    fuzzed: Fuzzed, changes: list[dict[str, Any]]
) -> None:
    fuzzed.version += 1
    fuzzed.server.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": fuzzed.doc_uri, "version": fuzzed.version},
            "contentChanges": changes,
        },
    )
    lenses = fuzzed.server.code_lens(fuzzed.doc_uri, 10)
    assert isinstance(lenses, list)
    assert all(lens["range"]["start"]["line"] >= 0 for lens in lenses)
    fuzzed.still_answers()


settings_object = st.one_of(
    json_value,
    st.fixed_dictionaries({}, optional={name: json_value for name in SETTING_NAMES}),
)


@FUZZ
@given(value=settings_object, nested=st.booleans())
def test_random_settings_never_break_the_server(fuzzed: Fuzzed, value: Any, nested: bool) -> None:
    settings_ = {"ralph": value} if nested else value
    fuzzed.server.notify("workspace/didChangeConfiguration", {"settings": settings_})
    fuzzed.still_answers()
    changes = fuzzed.server.result(
        "workspace/executeCommand", {"command": "ralph.changes", "arguments": [{}]}, 10
    )
    assert {c["name"] for c in changes["changes"]} == {"alpha", "doc"}


def test_odd_requests_get_answers_and_the_connection_survives(fuzzed: Fuzzed) -> None:
    server = fuzzed.server
    for method, params, expected in [
        ("textDocument/codeLens", {"textDocument": {"uri": 5}}, "result"),
        ("textDocument/codeLens", {"textDocument": {"uri": "file:///nope/tasks.md"}}, "result"),
        ("textDocument/codeLens", {"textDocument": {"uri": "untitled:Untitled-1"}}, "result"),
        ("workspace/executeCommand", {"command": "ralph.nope"}, "error"),
        ("workspace/executeCommand", {"command": "ralph.status", "arguments": "x"}, "error"),
        ("ralph/nonexistent", {"x": 1}, "error"),
        (
            "workspace/executeCommand",
            {"command": "ralph.run", "arguments": [{"change": "\ud800\x00"}]},
            "error",
        ),
        (
            "workspace/executeCommand",
            {"command": "ralph.guide", "arguments": [{"change": "doc", "text": "\udfff"}]},
            "error",
        ),
    ]:
        answer = server.request(method, params, 10)
        assert expected in answer, (method, params, answer)
        fuzzed.still_answers()


UNANSWERED = [
    ("textDocument/codeLens", {}),
    ("textDocument/codeLens", None),
    ("workspace/executeCommand", {}),
    ("workspace/executeCommand", {"command": 7}),
]


def test_requests_that_do_not_fit_the_schema_leave_the_connection_working(
    fuzzed: Fuzzed,
) -> None:
    for method, params in UNANSWERED:
        fuzzed.server.send_request(method, params)
        fuzzed.still_answers()


@pytest.mark.parametrize(("method", "params"), UNANSWERED[:1])
def test_requests_that_do_not_fit_the_schema_get_an_error(
    fuzzed: Fuzzed, method: str, params: Any
) -> None:
    answer = fuzzed.server.request(method, params, 1)
    assert answer.get("error", {}).get("code") == -32602, answer
