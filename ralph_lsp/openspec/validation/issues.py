"""A validation finding: the CLI's level, path, message and line, our rule code and range."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Issue:
    level: str  # "ERROR" | "WARNING" | "INFO"
    path: str  # as the CLI prints it
    message: str  # byte-exact to the CLI
    code: str  # our stable rule id, e.g. "openspec.requirement.no-shall"
    line: int | None = None  # the CLI's own 1-based line, when it gives one
    file: Path | None = None  # the file the finding is in, when there is one
    at: int | None = None  # 0-based line our parser found (None: the file's first line)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "path": self.path, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass
class Report:
    issues: list[Issue] = field(default_factory=list)
    strict: bool = False

    @property
    def valid(self) -> bool:
        bad = {"ERROR", "WARNING"} if self.strict else {"ERROR"}
        return not any(i.level in bad for i in self.issues)
