"""The egress allowlist of a run: what its agent may reach through the proxy (SPEC §10).

Three sources, in this order (duplicates dropped):

1. the preset's own list, :data:`PRESET_DOMAINS` (a ``custom`` agent or the ``demo`` preset has
   none: a custom agent names its hosts in ``ralph.sandbox.allowedDomains``);
2. the host (and port, when not 443/80) of a configured base URL: ``ANTHROPIC_BASE_URL``,
   ``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL`` (and ``GOOGLE_VERTEX_BASE_URL``), read from
   the environment of the server or the CLI: the person's own, never a workspace's;
3. ``ralph.sandbox.allowedDomains`` (entry forms: :mod:`ralph_lsp.sandbox.allowlist`), which
   only the User settings or the CLI's flags set. A base URL in the User settings' ``ralph.env``
   or a ``--env`` flag joins the list here, folded in by the client or the CLI
   (:func:`base_url_entries`).

``ralph.env`` itself never widens the list: a workspace's settings (or an agent writing
``.vscode/settings.json``) set it too, and the server cannot tell the levels apart. A run whose
workspace points a base URL elsewhere has its connections there refused, and said so.

Telemetry and error-report hosts (Statsig, Sentry, Datadog, ``ab.chatgpt.com``,
``play.googleapis.com``) are left out: each CLI runs headless without them, and the presets turn
that traffic off where a switch exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from ralph_lsp.sandbox.allowlist import DEFAULT_PORTS, ip_literal, parse_rule
from ralph_lsp.sandbox.bridge import DEFAULT_NO_PROXY

#: Per preset: the model API, then what its login needs to refresh a token.
PRESET_DOMAINS: dict[str, tuple[str, ...]] = {
    # The Messages API; OAuth (a Claude subscription login) refreshes at console.anthropic.com
    # and, in newer releases, platform.claude.com.
    "claude": ("api.anthropic.com", "console.anthropic.com", "platform.claude.com"),
    # The API key route (api.openai.com), the ChatGPT login route (chatgpt.com/backend-api) and
    # its token refresh (auth.openai.com).
    "codex": ("api.openai.com", "chatgpt.com", "auth.openai.com"),
    # The Gemini API key route; a Google login goes to Code Assist (cloudcode-pa) and refreshes
    # its token at oauth2.googleapis.com.
    "gemini": (
        "generativelanguage.googleapis.com",
        "cloudcode-pa.googleapis.com",
        "oauth2.googleapis.com",
    ),
    "demo": (),
    "custom": (),
}

#: The base-URL variables each preset's CLI honours (``custom``: all of them).
BASE_URL_VARS: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_BASE_URL",),
    "codex": ("OPENAI_BASE_URL",),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"),
    "demo": (),
    "custom": (
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_VERTEX_BASE_URL",
    ),
}


def base_url_entry(url: str) -> str | None:
    """The allowlist entry for a base URL (``https://gw.example.com/v1`` → ``gw.example.com``,
    ``http://127.0.0.1:8080`` → ``127.0.0.1:8080``), or None when it names no host."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host or parts.scheme not in ("http", "https"):
        return None
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None or port in DEFAULT_PORTS else f"{shown}:{port}"


def base_url_entries(agent: str, env: Mapping[str, str]) -> list[str]:
    """The allowlist entries of the base URLs that ``agent``'s CLI honours, set in ``env``."""
    found = []
    for var in BASE_URL_VARS.get(agent, BASE_URL_VARS["custom"]):
        entry = base_url_entry(env.get(var, ""))
        if entry is not None:
            found.append(entry)
    return found


def allowed_domains(agent: str, env: Mapping[str, str], extra: Iterable[str] = ()) -> list[str]:
    """The allowlist for ``agent``: its preset's hosts, the host of each base URL set in ``env``
    (the environment of the server or the CLI, never ``ralph.env``), and ``extra``
    (``ralph.sandbox.allowedDomains``). ``ValueError`` names a malformed ``extra`` entry."""
    found: list[str] = [*PRESET_DOMAINS.get(agent, ()), *base_url_entries(agent, env)]
    for entry in extra:
        parse_rule(entry)  # a clear error for a bad one, before any run starts
        found.append(entry.strip())
    return list(dict.fromkeys(found))


def no_proxy_for(allowed: Iterable[str]) -> str:
    """The agent's NO_PROXY: its own loopback stays direct (a server it starts itself), unless
    an allowed entry is a loopback address or ``localhost`` (a model server on the host's
    loopback), which must then go through the proxy: empty."""
    for entry in allowed:
        host = parse_rule(entry).host
        ip = ip_literal(host)
        if host == "localhost" or (ip is not None and (ip.startswith("127.") or ip == "::1")):
            return ""
    return DEFAULT_NO_PROXY
