import sys

from ralph_lsp.proc.inspection import unsupported_platform

if (reason := unsupported_platform()) is not None:  # before the server's POSIX-only imports
    sys.exit(f"ralph-lsp: error: {reason}")

from ralph_lsp.server import serve

serve()
