"""What the client was last sent of each file's diagnostics (:class:`Sent`): the one cache that
spares a publish of what the client already has, for every file the server publishes (tasks.md
from ``publishing``, the OpenSpec files from ``validation``, a delta spec's conformance
diagnostics with them).

It keeps a hash per file, not the diagnostics: thousands of changes' diagnostics are not kept
alive for the comparison; a collision would only spare one identical publish.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from lsprotocol import types


class Sent:
    """Publishes a file's diagnostics through ``send`` when they differ from what it was last
    sent (its URI included: the same file opened in the editor is published again)."""

    def __init__(self, send: Callable[[types.PublishDiagnosticsParams], None]) -> None:
        self._send = send
        self._hashes: dict[Path, int] = {}

    def publish(
        self,
        file: Path,
        uri: str,
        diagnostics: Sequence[types.Diagnostic],
        version: int | None = None,
    ) -> bool:
        """Whether ``diagnostics`` were sent (False: the client has them already)."""
        key = hash(
            (
                uri,
                tuple(
                    (
                        d.range.start.line,
                        d.range.start.character,
                        d.range.end.line,
                        d.range.end.character,
                        d.severity,
                        d.message,
                        d.code,
                        d.source,
                    )
                    for d in diagnostics
                ),
            )
        )
        if self._hashes.get(file) == key:
            return False
        self._hashes[file] = key
        self._send(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=list(diagnostics), version=version)
        )
        return True
