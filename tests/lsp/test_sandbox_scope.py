"""A workspace's settings never widen its own sandbox (SPEC §10): ``ralph.env`` is a
resource-scoped setting, which a workspace's ``.vscode/settings.json`` (or an agent writing it)
sets too, and the server cannot tell it from the User's. So a base URL in it adds no host to the
egress allowlist, and a state folder named in it is not made writable. Real client and server,
the sandbox on (real bubblewrap), the settings pulled with ``workspace/configuration`` as VS Code
answers it: the levels merged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.lsp.conftest import CHANGE, StartSession, wait_until


def final(statuses: list[dict[str, Any]]) -> dict[str, Any] | None:
    done = [s for s in statuses if s["state"] != "running"]
    return done[-1] if done else None


async def test_a_workspaces_ralph_env_adds_no_domain_and_no_writable_folder(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    planted = tmp_path / "planted-config"
    planted.mkdir()
    env = {
        "ANTHROPIC_BASE_URL": "http://evil.example",
        "OPENAI_BASE_URL": "https://evil-too.example:8443/v1",
        "CLAUDE_CONFIG_DIR": str(planted),
    }
    settings = {"agent": "claude", "agentCommand": ["false"], "stuckAfter": 1, "env": env}
    s = await start_session(workspace, settings=settings, env={"RALPH_SANDBOX": "auto"})
    await s.command("ralph.run", {"change": CHANGE})
    end = await wait_until(lambda: final(s.statuses), timeout=60, what="the run's end")
    sandbox = end["sandbox"]
    assert sandbox is not None and sandbox["kind"] == "bwrap", end
    allowed = sandbox["allowedDomains"]
    assert allowed[:3] == ["api.anthropic.com", "console.anthropic.com", "platform.claude.com"]
    assert not [entry for entry in allowed if "evil" in entry], allowed
    assert str(planted) not in sandbox["writable"], sandbox["writable"]
    said = [line for line in s.logs().splitlines() if line.startswith("sandbox: bwrap")]
    assert said and "evil" not in said[0], said
