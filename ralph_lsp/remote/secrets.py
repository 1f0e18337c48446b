"""What must not travel in a Ray job's entrypoint (SPEC §9: no secret travels): the entrypoint
is shown in Ray's dashboard and job list, and kept in the job's metadata.

- :func:`public_url`: a git remote without its credentials (``https://user:token@host/r.git``
  → ``https://host/r.git``). The job clones and pushes with the worker's own git credential
  helper; the operator's side keeps the full URL for its own push and fetch only.
- :func:`redact`: the same for every URL in a text (git's messages, log lines).
- :func:`secret_kind`: whether a value looks like a secret, by its shape: a URL with a password
  (or any credentials over http), a well-known token (OpenAI/Anthropic ``sk-…``, GitHub
  ``ghp_…``/``gho_…``/``ghs_…``/``github_pat_…``, Slack ``xox…-``, AWS ``AKIA…``, a JWT), or a
  long high-entropy word (32 characters or more of letters, digits, ``_-+=``, mixing upper
  case, lower case and digits, at more than 4.5 bits per character). Paths, hex hashes, UUIDs,
  model names and prose do not match; a long random identifier in an argument would (name it in
  the worker's environment instead).
- :func:`refusal`: every place of a job's settings and arguments holding a secret, by name
  (``ralph.env`` keys such as ``API_KEY``) or by value, named without the value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s?#]+)@")
_TOKENS = (
    ("an API key (sk-…)", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
)
_WORD = re.compile(r"[A-Za-z0-9_+=-]{32,}")
MIN_ENTROPY = 4.5  # bits per character


def _strip(match: re.Match[str]) -> str:
    scheme, userinfo = match.group(1), match.group(2)
    if ":" in userinfo or scheme.lower() in ("http://", "https://", "ftp://", "ftps://"):
        return scheme  # a password, or a token given as the user name
    return match.group(0)  # ssh://git@host: a user name, no secret


def public_url(url: str) -> str:
    """``url`` without the credentials it carries."""
    return _USERINFO.sub(_strip, url)


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it removed."""
    return _USERINFO.sub(_strip, text)


def _entropy(word: str) -> float:
    counts = Counter(word)
    return -sum(n / len(word) * math.log2(n / len(word)) for n in counts.values())


def secret_kind(value: str) -> str | None:
    """What secret ``value`` holds (e.g. ``"a password in a URL"``), or None."""
    if public_url(value) != value:
        return "credentials in a URL"
    for kind, pattern in _TOKENS:
        if pattern.search(value):
            return kind
    for word in _WORD.findall(value):
        mixed = re.search(r"[a-z]", word) and re.search(r"[A-Z]", word) and re.search(r"\d", word)
        if mixed and _entropy(word) > MIN_ENTROPY:
            return "a long random-looking value"
    return None


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


def found(sent: Mapping[str, Any], args: Mapping[str, Any]) -> list[str]:
    """Where ``sent`` (the job's ``ralph`` settings) and ``args`` (guidance, story, scope) hold
    a secret: ``ralph.env.API_KEY (its name)``, ``ralph.agentArgs[2] (a GitHub token)``…"""
    out = [
        f"ralph.env.{name} (its name)"
        for name in dict(sent.get("env") or {})
        if SECRET_NAME.search(str(name))
    ]
    for where, text in [*_strings(sent, "ralph"), *_strings(dict(args), "the run's")]:
        kind = secret_kind(text)
        if kind is not None and f"{where} (its name)" not in out:
            out.append(f"{where} ({kind})")
    return out


def refusal(sent: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    """Why the job may not be submitted (naming where, never the value), or None."""
    where = found(sent, args)
    if not where:
        return None
    return (
        f"{', '.join(where)} would travel in the Ray job's entrypoint, which the dashboard and"
        " the job list show, so no secret may: set it in the worker node's own environment"
        " (and give git's credentials to the worker's git credential helper)"
    )
