"""A run record's growing lists, kept on disk rather than in memory (SPEC §3 "History").

A run's record has lists that grow by an entry or two every iteration: its iterations, its
transitions, its rate-limited spawns, the iterations whose raw output retention removed. Held
whole in memory, a night's run made its process grow by kilobytes an iteration. A
:class:`Ledger` keeps only its latest entries in memory (``recent``: the last one may still be
completed, as a checkpoint fills in its iteration) and seals the older ones, one JSON line each,
into a file beside ``record.json``. :func:`write_record` writes the record with every list whole,
streamed from those files, so ``record.json`` stays the complete record every reader knows; what
needs the old entries (the run's end summary) reads them back from disk on demand.

When the file cannot be written the entries simply stay in memory: the record is still whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from ralph_lsp.runs import safe_dir

T = TypeVar("T")

#: The entries a ledger keeps in memory: the latest ones, which may still be completed.
WINDOW = 4


class Ledger(Generic[T]):
    """One growing list of a record: sealed entries in ``path`` (JSON lines), the latest in
    memory. Iterating reads the whole list back, oldest first."""

    def __init__(self, path: Path | None, window: int = WINDOW) -> None:
        self.path = path
        self.window = max(1, window)
        self.recent: list[T] = []
        self.sealed = 0  # entries written to the file: exactly its first ``sealed`` lines count
        self._writable = path is not None

    def __len__(self) -> int:
        return self.sealed + len(self.recent)

    def last(self) -> T:
        """The latest entry (still in memory, so it can be completed in place)."""
        return self.recent[-1]

    def append(self, entry: T) -> None:
        self.recent.append(entry)
        if self._writable and len(self.recent) > self.window:
            self._seal(len(self.recent) - self.window)

    def _seal(self, k: int) -> None:
        assert self.path is not None
        text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in self.recent[:k])
        try:
            with open(self.path, "a", encoding="utf-8", opener=safe_dir.opener()) as f:
                f.write(text)
        except OSError:
            # A torn line may be left past the sealed ones: it is never read (``sealed`` counts).
            self._writable = False
            return
        del self.recent[:k]
        self.sealed += k

    def _sealed_lines(self) -> Iterator[str]:
        """The sealed entries' JSON lines, without their line ends (raises OSError)."""
        if not self.sealed or self.path is None:
            return
        with open(self.path, encoding="utf-8", opener=safe_dir.opener()) as f:
            for i, line in enumerate(f):
                if i >= self.sealed:
                    break
                yield line.rstrip("\n")

    def __iter__(self) -> Iterator[Any]:
        """Every entry, oldest first; sealed entries that cannot be read back are skipped."""
        try:
            for line in self._sealed_lines():
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
        except OSError:
            pass
        yield from self.recent

    def write_json(self, out: IO[str]) -> None:
        """The whole list as a JSON array (raises OSError when the sealed part is unreadable)."""
        sep = "\n"
        out.write("[")
        for line in self._sealed_lines():
            out.write(sep + line)
            sep = ",\n"
        for entry in self.recent:
            out.write(sep + json.dumps(entry, ensure_ascii=False))
            sep = ",\n"
        out.write("\n]" if sep != "\n" else "]")


class Ranges:
    """Ascending integers kept as runs ``[first, last]``: the iterations whose raw output was
    removed, which retention removes oldest first, so they are nearly always one run."""

    def __init__(self) -> None:
        self.runs: list[list[int]] = []

    def add(self, n: int) -> None:
        if self.runs and self.runs[-1][1] + 1 == n:
            self.runs[-1][1] = n
        else:
            self.runs.append([n, n])

    def __iter__(self) -> Iterator[int]:
        for first, last in self.runs:
            yield from range(first, last + 1)

    def __len__(self) -> int:
        return sum(last - first + 1 for first, last in self.runs)

    def write_json(self, out: IO[str]) -> None:
        sep = ""
        out.write("[")
        for n in self:
            out.write(f"{sep}{n}")
            sep = ", "
        out.write("]")


def write_record(out: IO[str], record: Mapping[str, Any]) -> None:
    """``record`` as a JSON object, its :class:`Ledger` and :class:`Ranges` values streamed
    whole (raises OSError when a ledger's file cannot be read)."""
    sep = "{\n "
    for key, value in record.items():
        out.write(sep + json.dumps(key) + ": ")
        if isinstance(value, (Ledger, Ranges)):
            value.write_json(out)
        else:
            out.write(json.dumps(value, ensure_ascii=False))
        sep = ",\n "
    out.write("\n}\n" if sep != "{\n " else "{}\n")
