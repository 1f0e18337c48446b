"""The real OpenSpec CLI (1.13.2, the version whose counting ralph-lsp matches), from npm.

Installed into the git-ignored ``.cache/openspec/`` with its npm cache in ``.cache/npm``;
nothing is installed when that version is already there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from bench.common import CACHE

VERSION = "1.13.2"
PACKAGE = "@fission-ai/openspec"
PREFIX = CACHE / "openspec"
PACKAGE_DIR = PREFIX / "node_modules" / "@fission-ai" / "openspec"

# OpenSpec sends anonymous usage statistics unless told not to; the bench reaches no network.
ENV = {"OPENSPEC_TELEMETRY": "0", "DO_NOT_TRACK": "1", "NO_COLOR": "1"}


class Unavailable(Exception):
    """The OpenSpec CLI cannot be had here; the message says why."""


def _installed_version() -> str | None:
    try:
        return str(json.loads((PACKAGE_DIR / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def _ensure_node() -> str:
    node = shutil.which("node")
    if node and shutil.which("npm"):
        return node
    print("bench: node/npm not found; installing Debian's nodejs and npm", file=sys.stderr)
    try:
        subprocess.run(["apt-get", "update", "-qq"], check=True, timeout=600)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "nodejs", "npm"], check=True, timeout=900
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise Unavailable(f"node and npm are missing and could not be installed: {exc}") from exc
    node = shutil.which("node")
    if not node:
        raise Unavailable("node is still missing after installing nodejs")
    return node


def command() -> list[str]:
    """argv that runs ``openspec`` 1.13.2 (installing it first if needed)."""
    node = _ensure_node()
    if _installed_version() != VERSION:
        print(f"bench: installing {PACKAGE}@{VERSION} into .cache/openspec", file=sys.stderr)
        PREFIX.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                [
                    "npm",
                    "install",
                    "--prefix",
                    str(PREFIX),
                    "--cache",
                    str(CACHE / "npm"),
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    f"{PACKAGE}@{VERSION}",
                ],
                check=True,
                timeout=600,
                stdout=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise Unavailable(f"npm install {PACKAGE}@{VERSION} failed: {exc}") from exc
        if _installed_version() != VERSION:
            raise Unavailable(f"npm did not install {PACKAGE}@{VERSION}")
    script = PACKAGE_DIR / "bin" / "openspec.js"
    if not script.is_file():
        raise Unavailable(f"{Path('.cache/openspec')} holds no openspec binary")
    return [node, str(script)]
