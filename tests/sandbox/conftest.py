"""Running the product as an ordinary user, as a person runs it (SPEC §10 tests).

The tests run as root in CI, and root is not what users run as. :func:`sandbox_user` creates a
user (``useradd -m``) once; :func:`user_tools` builds, once per session, a folder that user can
read holding a venv of Debian's ``/usr/bin/python3`` (root's own Python may live where others
cannot read) with this work tree installed in it, and the scripts the tests run as agents and
checks. :func:`as_user` runs a command as that user with ``setpriv``.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

USER = "ralphsbx"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
# A folder the user can read (RALPH_SANDBOX_TEST_TOOLS: one per checkout tested at once).
TOOLS = Path(os.environ.get("RALPH_SANDBOX_TEST_TOOLS", "/var/tmp/ralph-sandbox-tests"))
SYSTEM_PYTHON = Path("/usr/bin/python3")


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: Path


@dataclass(frozen=True)
class Tools:
    venv: Path
    scripts: Path

    @property
    def ralph(self) -> str:
        return str(self.venv / "bin" / "ralph-lsp")


def _need_root() -> None:
    if sys.platform != "linux":
        pytest.skip("the sandbox tests need Linux")
    if os.geteuid() != 0:
        pytest.skip("creating an ordinary user for the sandbox tests needs root")
    for tool in ("useradd", "setpriv"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing: cannot run as an ordinary user")


def _apt(package: str) -> None:
    """Install a Debian package the tests need when it is missing (CI: a fresh machine)."""
    if shutil.which("apt-get") is None:
        pytest.skip(f"{package} is missing and there is no apt-get to install it")
    subprocess.run(["apt-get", "update", "-qq"], check=False, capture_output=True)
    done = subprocess.run(
        ["apt-get", "install", "-y", "-qq", package], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"could not install {package}: {done.stderr.strip()[-300:]}")


@pytest.fixture(scope="session")
def sandbox_user() -> User:
    _need_root()
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/sh", USER], check=True)
    entry = pwd.getpwnam(USER)
    return User(USER, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def _source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(
        [*REPO.joinpath("ralph_lsp").rglob("*.py"), REPO / "pyproject.toml", *SCRIPTS.iterdir()]
    ):
        digest.update(str(path.relative_to(REPO)).encode() + path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def user_tools(sandbox_user: User) -> Tools:
    """A venv the user can run, with this work tree installed (rebuilt when the sources
    change: the package is reinstalled, its dependencies kept)."""
    if not SYSTEM_PYTHON.exists():
        pytest.skip(f"{SYSTEM_PYTHON} is missing: no Python an ordinary user can run")
    TOOLS.mkdir(mode=0o755, parents=True, exist_ok=True)
    venv = TOOLS / "venv"
    if not (venv / "bin" / "python").exists():
        made = subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", str(venv)], capture_output=True)
        if made.returncode != 0:
            _apt("python3-venv")
            subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--clear", str(venv)], check=True)
    stamp = venv / ".ralph-source"
    wanted = _source_hash()
    if not stamp.exists() or stamp.read_text() != wanted:
        _install(venv)
        stamp.write_text(wanted)
    scripts = TOOLS / "scripts"
    shutil.rmtree(scripts, ignore_errors=True)
    shutil.copytree(SCRIPTS, scripts)
    for path in [TOOLS, scripts, *scripts.rglob("*")]:
        os.chmod(path, 0o755)
    return Tools(venv, scripts)


def _install(venv: Path) -> None:
    """This work tree into ``venv``: a copy (the checkout may sit where the user cannot read),
    its dependencies pinned by constraints.txt."""
    source = TOOLS / "source"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(".venv", ".git", "node_modules", ".cache", "editor-client"),
    )
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [*pip, "-c", str(REPO / "constraints.txt"), str(source)],
        check=True,
        env=env,
        timeout=600,
    )
    subprocess.run(
        [*pip, "--no-deps", "--force-reinstall", str(source)], check=True, env=env, timeout=600
    )


def user_env(user: User, tools: Tools, **extra: str) -> dict[str, str]:
    """The environment of a login of ``user`` (nothing of root's)."""
    return {
        "HOME": str(user.home),
        "USER": user.name,
        "LOGNAME": user.name,
        "PATH": f"{tools.venv}/bin:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "RALPH_DEMO_DELAY": "0",
        **extra,
    }


def setpriv(user: User) -> list[str]:
    return ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--init-groups"]


def as_user(
    user: User,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    timeout: float = 180,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``argv`` run as ``user`` (after ``prefix``, e.g. a user namespace of its own)."""
    return subprocess.run(
        [*prefix, *setpriv(user), *argv],
        env=dict(env),
        cwd=cwd or user.home,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def chown_tree(path: Path, user: User) -> None:
    for item in [path, *path.rglob("*")]:
        os.lchown(item, user.uid, user.gid)


def user_git(user: User, tools: Tools, root: Path, *args: str) -> str:
    done = as_user(
        user,
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        user_env(user, tools),
        cwd=root,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def tree_digest(folder: Path, skip: Sequence[Path] = ()) -> dict[str, str]:
    """Every file, link and folder under ``folder`` (but ``skip``) and a hash of its content."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in skip]
        out[str(here)] = "dir"
        for name in filenames:
            path = here / name
            if path in skip:
                continue
            if path.is_symlink():
                out[str(path)] = "link:" + os.readlink(path)
            else:
                try:
                    out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError as exc:
                    out[str(path)] = f"unreadable: {exc.strerror}"
    return out
