"""ralph-lsp: run a Ralph loop of coding agents over an OpenSpec change."""

__version__ = "0.1.0"
