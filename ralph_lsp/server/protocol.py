"""The JSON-RPC protocol, answering requests whose params do not fit the LSP schema.

pygls 2.1 fails to structure such a request (``textDocument/codeLens`` with ``{}``), logs
"Unable to handle message" and never answers it, so a client waits forever. Here the request
gets an Invalid params error (-32602) that names the method; the connection stays up.
"""

from __future__ import annotations

from typing import Any

from lsprotocol.types import ErrorCodes, ResponseError
from pygls.protocol import LanguageServerProtocol


class RalphProtocol(LanguageServerProtocol):
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
