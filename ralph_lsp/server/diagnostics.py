"""Every diagnostic the server publishes goes through one store (:class:`DiagnosticsStore`), keyed
by (source, file), as esbonio's is: tasks.md's own (``publishing``), OpenSpec's findings
(``validation``) and a delta spec's conformance diagnostics (``conformance_view``). A file's
diagnostics are the lists of its sources, in the store's order of sources, sent as one.

What the client was last sent of each file is one hash cache (:class:`Sent`), which spares a
publish of what the client already has. It keeps a hash per file, not the diagnostics:
thousands of changes' diagnostics are not kept alive for the comparison (a collision would only
spare one identical publish). Likewise a source's list is kept only while another source shares
its file (a tasks.md, a delta spec), since only then is it sent again without being computed
again; a source that computes its list on demand (``provide``) has none kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Computed:
    """A source's diagnostics of a file computed now, with the document's URI and version."""

    diagnostics: list[types.Diagnostic]
    version: int | None
    uri: str


@dataclass
class _Source:
    name: str
    covers: Callable[[Path], bool]  # the files it may have diagnostics for
    provide: Callable[[Path], Computed] | None  # None: its lists are put, and kept when shared


class DiagnosticsStore:
    """One file's diagnostics: every source's, merged, published through one :class:`Sent`."""

    def __init__(self, sent: Sent, uri_for: Callable[[Path], str], order: Sequence[str]) -> None:
        """``order``: the sources' names, in the order their lists are joined."""
        self._sent = sent
        self._uri_for = uri_for
        self._order = list(order)
        self._sources: list[_Source] = []
        self._kept: dict[tuple[str, Path], list[types.Diagnostic]] = {}

    def register(
        self,
        name: str,
        *,
        covers: Callable[[Path], bool],
        provide: Callable[[Path], Computed] | None = None,
    ) -> None:
        self._sources.append(_Source(name, covers, provide))
        self._sources.sort(key=lambda source: self._order.index(source.name))

    def kept(self, name: str, file: Path) -> list[types.Diagnostic]:
        """The list ``name`` has for ``file``, as kept (none when not shared)."""
        return self._kept.get((name, file), [])

    def put(
        self,
        name: str,
        file: Path,
        diagnostics: list[types.Diagnostic],
        *,
        version: int | None = None,
        uri: str | None = None,
        if_changed: bool = False,
    ) -> None:
        """``name``'s diagnostics of ``file`` now: the file's merged list is published (unless
        ``if_changed`` and the kept list is the same). ``uri`` and ``version``: the document's,
        as a source that computes it knows them."""
        source = self._source(name)
        if source.provide is None and self._shared(source, file):
            key = (name, file)
            if if_changed and self._kept.get(key, []) == diagnostics:
                return
            if diagnostics:
                self._kept[key] = diagnostics
            else:
                self._kept.pop(key, None)
        merged: list[types.Diagnostic] = []
        for other in self._sources:
            if other is source:
                merged += diagnostics
            elif other.covers(file):
                if other.provide is not None:
                    computed = other.provide(file)
                    merged += computed.diagnostics
                    version, uri = computed.version, computed.uri
                else:
                    merged += self._kept.get((other.name, file), [])
        self._sent.publish(file, uri if uri is not None else self._uri_for(file), merged, version)

    def _source(self, name: str) -> _Source:
        for source in self._sources:
            if source.name == name:
                return source
        raise KeyError(name)

    def _shared(self, source: _Source, file: Path) -> bool:
        return any(other is not source and other.covers(file) for other in self._sources)
