"""What a preset changes when ralph-lsp's own sandbox is on (SPEC §10, issue 36 item 4).

Our sandbox wraps the agent's whole process tree and the project's checks, and its network goes
through the egress proxy; the agents' own sandboxes are told to stand down inside it rather than
nest (a second user namespace, seccomp filter and proxy inside ours add failure modes and
nothing ours does not already enforce):

- ``codex``: ``--sandbox danger-full-access`` instead of ``workspace-write``. Its
  ``workspace-write`` would also cut its commands off from the network (even the loopback of
  our sandbox, where a project's test server runs). And ``--disable plugins -c
  analytics.enabled=false``: codex 0.169 otherwise looks up github.com, api.github.com and
  ab.chatgpt.com on every spawn, three refusals in the history each time (seen through the
  proxy).
- ``claude``: ``--settings {"sandbox": {"enabled": false}}``, so a project's
  ``.claude/settings.json`` that turns Claude Code's sandbox on does not start a second
  bubblewrap, socat and proxy inside ours (command-line settings rank above project settings).
- ``gemini``: ``GEMINI_SANDBOX=false`` in its environment (a project's ``tools.sandbox`` would
  otherwise start docker, podman or sandbox-exec).

The proxy variables themselves (``HTTPS_PROXY``…) are set by the bridge that runs the agent
(``ralph_lsp/sandbox/bridge.py``), not here. Builds argv and env only; starts no process.
"""

from __future__ import annotations

import json

CODEX_OWN_SANDBOX = ("--sandbox", "workspace-write")
CODEX_STAND_DOWN = ("--sandbox", "danger-full-access")
CODEX_QUIET = ("--disable", "plugins", "-c", "analytics.enabled=false")
CLAUDE_STAND_DOWN = ("--settings", json.dumps({"sandbox": {"enabled": False}}))
GEMINI_STAND_DOWN = {"GEMINI_SANDBOX": "false"}


def stand_down(agent: str, template: list[str]) -> tuple[list[str], dict[str, str]]:
    """``template`` (a preset's argv template) and the extra environment for ``agent`` when our
    sandbox is on; other agents (``demo``, ``custom``) are unchanged."""
    if agent == "codex":
        out = list(template)
        for i in range(len(out) - 1):
            if (out[i], out[i + 1]) == CODEX_OWN_SANDBOX:
                out[i + 1] = CODEX_STAND_DOWN[1]
        return [*out, *CODEX_QUIET], {}
    if agent == "claude":
        return _claude_stand_down(list(template)), {}
    if agent == "gemini":
        return list(template), dict(GEMINI_STAND_DOWN)
    return list(template), {}


def _claude_stand_down(out: list[str]) -> list[str]:
    """One ``--settings`` for Claude Code: the CLI takes only the last one, so a second would
    drop the first (the user's ``apiKeyHelper`` passed on under isolation: "Not logged in").
    Ours is merged into the last JSON one; a settings *file* the user names is left to win."""
    flags = [i for i in range(len(out) - 1) if out[i] == "--settings"]
    if not flags:
        return [*out, *CLAUDE_STAND_DOWN]
    i = flags[-1]
    try:
        current = json.loads(out[i + 1])
    except ValueError:
        current = None
    if not isinstance(current, dict):
        return out
    own = current.get("sandbox")
    sandbox = own if isinstance(own, dict) else {}
    out[i + 1] = json.dumps({**current, "sandbox": {**sandbox, "enabled": False}})
    return out
