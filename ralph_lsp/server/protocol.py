"""The JSON-RPC protocol, answering every request, even those pygls 2.1 would drop.

- A request whose params do not fit the LSP schema (``textDocument/codeLens`` with ``{}``):
  pygls logs "Unable to handle message" and never answers it, so a client waits forever. Here it
  gets Invalid params (-32602) naming the method; the connection stays up.
- A request before ``initialize`` gets ServerNotInitialized (-32002), as LSP asks (pygls ran
  it, and ``workspace/executeCommand`` failed with an internal error).
- A request after ``shutdown`` gets InvalidRequest (-32600) (pygls dropped it unanswered).
"""

from __future__ import annotations

from typing import Any

from lsprotocol.types import EXIT, INITIALIZE, ErrorCodes, ResponseError
from pygls.protocol import LanguageServerProtocol


class RalphProtocol(LanguageServerProtocol):
    _got_initialize = False

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        if isinstance(method, str) and msg_id is not None:  # a request
            if method == INITIALIZE:
                self._got_initialize = True
            elif self._shutdown and method != EXIT:
                self._refuse(msg_id, ErrorCodes.InvalidRequest, "the server is shutting down")
                return
            elif not self._got_initialize:
                self._refuse(
                    msg_id,
                    ErrorCodes.ServerNotInitialized,
                    f"{method} before initialize: send initialize first",
                )
                return
        super().handle_message(message)

    def _refuse(self, msg_id: Any, code: int, message: str) -> None:
        self._send_response(msg_id, error=ResponseError(code=code, message=message))

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except Exception:
            if isinstance(data, dict) and "id" in data and isinstance(data.get("method"), str):
                self._send_response(
                    data["id"],
                    error=ResponseError(
                        code=ErrorCodes.InvalidParams,
                        message=f"invalid params for {data['method']}: they do not fit the"
                        " LSP schema for this method",
                    ),
                )
            raise
