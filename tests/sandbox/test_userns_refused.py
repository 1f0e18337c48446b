"""Where user namespaces are refused, a sandboxed run does not start (SPEC §10 "Fail closed"):
the message names the cause and the fix, and no agent is spawned. Simulated without touching
the machine: the product runs in a user namespace of its own whose ``max_user_namespaces`` is 0
(that limit holds for the namespace and its children only)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.sandbox.conftest import Tools, User, _apt, chown_tree, setpriv, user_env
from tests.sandbox.test_works_inside import one_change, scratch  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow


def _mapping_ready() -> None:
    """``unshare --map-users`` needs newuidmap (Debian's uidmap) and root's subordinate ids."""
    if shutil.which("newuidmap") is None:
        _apt("uidmap")
    for name in ("/etc/subuid", "/etc/subgid"):
        path = Path(name)
        lines = path.read_text().splitlines() if path.exists() else []
        if "root:0:65536" not in lines:
            path.write_text("\n".join([*lines, "root:0:65536"]) + "\n")


def without_user_namespaces(command: list[str]) -> list[str]:
    inner = "echo 0 > /proc/sys/user/max_user_namespaces && exec " + shlex.join(command)
    unshare = ["unshare", "--user", "--map-users=0,0,65536", "--map-groups=0,0,65536", "--"]
    return [*unshare, "sh", "-c", inner]


def test_the_run_is_refused_naming_the_fix_and_no_agent_starts(
    sandbox_user: User,
    user_tools: Tools,
    scratch: Path,  # noqa: F811
) -> None:
    _mapping_ready()
    root = one_change(scratch, sandbox_user)
    env = user_env(sandbox_user, user_tools)
    argv = [user_tools.ralph, "run", "c", "--root", str(root), "--verify", "true"]
    argv += ["--agent-command", str(user_tools.scripts / "check_all.py")]
    command = [*setpriv(sandbox_user), "env", "-i", *[f"{k}={v}" for k, v in env.items()], *argv]
    done = subprocess.run(
        without_user_namespaces(command), capture_output=True, text=True, timeout=120, env=env
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "the sandbox cannot start" in output, output
    assert "max_user_namespaces" in output and "sysctl" in output, output
    assert 'ralph.sandbox: "off"' in output and "--sandbox off" in output, output
    assert not (root / "agent-ran").exists()
    assert "[ ] 1.1" in (root / "openspec/changes/c/tasks.md").read_text()
    # the queue form is refused once, before any of its changes starts
    second = root / "openspec/changes/d"
    second.mkdir()
    (second / "tasks.md").write_text("- [ ] 1.1 More\n")
    chown_tree(root, sandbox_user)
    queue = [*command[: command.index("c")], "c", "d", *command[command.index("c") + 1 :]]
    done = subprocess.run(
        without_user_namespaces(queue), capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode != 0 and "the sandbox cannot start" in done.stderr + done.stdout
    assert not (root / "agent-ran").exists() and not list((root / ".ralph").rglob("record.json"))
    # the same run with the sandbox stated off starts, and says so
    off = subprocess.run(
        without_user_namespaces([*command, "--sandbox", "off"]),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert off.returncode == 0, off.stdout + off.stderr
    assert 'sandbox: off (ralph.sandbox is "off")' in off.stdout
    assert (root / "agent-ran").exists()
