"""`ralph-lsp archive CHANGE --yes --json` on every archive run of the corpus agrees with the
OpenSpec CLI 1.13.2: exit code, JSON output, the bytes written under openspec/specs/, and the
change's folder moved to changes/archive/ (or nothing changed at all on a refusal)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.archiving.writer import today
from ralph_lsp.cli import main
from tests.conftest import SHARED

CORPUS = SHARED / "corpus" / "openspec-changes"
EXPECTED = CORPUS / "expected" / "archive"


def _cases() -> list[dict[str, Any]]:
    path = EXPECTED / "cases.json"
    if not path.exists():
        return []
    cases: list[dict[str, Any]] = json.loads(path.read_text())
    return cases


def _tree(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _run(root: Path, change: str) -> tuple[int, Any]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["archive", change, "--yes", "--json", "--root", str(root)])
    return code, json.loads(buffer.getvalue())


def _stable(output: Any, root: Path) -> Any:
    text = json.dumps(output, ensure_ascii=False)
    text = text.replace(str(root), "{ROOT}").replace(today(), "{DATE}")
    return json.loads(text)


@pytest.mark.skipif(not _cases(), reason="the shared corpus is not beside the checkout")
@pytest.mark.parametrize(
    "case", _cases(), ids=lambda c: f"{c['repo_slug']}/{c['change']}" if isinstance(c, dict) else ""
)
def test_archive_agrees_with_the_cli(case: dict[str, Any], tmp_path: Path) -> None:
    expected_dir = EXPECTED / case["repo_slug"] / case["change"]
    expected = json.loads((expected_dir / "result.json").read_text())
    root = tmp_path / "repo"
    shutil.copytree(CORPUS / case["repo_slug"], root, symlinks=True)
    before = _tree(root)
    specs_before = _tree(root / "openspec" / "specs")
    change_before = _tree(root / "openspec" / "changes" / case["change"])

    code, output = _run(root, case["change"])

    assert (code == 0) == (expected["exit_code"] == 0)
    assert _stable(output, root.resolve()) == expected["output"]
    if expected["exit_code"] != 0:
        assert _tree(root) == before, "a refused archive changed files"
        return
    specs_after = dict(specs_before)
    for entry in expected["specs_changed"]:
        rel = entry["path"].removeprefix("openspec/specs/")
        if entry["status"] == "deleted":
            specs_after.pop(rel, None)
        else:
            specs_after[rel] = (expected_dir / "specs-after" / rel).read_bytes()
    assert _tree(root / "openspec" / "specs") == specs_after
    archived = expected["archived_as"].replace("{DATE}", today())
    assert not (root / "openspec" / "changes" / case["change"]).exists()
    assert _tree(root / "openspec" / "changes" / "archive" / archived) == change_before
    for entry in expected["specs_changed"]:
        if entry["status"] != "deleted":
            data = (root / entry["path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == entry["sha256"]
