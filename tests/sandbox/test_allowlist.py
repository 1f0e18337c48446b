"""The allowlist's entry forms, and a run's allowlist (per preset, base URLs, allowedDomains)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ralph_lsp.sandbox.allowlist import Allowlist
from ralph_lsp.sandbox.domains import allowed_domains, base_url_entry, no_proxy_for
from tests.conftest import EXAMPLE


@pytest.mark.parametrize(
    ("entry", "target", "allowed"),
    [
        ("api.anthropic.com", "api.anthropic.com:443", True),
        ("api.anthropic.com", "API.Anthropic.com.:80", True),
        ("api.anthropic.com", "evil.api.anthropic.com:443", False),
        ("api.anthropic.com", "api.anthropic.com.evil.example:443", False),
        ("api.anthropic.com", "api.anthropic.com:8443", False),
        ("*.googleapis.com", "oauth2.googleapis.com:443", True),
        ("*.googleapis.com", "googleapis.com:443", False),
        ("*.googleapis.com", "xgoogleapis.com:443", False),
        (".googleapis.com", "googleapis.com:443", True),
        (".googleapis.com", "a.b.googleapis.com:443", True),
        ("gw.example:8443", "gw.example:8443", True),
        ("gw.example:8443", "gw.example:443", False),
        ("127.0.0.1:8080", "127.0.0.1:8080", True),
        ("127.0.0.1:8080", "2130706433:8080", True),
        ("127.0.0.1:8080", "localhost:8080", False),
        ("localhost:8080", "127.0.0.1:8080", False),
        ("[::1]:8080", "[0:0::1]:8080", True),
        ("*.example.com", "10.0.0.1:443", False),
    ],
)
def test_entry_forms(entry: str, target: str, allowed: bool) -> None:
    host, _, port = target.rpartition(":")
    assert (Allowlist([entry]).check(host, int(port)) is None) is allowed


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("https://api.example.com/v1", "not a URL"),
        ("bad host", "not a host name"),
        ("*.10.0.0.1", "wildcard"),
        ("host:99999", "bad port"),
        ("host:http", "bad port"),
    ],
)
def test_a_malformed_entry_is_a_clear_error(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        Allowlist([entry])
    assert repr(entry) in str(info.value) or message == "bad port"


def test_a_run_allows_its_preset_its_base_urls_and_the_extra_domains() -> None:
    env = {"ANTHROPIC_BASE_URL": "https://gw.example.com/anthropic", "OPENAI_BASE_URL": "x"}
    got = allowed_domains("claude", env, ["*.corp.example", "api.anthropic.com"])
    assert got == [
        "api.anthropic.com",
        "console.anthropic.com",
        "platform.claude.com",
        "gw.example.com",
        "*.corp.example",
    ]
    # only the preset's own variable counts
    got = allowed_domains(
        "codex",
        {"OPENAI_BASE_URL": "http://127.0.0.1:8123/v1", "ANTHROPIC_BASE_URL": "https://a.b"},
    )
    assert got[-1] == "127.0.0.1:8123" and "a.b" not in got
    assert allowed_domains("custom", {"GOOGLE_GEMINI_BASE_URL": "http://[::1]:9000"}) == [
        "[::1]:9000"
    ]
    with pytest.raises(ValueError, match="not a host name"):
        allowed_domains("gemini", {}, ["no spaces allowed"])


def test_base_url_entry_and_no_proxy() -> None:
    assert base_url_entry("https://gw.example.com:443/v1") == "gw.example.com"
    assert base_url_entry("http://LOCALHOST:8080") == "localhost:8080"
    assert base_url_entry("file:///etc/passwd") is None
    assert base_url_entry("") is None
    # A model server on the host's loopback must go through the proxy: no NO_PROXY then.
    assert no_proxy_for(["api.anthropic.com"]) == "localhost,127.0.0.1,::1"
    assert no_proxy_for(["api.anthropic.com", "127.0.0.1:8123"]) == ""
    assert no_proxy_for(["localhost:8080"]) == ""


def test_a_base_url_given_with_the_clis_env_flag_joins_the_allowlist(tmp_path: Path) -> None:
    """``--env`` is the person's own flag (unlike ``ralph.env``, which a workspace sets too):
    the run's sandbox line names its host. A real CLI run with the sandbox on."""
    project = tmp_path / "hello"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".ralph"))
    env = {**os.environ, "RALPH_SANDBOX": "auto"}
    flags = ["--agent", "claude", "--agent-command", "false", "--stuck-after", "1"]
    flags += ["--env", "ANTHROPIC_BASE_URL=https://gw.corp.example:8443/v1"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ralph_lsp",
            "run",
            "add-greeting-cli",
            "--root",
            str(project),
            *flags,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    said = [line for line in done.stdout.splitlines() if line.startswith("sandbox: ")]
    assert said, done.stdout + done.stderr
    assert said[0].endswith("platform.claude.com, gw.corp.example:8443"), said[0]
