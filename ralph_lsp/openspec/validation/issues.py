"""A validation finding: the CLI's level, path, message and line, our rule code and range."""

from __future__ import annotations

from ralph_lsp.openspec.validation.record import Record

TYPE_CHECKING = False  # typing's constant, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


class Issue(Record):
    __slots__ = ("at", "code", "file", "level", "line", "message", "path")

    def __init__(
        self,
        level: str,  # "ERROR" | "WARNING" | "INFO"
        path: str,  # as the CLI prints it
        message: str,  # byte-exact to the CLI
        code: str,  # our stable rule id, e.g. "openspec.requirement.no-shall"
        line: int | None = None,  # the CLI's own 1-based line, when it gives one
        file: Path | None = None,  # the file the finding is in, when there is one
        at: int | None = None,  # 0-based line our parser found (None: the file's first line)
    ) -> None:
        self.level, self.path, self.message, self.code = level, path, message, code
        self.line, self.file, self.at = line, file, at

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "path": self.path, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        return out


class Report:
    __slots__ = ("issues", "strict")

    def __init__(self, issues: list[Issue] | None = None, strict: bool = False) -> None:
        self.issues: list[Issue] = [] if issues is None else issues
        self.strict = strict

    @property
    def valid(self) -> bool:
        bad = {"ERROR", "WARNING"} if self.strict else {"ERROR"}
        return not any(i.level in bad for i in self.issues)
