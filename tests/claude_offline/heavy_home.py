"""A realistic, heavy Claude Code user home, built from scratch (shared by the tests and the bench).

What a long-time user keeps in ``~/.claude`` and ``~/.claude.json``, each part marked so a test
can see whether it reached a request:

- ``CLAUDE.md`` of about 20 KB (marker ``USER-GLOBAL-CLAUDE-MD``);
- user skills, agents and commands; rules; an output style chosen in ``settings.json``;
- user hooks (``SessionStart`` adding context ``USER-HOOK-CONTEXT``, and writing a file each time
  it runs, so a test can count its runs);
- three user-scope MCP servers of ten tools each (a stdio server in Python, stdlib only);
- auto memory for the project (``MEMORY.md``, marker ``USER-AUTO-MEMORY``).

Not built: an installed plugin (its marketplace layout is version-specific); its parts (skills, a
SessionStart hook) are here as user-level skills and hooks, which load the same way.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

USER_MARKERS = ("USER-GLOBAL-CLAUDE-MD", "USER-HOOK-CONTEXT", "USER-AUTO-MEMORY", "mcp__user1__")

MCP_SERVER = r"""
import json, sys
name = sys.argv[1]
tools = [
    {
        "name": f"tool_{i}",
        "description": f"Tool {i} of {name}: " + "does a thing for the user's workflow. " * 8,
        "inputSchema": {
            "type": "object",
            "properties": {
                f"arg_{j}": {"type": "string", "description": "an argument " * 6}
                for j in range(6)
            },
            "required": ["arg_0"],
        },
    }
    for i in range(10)
]
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": msg.get("params", {}).get("protocolVersion", "2024-11-05"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": name, "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": tools}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def dashed(path: Path) -> str:
    """How Claude Code names a project folder under ``~/.claude/projects/``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _markdown(title: str, lines: int) -> str:
    body = "".join(
        f"- Rule {i}: when working on code, prefer clear names, small functions and tests"
        f" that fail first; keep commits small and messages that explain why ({title}).\n"
        for i in range(lines)
    )
    return f"# {title}\n\n{body}"


def build_heavy_home(home: Path, project: Path) -> Path:
    """Fill ``home`` with a heavy Claude Code user config; returns ``home / ".claude"``."""
    claude = home / ".claude"
    _write(claude / "CLAUDE.md", "USER-GLOBAL-CLAUDE-MD\n" + _markdown("My global rules", 120))
    for name in ("review", "deploy", "triage"):
        _write(
            claude / "skills" / name / "SKILL.md",
            f"---\nname: {name}\ndescription: The user's own {name} skill, for every project"
            f" they work on.\n---\n\n" + _markdown(name, 10),
        )
        _write(
            claude / "agents" / f"{name}-agent.md",
            f"---\nname: {name}-agent\ndescription: A subagent for {name} work.\n---\n\n"
            + _markdown(name, 5),
        )
        _write(claude / "commands" / f"{name}.md", f"Run the {name} routine.\n")
    _write(claude / "rules" / "style.md", _markdown("Style rules", 12))
    _write(
        claude / "output-styles" / "terse.md",
        "---\nname: Terse\ndescription: Short answers\n---\n\n" + _markdown("Terse", 12),
    )
    ran = home / "hook-runs"
    hook_output = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": "USER-HOOK-CONTEXT " + "remember the house style. " * 40,
            }
        }
    )
    hook = f"echo ran >> '{ran}'; echo '{hook_output}'"
    settings = {
        "outputStyle": "Terse",
        "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": hook}]}]},
        "env": {"USER_SETTING_NOT_FOR_LOGIN": "1"},
    }
    _write(claude / "settings.json", json.dumps(settings, indent=2))
    server = claude / "mcp_server.py"
    _write(server, MCP_SERVER)
    servers = {
        f"user{i}": {"type": "stdio", "command": sys.executable, "args": [str(server), f"user{i}"]}
        for i in (1, 2, 3)
    }
    _write(home / ".claude.json", json.dumps({"mcpServers": servers}, indent=2))
    _write(
        claude / "projects" / dashed(project) / "memory" / "MEMORY.md",
        "USER-AUTO-MEMORY\n" + _markdown("What I learned", 15),
    )
    return claude


def hook_runs(home: Path) -> int:
    """How many times the heavy home's SessionStart hook ran."""
    try:
        return len((home / "hook-runs").read_text().splitlines())
    except OSError:
        return 0
