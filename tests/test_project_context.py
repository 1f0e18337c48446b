"""The project context of openspec/config.yaml: ralph-lsp's reading against the real OpenSpec
CLI's (`openspec instructions apply --json`, field `context`) on the ways people write it, and
the prompt carrying it as that command does."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ralph_lsp.loop.prompt import build_prompt
from ralph_lsp.openspec.project_context import (
    MAX_CONTEXT_BYTES,
    parse_context,
    read_project_context,
)
from ralph_lsp.openspec.workspace import Change
from tests.conftest import copy_example
from tests.tasks_reference import parse_tasks
from tests.test_openspec_differential import openspec  # noqa: F401  (the fixture)

CHANGE = "add-greeting-cli"

CONFIGS = {
    "literal": (
        "schema: spec-driven\ncontext: |\n  Python 3.10+, standard library only.\n"
        "  Tests use unittest.\n\nrules:\n  tasks:\n    - Keep tasks small\n"
    ),
    "literal-strip": "context: |-\n  One line\n  Two lines\n\n\nschema: spec-driven\n",
    "literal-keep": "context: |+\n  Kept\n\n\nschema: spec-driven\n",
    "folded": (
        "context: >\n  Folded text\n  on two lines.\n\n  A new paragraph.\n"
        "    indented more\n  back.\n"
    ),
    "folded-strip": "context: >-\n  a\n  b\n",
    "indent-indicator": "context: |2\n    starts indented\n  then not\n",
    "plain": "schema: spec-driven\ncontext: A plain one-liner # with a comment\n",
    "plain-multiline": (
        "context: first line\n  continued here\n\n  next paragraph\nschema: spec-driven\n"
    ),
    "double": 'context: "Use \\"tabs\\"\\tand\\nnewlines \\u00e9"\n',
    "single": "context: 'It''s quoted'\n",
    "crlf": "context: |\r\n  Windows line\r\n  endings\r\n",
    "bom": "\ufeffcontext: |\n  After a BOM\n",
    "none": "schema: spec-driven\nrules:\n  apply:\n    - not context\n",
    "blank": "context: |\n\n\nschema: spec-driven\n",
    "nested-only": "other:\n  context: not top level\n",
}


def project(tmp_path: Path, name: str, config: str) -> Path:
    root = tmp_path / name
    copy_example(root)
    (root / "openspec" / "config.yaml").write_bytes(config.encode("utf-8"))
    return root


# The real OpenSpec CLI started once a configuration (about 7 s): the full suite's (`make test`).
@pytest.mark.slow
def test_contexts_agree_with_the_real_cli(openspec: str, tmp_path: Path) -> None:  # noqa: F811
    env = {**os.environ, "OPENSPEC_TELEMETRY": "0", "DO_NOT_TRACK": "1"}
    for name, config in CONFIGS.items():
        root = project(tmp_path, name, config)
        out = subprocess.run(
            [openspec, "instructions", "apply", "--change", CHANGE, "--json"],
            cwd=root, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, (name, out.stderr[-500:])
        theirs = json.loads(out.stdout).get("context")
        ours, warning = read_project_context(root)
        assert warning is None, (name, warning)
        assert ours == theirs, name


def test_what_is_not_a_string_is_said_not_guessed(tmp_path: Path) -> None:
    root = project(tmp_path, "flow", "context: [a, b]\n")
    assert read_project_context(root)[0] is None
    assert "not a plain string" in str(read_project_context(root)[1])
    big = project(tmp_path, "big", "context: |\n" + ("  " + "x" * 99 + "\n") * 600)
    context, warning = read_project_context(big)
    assert context is None and "over OpenSpec's 50 KiB limit" in str(warning)
    assert parse_context("context: x\n") == "x" and MAX_CONTEXT_BYTES == 50 * 1024


def test_the_prompt_carries_the_context_and_stays_byte_identical(tmp_path: Path) -> None:
    root = project(tmp_path, "p", CONFIGS["literal"])
    change = Change(root, CHANGE)
    doc = parse_tasks(change.tasks_path.read_text())
    first = build_prompt(change, doc, scope="story", verify_commands=["make test"])
    assert (
        "## Project context\nPython 3.10+, standard library only.\nTests use unittest.\n" in first
    )
    assert first == build_prompt(change, doc, scope="story", verify_commands=["make test"])
    (root / "openspec" / "config.yaml").unlink()
    assert "## Project context" not in build_prompt(
        change, doc, scope="story", verify_commands=["make test"]
    )
