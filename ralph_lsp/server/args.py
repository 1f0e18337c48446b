"""Checking a command's one JSON object argument (SPEC §5), with messages that say what to send.

pygls ignores parameter defaults and would answer a palette invocation (no arguments) with
"Expected 1 arguments, got 0", so commands take the raw argument list and check it here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from ralph_lsp import setting_values
from ralph_lsp.server.errors import InvalidArguments

T = TypeVar("T")

# The fields each command accepts; anything else is refused so that a typo is not ignored.
FIELDS: dict[str, tuple[str, ...]] = {
    "ralph.changes": ("root",),
    "ralph.run": (
        "change",
        "root",
        "maxIterations",
        "iterationScope",
        "guidance",
        "story",
        # v3: a queue of changes (SPEC §9) instead of "change"
        "changes",
        "parallel",
        "stopOnFailure",
        # v4 (SPEC §12): a follow-up run on the change's branch (review comments as guidance)
        "followUp",
    ),
    "ralph.stop": ("change", "root"),
    "ralph.guide": ("change", "text", "root"),
    "ralph.status": ("change", "root"),
    "ralph.history": ("change", "root"),
    "ralph.diff": ("change", "root", "runId", "iteration"),
    "ralph.restore": ("change", "root", "runId", "iteration", "checkpoint"),
    "ralph.fileAt": ("root", "checkpoint", "path"),
    "ralph.stopQueue": ("queue", "root"),
    "ralph.queues": ("root",),
    # v4: archive (SPEC §11)
    "ralph.archivePreview": ("change", "root"),
    "ralph.archiveChange": ("change", "root", "yes"),
    # v4: review and merge (SPEC §12)
    "ralph.reviewRun": ("change", "root", "runId", "into"),
    "ralph.mergeRun": ("change", "root", "runId", "into", "strategy"),
    "ralph.mergeAll": ("root", "into", "strategy"),
    # v5: planning (SPEC §14)
    "ralph.planChange": ("change", "description", "root"),
    "ralph.revisePlan": ("change", "text", "root"),
    "ralph.discardChange": ("change", "root", "yes"),
}


def _shape(command: str) -> str:
    fields = FIELDS[command]
    return "{" + ", ".join(f'"{f}"' for f in fields) + "}"


def one_object(command: str, args: Sequence[object]) -> dict[str, Any]:
    """The command's argument: none, ``null`` or ``[]`` (an empty table from Lua) is ``{}``;
    several, or a non-object, are refused."""
    if len(args) == 0 or (len(args) == 1 and (args[0] is None or args[0] == [])):
        return {}
    if len(args) > 1:
        raise InvalidArguments(
            f"{command} takes one JSON object argument, got {len(args)} arguments;"
            f" send [{_shape(command)}]"
        )
    arg = args[0]
    if not isinstance(arg, Mapping):
        raise InvalidArguments(
            f"{command} takes one JSON object argument, got {kind(arg)}; send {_shape(command)}"
        )
    unknown = sorted(str(k) for k in arg if k not in FIELDS[command])
    if unknown:
        raise InvalidArguments(
            f"{command}: unknown field {', '.join(repr(k) for k in unknown)};"
            f" it accepts {_shape(command)}"
        )
    return dict(arg)


def kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def required_string(command: str, obj: Mapping[str, Any], key: str) -> str:
    """A string field that must be there."""
    value = optional_string(command, obj, key)
    if value is None:
        raise InvalidArguments(f'{command} needs "{key}" (a string); send {_shape(command)}')
    return value


def required_text(command: str, obj: Mapping[str, Any], key: str, wanted: str) -> str:
    """A string field that must be there and not blank; ``wanted`` says what to send."""
    value = required_string(command, obj, key)
    if not value.strip():
        raise InvalidArguments(f'{command}: "{key}" is blank; {wanted}')
    return value


def _optional(command: str, obj: Mapping[str, Any], key: str, read: Callable[[Any], T]) -> T | None:
    """The field ``key`` as ``read`` takes it; ``None`` when absent (or null). ``read`` raises
    ``ValueError`` with what the field must be, e.g. "must be a non-empty string, got …"."""
    value = obj.get(key)
    if value is None:
        return None
    try:
        return read(value)
    except ValueError as exc:
        raise InvalidArguments(f'{command}: "{key}" {exc}') from None


def _non_empty_string(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"must be a non-empty string, got {kind(value)}")
    return value


def _whole_number(value: Any) -> int:
    try:
        return setting_values.positive_int(value)
    except ValueError:
        raise ValueError(f"must be a whole number of at least 1, got {value!r}") from None


def optional_string(command: str, obj: Mapping[str, Any], key: str) -> str | None:
    """A string field; ``None`` when absent (or null)."""
    return _optional(command, obj, key, _non_empty_string)


def positive_int(command: str, obj: Mapping[str, Any], key: str) -> int | None:
    return _optional(command, obj, key, _whole_number)


def choice(command: str, obj: Mapping[str, Any], key: str, options: Sequence[str]) -> str | None:
    def one_of(value: Any) -> str:
        if not isinstance(value, str) or value not in options:
            listing = " or ".join(f'"{o}"' for o in options)
            raise ValueError(f"must be {listing}, got {value!r}")
        return value

    return _optional(command, obj, key, one_of)


def path_of_uri(command: str, uri: str) -> Path:
    """The local path of a ``file:`` URI (a plain absolute path is accepted too)."""
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        if parsed.netloc not in ("", "localhost"):
            raise InvalidArguments(f'{command}: "root" must be a local file: URI, got {uri!r}')
        return Path(unquote(parsed.path))
    if "://" in uri or not Path(uri).is_absolute():
        raise InvalidArguments(
            f'{command}: "root" must be the file: URI of an OpenSpec root'
            f" (a folder holding openspec/changes/), got {uri!r}"
        )
    return Path(uri)
