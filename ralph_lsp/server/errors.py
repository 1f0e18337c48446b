"""The errors a command answers with: JSON-RPC errors whose message says what to do.

pygls turns any other exception from a handler into an "internal error" whose message is a
traceback, so every handler raises one of these, and nothing else, for a request it refuses.
"""

from __future__ import annotations

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams


class CommandError(JsonRpcException):
    """Marker for errors the server answers on purpose (not logged as server failures)."""


class InvalidArguments(CommandError):
    """The command's argument is missing, not an object, or holds a wrong-typed field."""

    CODE = JsonRpcInvalidParams.CODE  # -32602
    MESSAGE = "Invalid params"

    def __init__(self, message: str) -> None:
        super().__init__(message=message, code=self.CODE)


class RequestFailed(CommandError):
    """A well-formed request the server refuses: unknown change, already running, untrusted."""

    CODE = -32803  # LSP's RequestFailed
    MESSAGE = "Request failed"

    def __init__(self, message: str) -> None:
        super().__init__(message=message, code=self.CODE)
