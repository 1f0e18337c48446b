"""ralph-lsp: run a Ralph loop of coding agents over an OpenSpec change."""

from __future__ import annotations

__version__ = "0.1.0"
