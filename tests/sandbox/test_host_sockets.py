"""No host socket in view inside the sandbox (SPEC §10), as an ordinary user: a sandboxed agent
with an empty allowlist, and that run's verification, look for every socket they can find
while another run of the same user is live (its control socket in ``$XDG_RUNTIME_DIR``, its
proxy allowing the test's origin), beside sockets the test makes in the host's ``/tmp`` and
``/run/user/<uid>``. None is in view, none is reached, the other run goes on untouched; the
other presets' logins, the shell history and the editor's state stay unread."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.conftest import Tools, User, chown_tree, setpriv, user_env
from tests.sandbox.test_hostile import Listener, history

pytestmark = pytest.mark.slow
CANARIES = (
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".claude/.credentials.json",
    ".bash_history",
    ".config/Code/User/settings.json",
)


class UnixListener:
    """A Unix socket the test owns (open to the user), counting who connected."""

    def __init__(self, path: Path, user: User) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        os.chown(path, user.uid, user.gid)
        os.chmod(path, 0o777)
        self.sock.listen()
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

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
        self.path.unlink(missing_ok=True)


@pytest.fixture
def runtime_dir(sandbox_user: User) -> Iterator[Path]:
    """``/run/user/<uid>``, made as a login would make it when missing."""
    folder = Path(f"/run/user/{sandbox_user.uid}")
    made = not folder.exists()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chown(folder, sandbox_user.uid, sandbox_user.gid)
    yield folder
    if made:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def project(user: User, name: str) -> Path:
    root = user.home / f"{name}-{secrets.token_hex(4)}"
    change = root / "openspec" / "changes" / "c"
    change.mkdir(parents=True)
    (change / "tasks.md").write_text("## 1. All\n\n- [ ] 1.1 Do it\n")
    chown_tree(root, user)
    return root


def user_sockets(user: User, folders: list[Path]) -> set[str]:
    found = set()
    for top in folders:
        for folder, _dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISSOCK(st.st_mode) and st.st_uid == user.uid:
                    found.add(path)
    return found


def start_victim(
    user: User, tools: Tools, runtime: Path, origin: int, log: Path
) -> tuple[subprocess.Popen[bytes], list[str]]:
    """A long run (its agent sleeps) whose proxy allows the origin; its new sockets."""
    places = [Path("/tmp"), runtime]
    before = user_sockets(user, places)
    root = project(user, "victim")
    env = user_env(user, tools, XDG_RUNTIME_DIR=str(runtime))
    env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{origin}"
    argv = [tools.ralph, "run", "c", "--root", str(root), "--agent-command", "/bin/sleep 600"]
    with log.open("wb") as out:
        victim = subprocess.Popen(
            [*setpriv(user), *argv, "--verify", "true"], env=env, cwd=user.home, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and victim.poll() is None:
        new = sorted(user_sockets(user, places) - before)
        if any(p.endswith("proxy.sock") for p in new) and any(
            not p.endswith("proxy.sock") for p in new
        ):
            return victim, new
        time.sleep(0.2)
    victim.kill()
    pytest.fail(f"the other run never showed its sockets: {log.read_text(errors='replace')}")


def canaries(user: User) -> list[str]:
    paths = []
    for rel in CANARIES:
        path = user.home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("CANARY-" + secrets.token_hex(8) + "\n")
        paths.append(str(path))
    chown_tree(user.home, user)
    return paths


def test_no_host_socket_is_in_view_of_an_agent_or_a_check(
    sandbox_user: User, user_tools: Tools, runtime_dir: Path, tmp_path: Path
) -> None:
    user, tools = sandbox_user, user_tools
    origin = Listener()
    made = [
        UnixListener(Path(f"/tmp/probe-{secrets.token_hex(4)}.sock"), user),
        UnixListener(runtime_dir / f"probe-{secrets.token_hex(4)}.sock", user),
    ]
    victim, theirs = start_victim(user, tools, runtime_dir, origin.port, tmp_path / "victim")
    secret_files = canaries(user)
    try:
        root = project(user, "probe")
        named = [*theirs, *(str(m.path) for m in made)]
        targets = {"sockets": named, "origin": f"127.0.0.1:{origin.port}"}
        targets["canaries"] = secret_files  # type: ignore[assignment]
        (root / "probe-targets.json").write_text(json.dumps(targets))
        chown_tree(root, user)
        probe = str(tools.scripts / "sockets_probe.py")
        proxy = f"http://127.0.0.1:{origin.port}"  # the user's own: a check gets none either
        argv = [tools.ralph, "run", "c", "--root", str(root), "--max-iterations", "2"]
        argv += ["--agent-command", f"{probe} agent", "--verify", f"{probe} verify"]
        done = subprocess.run(
            [*setpriv(user), *argv], env=user_env(user, tools, ALL_PROXY=proxy), cwd=user.home,
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        output = done.stdout + done.stderr
        assert done.returncode == 0, output
        agent = json.loads((root / "probe-agent.json").read_text())
        check = json.loads((root / "probe-verify.json").read_text())
        for report in (agent, check):
            assert all(r.startswith("FAILED") for r in report["targets"].values()), report
            assert not set(report["found"]) & set(named), report["found"]
            assert all(r.startswith("FAILED") for r in report["canaries"].values()), report
            assert report["network"].startswith("FAILED"), report
        assert check["found"] == {}, check["found"]  # no proxy at all, nor anything else
        assert check["proxy_env"] == {}, check["proxy_env"]
        assert origin.accepted == 0 and all(m.accepted == 0 for m in made)
        assert victim.poll() is None, (tmp_path / "victim").read_text(errors="replace")
        assert "PROBE-GUIDANCE" not in (tmp_path / "victim").read_text(errors="replace")
        rules = [r["rule"] for it in history(root)["iterations"] for r in it["refusals"]]  # type: ignore[attr-defined]
        assert any("name resolution" in r or "unreachable" in r for r in rules), rules
    finally:
        victim.send_signal(signal.SIGTERM)
        try:
            victim.wait(60)
        except subprocess.TimeoutExpired:
            victim.kill()
        origin.close()
        for m in made:
            m.close()
        for path in secret_files:
            Path(path).unlink(missing_ok=True)
