"""The real Codex and Gemini CLIs reach their scripted servers ONLY through the egress proxy.

Each CLI runs as the preset builds it with ralph-lsp's sandbox on (``sandboxed=True``: Codex
without its own sandbox, Gemini told not to start one), in a network namespace of its own where
only ``lo`` is up, behind the bridge: the host's 127.0.0.1, where the scripted server listens, is
out of direct reach, so a session that succeeds went through the proxy (which counts it). With
the server's address left out of the allowlist, the session fails and the proxy reports it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralph_lsp.agents import DEFAULT_AGENT_ARGS, build_invocation
from ralph_lsp.sandbox.domains import PRESET_DOMAINS, allowed_domains, no_proxy_for

from ..sandbox.proxied import ProxyThread, behind_proxy, netns_prefix
from .harness import TASKS_PATH, Project, agent_env, make_project, normal_steps
from .scripted_servers import ScriptedServer, Step

AGENTS = ("codex", "gemini")
PROMPT = f"Do the unchecked tasks in {TASKS_PATH}, then tick them."


@pytest.fixture(scope="module")
def prefix() -> list[str]:
    found = netns_prefix()
    if found is None:
        pytest.skip("no network namespace here (neither bwrap nor unshare + ip)")
    return found


def _run_proxied(
    agent: str, bin_path: Path, url: str, project: Project, base: Path, proxy: ProxyThread,
    allowed: list[str], prefix: list[str], no_proxy: str | None = None, *, sandboxed: bool = True,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {
        **agent_env(agent, url, base),
        "PATH": os.pathsep.join([str(bin_path.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
    }
    inv = build_invocation(
        agent, None, list(DEFAULT_AGENT_ARGS), PROMPT, base / "prompt.md",
        cwd=project.root, allowed_tools=["Bash(make test:*)"], env=env, sandboxed=sandboxed,
    )  # fmt: skip
    for path, text in inv.files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    if no_proxy is None:
        no_proxy = no_proxy_for(allowed)
    argv = behind_proxy(prefix, proxy.socket_path, inv.argv, no_proxy)
    return subprocess.run(
        argv, cwd=project.root, env={**env, **inv.env}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("agent", AGENTS)
def test_the_real_cli_reaches_its_model_only_through_the_proxy(
    agent: str, agent_clis: dict[str, Path], base: Path, prefix: list[str]
) -> None:
    project = make_project(base)
    with ScriptedServer(agent, normal_steps(agent)) as server:
        var = "OPENAI_BASE_URL" if agent == "codex" else "GOOGLE_GEMINI_BASE_URL"
        allowed = allowed_domains(agent, {var: server.url})
        with ProxyThread(allowed) as proxy:
            proc = _run_proxied(
                agent, agent_clis[agent], server.url, project, base, proxy, allowed, prefix
            )
        requests = len(server.requests)
    out = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, out
    assert project.checked() == 2, out
    assert 'version = "0.2.0"' in (project.root / "pyproject.toml").read_text()
    entry = f"127.0.0.1:{server.port}"
    assert allowed[-1] == entry
    # Every model request came through the proxy (one connection may carry several).
    assert 1 <= proxy.counts.get(entry, 0) <= requests, (proxy.counts, requests)
    assert set(proxy.counts) == {entry} and proxy.reported == [], proxy.reported


@pytest.mark.parametrize("agent", AGENTS)
def test_a_model_host_not_allowed_fails_the_session_and_is_reported(
    agent: str, agent_clis: dict[str, Path], base: Path, prefix: list[str]
) -> None:
    """The preset's own hosts only: the request to the scripted server (sent to the proxy, as
    NO_PROXY is empty) is refused."""
    project = make_project(base)
    allowed = list(PRESET_DOMAINS[agent])
    with ScriptedServer(agent, normal_steps(agent)) as server, ProxyThread(allowed) as proxy:
        proc = _run_proxied(
            agent, agent_clis[agent], server.url, project, base, proxy, allowed, prefix, ""
        )
        assert server.requests == []
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert project.checked() == 0
    assert proxy.counts == {}
    refused = {(r.host, r.port, r.reason) for r in proxy.reported}
    assert refused == {("127.0.0.1", server.port, "IP address not in the allowlist")}, refused


# A command that needs a loopback of its own, as a project's test suite with a local server does.
LOOPBACK = (
    f"{sys.executable} -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); "
    "s.listen(); socket.create_connection(s.getsockname()); "
    "open('net.txt', 'w').write('connected')\" || echo blocked > net.txt"
)


@pytest.mark.parametrize("sandboxed", [True, False])
def test_codex_commands_keep_the_sandboxes_loopback_only_when_its_own_sandbox_stands_down(
    sandboxed: bool, agent_clis: dict[str, Path], base: Path, prefix: list[str]
) -> None:
    """Why the sandboxed preset runs codex with ``danger-full-access``: nested inside ours, its
    ``workspace-write`` sandbox takes the network from its commands, our loopback included."""
    project = make_project(base)
    steps = [Step("shell", command=LOOPBACK), Step("text", text="Done.")]
    with ScriptedServer("codex", steps) as server:
        allowed = allowed_domains("codex", {"OPENAI_BASE_URL": server.url})
        with ProxyThread(allowed) as proxy:
            proc = _run_proxied(
                "codex", agent_clis["codex"], server.url, project, base, proxy, allowed, prefix,
                sandboxed=sandboxed,
            )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = (project.root / "net.txt").read_text().strip()
    assert got == ("connected" if sandboxed else "blocked"), proc.stdout[-3000:]


@pytest.mark.parametrize("sandboxed", [True, False])
def test_a_projects_gemini_sandbox_stands_down_inside_ours(
    sandboxed: bool, agent_clis: dict[str, Path], base: Path, prefix: list[str]
) -> None:
    """A project's ``.gemini/settings.json`` asks for Gemini's own sandbox (docker): inside ours
    there is none to start; the sandboxed preset's ``GEMINI_SANDBOX=false`` lets it run."""
    project = make_project(base)
    (project.root / ".gemini").mkdir()
    (project.root / ".gemini" / "settings.json").write_text('{"tools": {"sandbox": "docker"}}')
    with ScriptedServer("gemini", normal_steps("gemini")) as server:
        allowed = allowed_domains("gemini", {"GOOGLE_GEMINI_BASE_URL": server.url})
        with ProxyThread(allowed) as proxy:
            proc = _run_proxied(
                "gemini", agent_clis["gemini"], server.url, project, base, proxy, allowed,
                prefix, sandboxed=sandboxed,
            )  # fmt: skip
    out = proc.stdout[-3000:] + proc.stderr[-3000:]
    if sandboxed:
        assert proc.returncode == 0 and project.checked() == 2, out
    else:
        assert proc.returncode != 0 and project.checked() == 0, out
        assert "docker" in proc.stderr.lower(), out
