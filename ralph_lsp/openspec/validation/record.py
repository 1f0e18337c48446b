"""`Record`: what a frozen dataclass gives the validation's value classes (equality, hash and
repr from their fields), without importing `dataclasses`: with `inspect`, `ast` and the rest it
pulls in, that import was about 8 ms of a `ralph-lsp validate` call, which is mostly start."""

from __future__ import annotations


class Record:
    """A value class whose fields are its `__slots__`, set once in `__init__`."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"
