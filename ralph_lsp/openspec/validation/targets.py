"""Which items a changed file asks to re-validate: its change, its main spec and the changes
whose deltas target that spec, or a whole project (its `openspec/config.yaml`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ralph_lsp.openspec.validation.issues import Issue
from ralph_lsp.openspec.validation.metadata import (
    BUILT_IN_SCHEMAS,
    project_schemas,
    top_level_scalars,
)
from ralph_lsp.openspec.validation.text import js_len


@dataclass
class Targets:
    changes: set[Path] = field(default_factory=set)  # change folders
    specs: set[Path] = field(default_factory=set)  # main spec files
    configs: set[Path] = field(default_factory=set)  # openspec/config.yaml files
    roots: set[Path] = field(default_factory=set)  # projects to re-validate whole

    def add(self, other: Targets) -> None:
        self.changes |= other.changes
        self.specs |= other.specs
        self.configs |= other.configs
        self.roots |= other.roots


def targets_of(path: Path) -> Targets:
    """What to re-validate when `path` changed (on disk or in the editor)."""
    out = Targets()
    parts = path.parts
    at = max((i for i, p in enumerate(parts[:-1]) if p == "openspec"), default=-1)
    if at < 0:
        return out
    root, rest = Path(*parts[:at]) if at else Path(parts[0]), parts[at + 1 :]
    if rest == ("config.yaml",):
        out.configs.add(path)
        out.roots.add(root)
    elif len(rest) >= 2 and rest[0] == "changes" and rest[1] != "archive":
        out.changes.add(root / "openspec" / "changes" / rest[1])
    elif len(rest) >= 3 and rest[0] == "specs" and rest[-1] == "spec.md":
        out.specs.add(path)
        capability = rest[1:-1]
        for change in sorted(
            (root / "openspec" / "changes").glob("*/specs/" + "/".join(capability) + "/spec.md")
        ):
            out.changes.add(change.parents[len(capability) + 1])
    return out


def config_issues(file: Path, text: str) -> list[Issue]:
    """The warnings the CLI gives when it loads `openspec/config.yaml`, where we can tell them."""
    keys = top_level_scalars(text)
    root = file.parent.parent
    at = next((i for i, line in enumerate(text.split("\n")) if line.startswith("schema")), None)
    issues = []
    if "schema" in keys and not keys["schema"]:
        message = "Invalid 'schema' field in config (must be non-empty string)"
        issues.append(
            Issue(
                "WARNING",
                "config.yaml",
                message,
                "openspec.config.schema-invalid",
                file=file,
                at=at,
            )
        )
    elif keys.get("schema"):
        known = sorted({*BUILT_IN_SCHEMAS, *project_schemas(root)})
        if keys["schema"] not in known:
            message = f"Schema '{keys['schema']}' not found. Available schemas: {', '.join(known)}"
            issues.append(
                Issue(
                    "WARNING",
                    "config.yaml",
                    message,
                    "openspec.config.schema-unknown",
                    file=file,
                    at=at,
                )
            )
    context = text.split("\ncontext:", 1)[1] if "\ncontext:" in text else ""
    size = js_len(context.split("\nrules:", 1)[0])
    if size > 50 * 1024:
        message = f"Context too large ({size / 1024:.1f}KB, limit: 50KB)"
        issues.append(
            Issue("WARNING", "config.yaml", message, "openspec.config.context-too-large", file=file)
        )
    return issues
