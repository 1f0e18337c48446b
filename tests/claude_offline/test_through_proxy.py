"""The real Claude Code CLI reaches its scripted model ONLY through the egress proxy.

The CLI runs as the ``claude`` preset builds it with ralph-lsp's sandbox on (``sandboxed=True``),
in a network namespace of its own where only ``lo`` is up, behind the bridge: the host's
127.0.0.1, where the scripted model listens, is out of direct reach, so a session that succeeds
went through the proxy (which counts it). The project turns Claude Code's own sandbox on with
``failIfUnavailable``: the preset's stand-down is what lets the CLI start inside ours.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from ralph_lsp.agents import DEFAULT_AGENT_ARGS, build_invocation
from ralph_lsp.sandbox.domains import PRESET_DOMAINS, allowed_domains, no_proxy_for

from ..sandbox.proxied import ProxyThread, behind_proxy, netns_prefix
from .conftest import BuildEnv, Change, MakeChange
from .harness import CliRun, ralph_like_prompt
from .scripted_server import ScriptedModel

PROJECT_SANDBOX = {"sandbox": {"enabled": True, "failIfUnavailable": True}}


@pytest.fixture(scope="module")
def prefix() -> list[str]:
    found = netns_prefix()
    if found is None:
        pytest.skip("no network namespace here (neither bwrap nor unshare + ip)")
    return found


def _run(
    change: Change, env: dict[str, str], proxy: ProxyThread, prefix: list[str], no_proxy: str,
    *, sandboxed: bool = True,
) -> CliRun:  # fmt: skip
    (change.root / ".claude").mkdir(exist_ok=True)
    (change.root / ".claude" / "settings.json").write_text(json.dumps(PROJECT_SANDBOX))
    inv = build_invocation(
        "claude", None, [*DEFAULT_AGENT_ARGS, "--allowedTools", "Edit Write Read Bash"],
        ralph_like_prompt(change.folder), change.root / "prompt.md", cwd=change.root, env=env,
        sandboxed=sandboxed,
    )  # fmt: skip
    argv = behind_proxy(prefix, proxy.socket_path, inv.argv, no_proxy)
    proc = subprocess.run(
        argv, cwd=change.root, env={**env, **inv.env}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return CliRun(argv, proc.returncode, proc.stdout, proc.stderr, 0.0)


def test_claude_reaches_its_model_only_through_the_proxy(
    claude_env: BuildEnv, make_change: MakeChange, scripted_model: ScriptedModel,
    prefix: list[str],
) -> None:  # fmt: skip
    change = make_change(n_tasks=2)
    env = claude_env(scripted_model)
    allowed = allowed_domains("claude", env)
    entry = allowed[-1]
    assert entry == scripted_model.url.removeprefix("http://")
    with ProxyThread(allowed) as proxy:
        run = _run(change, env, proxy, prefix, no_proxy_for(allowed))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.result["is_error"] is False
    assert change.checked() == 1
    requests = scripted_model.message_requests()
    assert requests and all(r.stream is True for r in requests)
    assert proxy.counts.get(entry, 0) >= 1 and set(proxy.counts) == {entry}
    assert proxy.reported == []


def test_without_the_stand_down_a_projects_claude_sandbox_refuses_to_start_inside_ours(
    claude_env: BuildEnv, make_change: MakeChange, scripted_model: ScriptedModel,
    prefix: list[str],
) -> None:  # fmt: skip
    """Why the preset passes ``--settings {"sandbox": {"enabled": false}}`` when sandboxed."""
    change = make_change(n_tasks=1)
    env = claude_env(scripted_model)
    allowed = allowed_domains("claude", env)
    with ProxyThread(allowed) as proxy:
        run = _run(change, env, proxy, prefix, no_proxy_for(allowed), sandboxed=False)
    assert run.returncode != 0 and "sandbox required but unavailable" in run.stderr, run.stderr
    assert change.checked() == 0 and scripted_model.message_requests() == []


def test_a_model_host_not_allowed_fails_and_is_reported(
    claude_env: BuildEnv, make_change: MakeChange, scripted_model: ScriptedModel,
    prefix: list[str],
) -> None:  # fmt: skip
    change = make_change(n_tasks=1)
    env = claude_env(scripted_model)
    allowed = list(PRESET_DOMAINS["claude"])
    with ProxyThread(allowed) as proxy:
        run = _run(change, env, proxy, prefix, "")
    assert run.returncode != 0
    assert run.result["is_error"] is True, run.stdout[-2000:]
    assert change.checked() == 0 and scripted_model.message_requests() == []
    assert proxy.counts == {}
    port = int(scripted_model.url.rsplit(":", 1)[1])
    assert {(r.host, r.port) for r in proxy.reported} == {("127.0.0.1", port)}
