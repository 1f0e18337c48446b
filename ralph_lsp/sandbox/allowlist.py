"""The egress allowlist: which ``host:port`` a sandboxed agent may reach through the proxy.

Entry forms (case-insensitive, a trailing dot ignored):

=====================  =======================================================================
``api.example.com``    exactly that host, ports 443 and 80
``*.example.com``      any subdomain of ``example.com`` (not ``example.com`` itself), 443 and 80
``.example.com``       ``example.com`` and any subdomain of it, 443 and 80
``host:8443``          any of the forms above, on that one port only (not 443/80)
``127.0.0.1:8080``     an IP literal is allowed only when listed itself (``[::1]:8080`` for IPv6)
=====================  =======================================================================

A target written as an IP literal (``10.0.0.1``, ``[::1]``, and the forms ``inet_aton`` also
accepts such as ``127.1`` or ``2130706433``) never matches a name entry: only an IP entry equal
to it. Wildcards never match IP literals.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

#: The ports a bare entry (no ``:port``) allows.
DEFAULT_PORTS = frozenset({443, 80})
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


def ip_literal(host: str) -> str | None:
    """The canonical form of ``host`` when it is an IP address in any spelling a resolver would
    take (``127.1``, ``0x7f.0.0.1``, ``2130706433``, ``::1``), else None."""
    h = host.strip("[]")
    try:
        return str(ipaddress.ip_address(h))
    except ValueError:
        pass
    if h and all(c in "0123456789abcdefxABCDEFX." for c in h):
        try:
            return socket.inet_ntoa(socket.inet_aton(h))
        except OSError:
            return None
    return None


def normal_host(host: str) -> str | None:
    """``host`` lowercased without a trailing dot when it is a valid DNS name or IP literal
    (brackets kept off), else None."""
    h = host.strip().lower()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    ip = ip_literal(h)
    if ip is not None:
        return ip
    h = h.rstrip(".")
    if not h or len(h) > 253 or not all(_LABEL.match(label) for label in h.split(".")):
        return None
    return h


def split_host_port(target: str) -> tuple[str, int | None]:
    """``host:port`` / ``[v6]:port`` / ``host`` → (host, port or None); ``ValueError`` when
    the port is not a number in 1..65535."""
    t = target.strip()
    if t.startswith("["):
        end = t.find("]")
        if end < 0:
            raise ValueError(f"unclosed '[' in {target!r}")
        host, rest = t[1:end], t[end + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise ValueError(f"unexpected text after ']' in {target!r}")
        port_text = rest[1:]
    elif t.count(":") == 1:
        host, port_text = t.split(":")
    else:
        return t, None  # a name, or a bare IPv6 address
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad port {port_text!r} in {target!r}")
    return host, int(port_text)


@dataclass(frozen=True)
class Rule:
    """One parsed allowlist entry."""

    host: str  # the name (without ``*.`` or ``.``) or the canonical IP
    subdomains: bool  # matches names under ``host``
    itself: bool  # matches ``host`` itself
    port: int | None  # None: 443 and 80
    is_ip: bool

    def matches(self, host: str, port: int, is_ip: bool) -> bool:
        if port not in (DEFAULT_PORTS if self.port is None else {self.port}):
            return False
        if is_ip or self.is_ip:
            return is_ip and self.is_ip and host == self.host
        if self.itself and host == self.host:
            return True
        return self.subdomains and host.endswith("." + self.host)


def parse_rule(entry: str) -> Rule:
    """One entry (see the module docstring); ``ValueError`` naming the entry when malformed."""
    raw = entry.strip()
    if "/" in raw or "://" in raw:
        raise ValueError(f"allowlist entry {entry!r}: give a host name, not a URL")
    host, port = split_host_port(raw)
    subdomains, itself = False, True
    if host.startswith("*."):
        host, subdomains, itself = host[2:], True, False
    elif host.startswith("."):
        host, subdomains = host[1:], True
    name = normal_host(host)
    if name is None:
        raise ValueError(f"allowlist entry {entry!r}: {host!r} is not a host name or IP address")
    is_ip = ip_literal(name) is not None
    if is_ip and subdomains:
        raise ValueError(f"allowlist entry {entry!r}: a wildcard cannot apply to an IP address")
    return Rule(name, subdomains, itself, port, is_ip)


class Allowlist:
    """A set of :class:`Rule`; :meth:`check` says why a target is refused (None: allowed)."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.entries = tuple(e.strip() for e in entries if e.strip())
        self.rules = tuple(parse_rule(e) for e in self.entries)

    def check(self, host: str, port: int) -> str | None:
        """None when ``host:port`` may be reached, else the reason it may not."""
        name = normal_host(host)
        if name is None:
            return f"malformed host {host!r}"
        is_ip = ip_literal(name) is not None
        if any(r.matches(name, port, is_ip) for r in self.rules):
            return None
        if is_ip:
            return "IP address not in the allowlist"
        if port not in DEFAULT_PORTS and any(r.matches(name, 443, False) for r in self.rules):
            return f"port {port} not allowed for this host (only 443 and 80 unless listed)"
        return "host not in the allowlist"
