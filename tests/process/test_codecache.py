"""The generated-code cache (``proc/codecache.py``): a server's second start compiles none of
the scripts attrs and dataclasses write, every class behaves as compiled, and a cache file that
is not the user's own private regular file is never run. Each start is a real interpreter."""

from __future__ import annotations

import json
import marshal
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol.types import MarkupContent

from ralph_lsp.proc import codecache

# What `ralph-lsp serve` does before serving, then a few classes used, as JSON.
START = """
import json, sys
from ralph_lsp.proc import codecache
codecache.install()
import ralph_lsp.server
import lsprotocol.types as t
from ralph_lsp.conformance.scenarios import Scenario
found, compiled = codecache.stats()
codecache.save()
pos = t.Position(line=1, character=2)
s = Scenario("cli", "Req", "Title", "spec.md", 3)
print(json.dumps({
    "found": found, "compiled": compiled,
    "eq": pos == t.Position(1, 2),
    "repr": repr(t.MarkupContent(kind="markdown", value="x")),
    "hash": hash(s) == hash(Scenario("cli", "Req", "Title", "spec.md", 3)),
    "shadowed": [name for mod, name in ((__import__("dataclasses"), "exec"),
        (__import__("attr._make", fromlist=["_"]), "compile")) if name in vars(mod)],
}))
"""


def start(cache_home: Path, **extra: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "RALPH_LSP_CODE_CACHE"}
    env.update(XDG_CACHE_HOME=str(cache_home), **extra)
    proc = subprocess.run(
        [sys.executable, "-c", START], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def cache_file(cache_home: Path) -> Path:
    path = codecache.cache_path({"XDG_CACHE_HOME": str(cache_home)})
    assert path is not None
    return path


def test_a_second_start_compiles_nothing_and_its_classes_behave(tmp_path: Path) -> None:
    first = start(tmp_path)
    assert first["compiled"] > 500  # lsprotocol's and our own classes
    path = cache_file(tmp_path)
    mode = path.stat().st_mode
    assert stat.S_IMODE(mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    second = start(tmp_path)
    assert second["found"] >= first["compiled"] - codecache.SAVE_AFTER
    assert second["compiled"] <= codecache.SAVE_AFTER  # attrs's per-process hash script
    for run in (first, second):
        assert run["eq"] is True and run["hash"] is True
        assert run["repr"] == repr(MarkupContent(kind="markdown", value="x"))  # type: ignore[arg-type]
        assert run["shadowed"] == []  # save() took the shadows away


def test_each_cached_code_is_what_compile_makes_of_its_script(tmp_path: Path) -> None:
    start(tmp_path)
    entries = codecache._read(cache_file(tmp_path))
    assert len(entries) > 500
    for (flags, filename, source), code in entries.items():
        assert code == compile(source, filename, "exec", flags, True), filename


def poison(path: Path, canary: Path) -> None:
    """Every entry of a real cache replaced by code that leaves ``canary``."""
    entries = codecache._read(path)
    evil = compile(f"open({str(canary)!r}, 'w').close()", "<evil>", "exec")
    path.write_bytes(marshal.dumps(dict.fromkeys(entries, evil)))


@pytest.mark.parametrize("how", ["writable by others", "through a link", "garbage"])
def test_a_cache_that_is_not_the_users_private_file_is_never_run(tmp_path: Path, how: str) -> None:
    home = tmp_path / "cache"
    start(home)
    path = cache_file(home)
    canary = tmp_path / "ran"
    if how == "writable by others":
        poison(path, canary)
        path.chmod(0o666)
    elif how == "through a link":
        elsewhere = tmp_path / "elsewhere.marshal"
        path.rename(elsewhere)
        poison(elsewhere, canary)
        path.symlink_to(elsewhere)
    else:
        path.write_bytes(b"\xe3 not marshal \x00" * 1000)
    after = start(home)
    assert not canary.exists(), "code from an untrusted cache ran"
    assert after["found"] == 0 and after["compiled"] > 500 and after["eq"] is True
    if how != "through a link":  # replaced by a good one (the link itself is replaced too)
        assert codecache._read(path)


def test_the_users_own_poisoned_cache_shows_the_cache_is_what_runs(tmp_path: Path) -> None:
    """The check above can fail: the same poisoned file, private to the user, is run (which
    is why only the user's own private file is read, as Python trusts its ``__pycache__``)."""
    start(tmp_path)
    path = cache_file(tmp_path)
    canary = tmp_path / "ran"
    poison(path, canary)
    path.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "RALPH_LSP_CODE_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    subprocess.run([sys.executable, "-c", START], env=env, capture_output=True, timeout=120)
    assert canary.exists()


def test_turned_off_it_reads_and_writes_nothing(tmp_path: Path) -> None:
    run = start(tmp_path, RALPH_LSP_CODE_CACHE="off")
    assert run["found"] == 0 and run["compiled"] == 0 and run["eq"] is True
    assert not cache_file(tmp_path).exists()


def test_a_read_only_cache_folder_is_a_start_without_a_cache(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder")
    tmp_path.chmod(0o500)
    try:
        run = start(tmp_path)
    finally:
        tmp_path.chmod(0o700)
    assert run["compiled"] > 500 and run["eq"] is True
