"""The two process inspections (ralph_lsp/proc/inspection.py) agree on what they both see, history's
process identity reads the same under either, and Windows is refused at start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import ralph_lsp.cli
from ralph_lsp.proc import inspection as proc_inspection
from ralph_lsp.runs.history import RunHistory, _process_identity, load_records


def test_both_inspections_see_the_same_process() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    deadline = time.monotonic() + 5
    while (
        proc_inspection.LinuxProc().stat(child.pid) is None
        or proc_inspection.LinuxProc().stat(child.pid).state != "Z"
    ):  # exited, not reaped yet: a zombie
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        linux, portable = proc_inspection.LinuxProc(), proc_inspection.PortableProc()
        assert linux.stat(child.pid) == (*portable.stat(child.pid)[:1], *linux.stat(child.pid)[1:])
        assert portable.stat(child.pid) == ("Z", os.getpid(), child.pid, child.pid)
        assert linux.start_time(child.pid) == portable.start_time(child.pid)
        assert linux.start_time(os.getpid()) == portable.start_time(os.getpid())
    finally:
        child.wait()
    assert linux.stat(child.pid) is None and portable.stat(child.pid) is None


def test_both_inspections_find_an_orphan_by_its_tree_tag(tmp_path: Path) -> None:
    # What the portable inspection relies on without a subreaper: a double-forked escapee keeps
    # the tag of its tree in its environment.
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        print(os.getpid(), flush=True); time.sleep(60)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    tag = f"t-{uuid.uuid4().hex}"
    env = dict(os.environ, **{proc_inspection.TREE_TAG: tag})
    parent = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    assert parent.stdout is not None
    orphan = int(parent.stdout.readline())
    parent.stdout.close()
    assert parent.wait(20) == 0  # its parent is gone: the orphan re-parented away from here
    try:
        assert proc_inspection.LinuxProc().tagged(tag) == [orphan]
        assert proc_inspection.PortableProc().tagged(tag) == [orphan]
        assert proc_inspection.PortableProc().tagged("t-other") == []
    finally:
        os.kill(orphan, 9)


def test_the_choice_follows_ralph_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(proc_inspection.ENV, "portable")
    assert proc_inspection.current().name == "portable"
    monkeypatch.setenv(proc_inspection.ENV, "linux")
    assert proc_inspection.current().name == "linux"
    monkeypatch.setattr(proc_inspection, "has_proc", lambda: False)  # macOS: no /proc
    assert proc_inspection.current().name == "portable"


def test_history_identity_reads_the_same_under_either_inspection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inspection: str
) -> None:
    hist = RunHistory(tmp_path, "r-1", lambda m: None)
    hist.save({"runId": "r-1", "change": "c", "state": "running", "reason": "iteration 1"})
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        other = "portable" if inspection == "linux" else "linux"
        monkeypatch.setenv(proc_inspection.ENV, other)
        written = _process_identity(sleeper.pid)  # written by a process using the other one
        monkeypatch.setenv(proc_inspection.ENV, inspection)
        assert _process_identity(sleeper.pid) == written
        (hist.dir / "owner.pid").write_text(written)
        assert load_records(tmp_path, "c")[0]["state"] == "running"
        # The same pid, another start time: the pid was reused; the run's process is gone.
        pid, start = written.split()
        (hist.dir / "owner.pid").write_text(f"{pid} {float(start) - 5:.2f}\n")
        assert load_records(tmp_path, "c")[0]["state"] == "interrupted"
    finally:
        sleeper.kill()
        sleeper.wait()
    (hist.dir / "owner.pid").write_text(written)
    assert load_records(tmp_path, "c")[0]["reason"].startswith("interrupted:")


def test_windows_is_refused_at_the_cli_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert ralph_lsp.cli.main(["changes"]) == 2
    err = capsys.readouterr().err
    assert "Windows: run ralph-lsp in WSL or a Remote window" in err


def test_windows_is_refused_at_the_server_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ralph_lsp.server import serve

    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(SystemExit) as exit_info:
        serve()
    assert exit_info.value.code == 2
    assert "Windows: run ralph-lsp in WSL or a Remote window" in capsys.readouterr().err
