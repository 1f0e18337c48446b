"""Where ralph-lsp runs: the one platform check, apart from ``inspection`` so that a command
checks it at start without importing the process-inspection interface (``typing`` and all)."""

from __future__ import annotations

import sys

WINDOWS_REFUSAL = (
    "ralph-lsp does not run on Windows: it cannot yet guarantee that a stopped agent leaves no "
    "process behind there. Windows: run ralph-lsp in WSL or a Remote window."
)


def unsupported_platform() -> str | None:
    """Why ralph-lsp refuses to start on this platform, or None where it runs."""
    return WINDOWS_REFUSAL if sys.platform == "win32" else None
