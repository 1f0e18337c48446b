"""ralph.agentUserConfig with the real Codex and Gemini CLIs, offline: each preset as built by
`build_invocation` (its argv and environment) runs one turn against the scripted server, with a
user home built by the test.

- a heavy home (user MCP servers, skills, Codex's developer instructions, memories and profile,
  Gemini's extensions) sends within 5 % of an empty home's bytes, and none of its parts reaches a
  request; `inherit` brings them back;
- the login keeps working (Codex: the model provider of config.toml and its key variable, or
  auth.json; Gemini: the API key with the auth type of settings.json);
- the project's own AGENTS.md / GEMINI.md still reaches the request;
- what cannot be isolated (the global AGENTS.md / GEMINI.md next to the login) is said.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ralph_lsp.agents import build_invocation

from ..claude_offline.heavy_home import MCP_SERVER
from .harness import make_project
from .scripted_servers import ScriptedServer, Step

CODEX_MARKERS = ("USER-DEV-INSTR", "USER-SKILL", "USER-AGENTS-SKILL", "mcp__user1", "user1__tool")
GEMINI_MARKERS = ("USER-EXT-CONTEXT", "USER-SKILL", "USER-AGENTS-SKILL")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _rules(title: str, lines: int) -> str:
    return f"# {title}\n\n" + "".join(
        f"- Rule {i}: prefer clear names and small functions ({title}).\n" for i in range(lines)
    )


def _skills(home: Path, folder: Path) -> None:
    for name in ("review", "deploy", "triage"):
        _write(
            folder / name / "SKILL.md",
            f"---\nname: {name}\ndescription: USER-SKILL {name}, for every project.\n---\n\n"
            + _rules(name, 10),
        )
        _write(
            home / ".agents" / "skills" / f"{name}2" / "SKILL.md",
            f"---\nname: {name}2\ndescription: USER-AGENTS-SKILL {name}.\n---\n\n"
            + _rules(name, 10),
        )


def codex_home(home: Path, url: str, *, heavy: bool, global_md: bool = False) -> dict[str, str]:
    """A Codex home logged in by a model provider of config.toml whose key is in the env."""
    codex = home / ".codex"
    config = 'model = "gpt-5.5"\nmodel_provider = "mock"\n\n'
    if heavy:
        config = f'developer_instructions = "USER-DEV-INSTR {"be careful. " * 50}"\n' + config
        config += '[profiles.fast]\nmodel = "gpt-5.4"\n\n'
        server = home / "mcp_server.py"
        _write(server, MCP_SERVER)
        for i in (1, 2, 3):
            config += f'[mcp_servers.user{i}]\ncommand = "{sys.executable}"\n'
            config += f'args = ["{server}", "user{i}"]\n\n'
        _skills(home, codex / "skills")
        _write(codex / "memories" / "memory_summary.md", "USER-MEMORY\n" + _rules("learned", 15))
    config += "[analytics]\nenabled = false\n\n[features]\nplugins = false\n"
    config += "memories = true\n" if heavy else ""
    config += (
        f'\n[model_providers.mock]\nname = "mock"\nbase_url = "{url}"\nwire_api = "responses"\n'
        'env_key = "MOCK_API_KEY"\nsupports_websockets = false\nrequest_max_retries = 0\n'
        "stream_max_retries = 0\n"
    )
    _write(codex / "config.toml", config)
    if global_md:
        _write(codex / "AGENTS.md", "USER-GLOBAL-AGENTS-MD\n" + _rules("global", 120))
    return {"CODEX_HOME": str(codex), "MOCK_API_KEY": "sk-offline-test"}


def gemini_home(home: Path, *, heavy: bool, global_md: bool = False) -> dict[str, str]:
    """A Gemini home logged in by an API key, with the auth type in settings.json."""
    gemini = home / ".gemini"
    settings: dict[str, object] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "model": {"name": "gemini-2.5-flash"},
    }
    if heavy:
        server = home / "mcp_server.py"
        _write(server, MCP_SERVER)
        settings["mcpServers"] = {
            f"user{i}": {"command": sys.executable, "args": [str(server), f"user{i}"]}
            for i in (1, 2, 3)
        }
        ext = gemini / "extensions" / "ext1"
        manifest = {"name": "ext1", "version": "1.0.0", "contextFileName": "GEMINI.md"}
        _write(ext / "gemini-extension.json", json.dumps(manifest))
        _write(ext / "GEMINI.md", "USER-EXT-CONTEXT\n" + _rules("extension", 60))
        _skills(home, gemini / "skills")
    _write(gemini / "settings.json", json.dumps(settings))
    if global_md:
        _write(gemini / "GEMINI.md", "USER-GLOBAL-GEMINI-MD\n" + _rules("global", 120))
    return {"GEMINI_API_KEY": "offline-test-key", "GEMINI_CLI_TRUST_WORKSPACE": "true"}


@dataclass
class Spawn:
    returncode: int
    output: str
    bytes: int
    texts: str
    notes: list[str]


def spawn(
    agent: str,
    clis: dict[str, Path],
    base: Path,
    name: str,
    *,
    mode: str = "isolate",
    heavy: bool = False,
    global_md: bool = False,
    project_md: bool = False,
) -> Spawn:
    """One iteration of the preset (as the engine builds it) with a fresh home and server."""
    folder = base / name
    folder.mkdir()
    project = make_project(folder)
    if project_md:
        _write(project.root / ("AGENTS.md" if agent == "codex" else "GEMINI.md"), "PROJECT-MD\n")
    home = folder / "home"
    with ScriptedServer(agent, [Step("text", text="Done.")]) as server:
        env = {
            "PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
            "TMPDIR": str(folder), "GEMINI_CLI_NO_RELAUNCH": "true",
        }  # fmt: skip
        if agent == "codex":
            env.update(codex_home(home, server.url, heavy=heavy, global_md=global_md))
        else:
            env.update(gemini_home(home, heavy=heavy, global_md=global_md))
            env["GOOGLE_GEMINI_BASE_URL"] = server.url
        inv = build_invocation(
            agent, None, [], "Say done.", folder / "prompt.md",
            cwd=project.root, agent_user_config=mode, env=env,
        )  # fmt: skip
        for path, text in inv.files.items():
            _write(Path(path), text)
        proc = subprocess.run(
            [str(clis[agent]), *inv.argv[1:]], cwd=project.root, env={**env, **inv.env},
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip
        bodies = [json.dumps(r) for r in server.requests]
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    return Spawn(proc.returncode, output, sum(map(len, bodies)), "\n".join(bodies), inv.notes)


def _ok(run: Spawn) -> None:
    assert run.returncode == 0 and run.bytes > 0, run.output


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_a_heavy_home_sends_no_more_than_an_empty_one(
    agent: str,
    agent_clis: dict[str, Path],
    base: Path,
) -> None:
    markers = CODEX_MARKERS if agent == "codex" else GEMINI_MARKERS
    empty = spawn(agent, agent_clis, base, "empty")
    _ok(empty)
    heavy = spawn(agent, agent_clis, base, "heavy", heavy=True)
    _ok(heavy)  # the login still works: no 401, a request was answered
    ratio = heavy.bytes / empty.bytes
    assert ratio <= 1.05, f"heavy home {heavy.bytes} B vs empty {empty.bytes} B: {ratio:.3f}"
    assert [m for m in markers if m in heavy.texts] == []
    assert "USER-MEMORY" not in heavy.texts
    assert heavy.notes and "agentUserConfig isolate" in heavy.notes[0], heavy.notes

    # inherit brings it back
    inherit = spawn(agent, agent_clis, base, "inherit", heavy=True, mode="inherit")
    _ok(inherit)
    assert inherit.bytes / empty.bytes > 1.1
    assert [m for m in markers if m in inherit.texts] != []


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_the_projects_file_applies_and_the_global_one_is_named(
    agent: str,
    agent_clis: dict[str, Path],
    base: Path,
) -> None:
    """The project's own AGENTS.md / GEMINI.md reaches the request. The user's global one still
    does too (each CLI reads it from the home that holds the login: no switch drops it), and the
    run's first lines say so."""
    run = spawn(agent, agent_clis, base, "p", heavy=True, global_md=True, project_md=True)
    _ok(run)
    assert "PROJECT-MD" in run.texts
    name = "AGENTS.md" if agent == "codex" else "GEMINI.md"
    assert f"USER-GLOBAL-{name.replace('.', '-').upper()}" in run.texts
    assert any(f"{name} is still used" in n for n in run.notes), run.notes
