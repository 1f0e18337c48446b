"""A hostile agent, and separately a hostile verification command, in a sandboxed run as an
ordinary user (SPEC §10): every attempt fails, the canaries stay unread, nothing outside the
work tree changes, nothing of the run survives it, and the run still ends cleanly with the
refusals in its history."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.conftest import (
    Tools,
    User,
    as_user,
    chown_tree,
    tree_digest,
    user_env,
    user_git,
)

pytestmark = pytest.mark.slow
CHANGE = "hostile"


class Listener:
    """A TCP server on the host's 127.0.0.1 that counts who reached it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def workspace(sandbox_user: User, user_tools: Tools) -> Iterator[tuple[Path, dict[str, str]]]:
    """A git work tree with one change in the user's home, and canaries in ~/.ssh and ~/.aws."""
    home = sandbox_user.home
    canaries = {}
    for rel in (".ssh/id_ed25519", ".aws/credentials"):
        token = "CANARY-" + secrets.token_hex(8)
        path = home / rel
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.write_text(token + "\n")
        path.chmod(0o600)
        canaries[rel] = token
    (home / ".bashrc").write_text("# the user's own\n")
    (home / "outside").mkdir(exist_ok=True)
    root = home / f"work-{secrets.token_hex(4)}"
    change = root / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (change / "tasks.md").write_text("## 1. Everything\n\n- [ ] 1.1 Do it\n")
    (root / "README.md").write_text("a project\n")
    chown_tree(home, sandbox_user)
    user_git(sandbox_user, user_tools, root, "init", "-q")
    user_git(sandbox_user, user_tools, root, "add", "-A")
    user_git(sandbox_user, user_tools, root, "commit", "-q", "-m", "start")
    yield root, canaries
    subprocess.run(["rm", "-rf", str(root)], check=False)


def survivors(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def hostile_run(
    user: User, tools: Tools, root: Path, listener: Listener, *, agent: bool
) -> tuple[subprocess.CompletedProcess[str], str]:
    marker = "ralph-hostile-" + secrets.token_hex(6)
    hostile = [str(tools.scripts / "hostile.py"), "agent" if agent else "verify"]
    hostile += [str(listener.port), marker]
    benign = [str(tools.scripts / "check_all.py")]
    agent_command, verify = (hostile, ["true"]) if agent else (benign, hostile)
    argv = [tools.ralph, "run", CHANGE, "--root", str(root), "--max-iterations", "2"]
    argv += ["--agent-command", " ".join(agent_command), "--verify", " ".join(verify)]
    done = as_user(user, argv, user_env(user, tools))
    return done, marker


def check_contained(
    user: User, root: Path, canaries: dict[str, str], before: dict[str, str], mode: str
) -> dict[str, str]:
    report = json.loads((root / f"hostile-{mode}.json").read_text())
    for name, result in report.items():
        if name == "leave a daemon":
            continue  # it may start: what matters is that it does not outlive the run
        assert result.startswith("FAILED"), (name, result)
    seen = (root / ".ralph").rglob("*")
    for path in [*seen, root / f"hostile-{mode}.json"]:
        if path.is_file():
            text = path.read_text(errors="replace")
            assert all(token not in text for token in canaries.values()), path
    assert tree_digest(user.home, [root]) == before
    assert not (root / ".git/hooks/pre-commit").exists()
    assert "fsmonitor" not in (root / ".git/config").read_text()
    assert not (root / ".ralph/runs/forged").exists()
    return report


def history(root: Path) -> dict[str, object]:
    [record] = [json.loads(p.read_text()) for p in (root / ".ralph/runs").glob("*/record.json")]
    return record


@pytest.mark.parametrize("agent", [True, False], ids=["hostile-agent", "hostile-verification"])
def test_every_hostile_attempt_fails_and_the_run_ends_cleanly(
    sandbox_user: User,
    user_tools: Tools,
    workspace: tuple[Path, dict[str, str]],
    listener: Listener,
    agent: bool,
) -> None:
    root, canaries = workspace
    before = tree_digest(sandbox_user.home, [root])
    done, marker = hostile_run(sandbox_user, user_tools, root, listener, agent=agent)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert any(line.startswith("sandbox: bwrap") for line in output.splitlines()[:5]), output
    assert all(token not in output for token in canaries.values())
    check_contained(sandbox_user, root, canaries, before, "agent" if agent else "verify")
    assert listener.accepted == 0
    assert survivors(marker) == []
    record = history(root)
    assert record["state"] == "succeeded"
    assert record["sandbox"]["kind"] == "bwrap"  # type: ignore[index]
    assert str(sandbox_user.home / ".ssh") in record["sandbox"]["hidden"]  # type: ignore[index]
    rules = [r["rule"] for it in record["iterations"] for r in it["refusals"]]  # type: ignore[attr-defined]
    assert any("Read-only file system" in r for r in rules), rules
    if agent:  # the proxy refused the one connection that reached it
        assert any("exfiltrate.example.com" in r for r in rules), rules
