"""Settings and workspace trust as the client sends them (SPEC §5).

Three sources, the latest wins: ``initializationOptions`` (``{"trusted": bool, ...settings}``),
``workspace/didChangeConfiguration`` (``{"ralph": {...}}``, or the settings themselves), and
``workspace/configuration`` section ``ralph``, pulled when a run starts. Any of them may carry
``trusted``; a client that never sends it is trusted. While untrusted, settings that name a
program are not read (``settings_from_dict(trusted=False)``). A wrong-typed setting is
reported once, however often the settings are read again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ralph_lsp.settings import SETTING_NAMES, Settings, settings_from_dict

SECTION = "ralph"
TRUSTED = "trusted"


class Config:
    def __init__(self, warn: Callable[[str], None]) -> None:
        self._warn = warn
        self._warned: set[str] = set()
        self.trusted = True
        self.raw: Mapping[str, Any] | None = None

    def _take(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Note ``trusted`` if present; return the settings without it."""
        if TRUSTED in raw:
            value = raw[TRUSTED]
            if isinstance(value, bool):
                self.trusted = value
            else:
                self._warn_once(
                    f"ralph: 'trusted' should be true or false, got {value!r};"
                    f" keeping {'trusted' if self.trusted else 'untrusted'}"
                )
        return {k: v for k, v in raw.items() if k != TRUSTED}

    def from_initialization_options(self, options: Any) -> None:
        if isinstance(options, Mapping):
            nested = options.get(SECTION)
            raw = nested if isinstance(nested, Mapping) else options
            if TRUSTED in options and raw is not options:
                self._take({TRUSTED: options[TRUSTED]})
            self.raw = self._take(raw)

    def from_did_change(self, settings: Any) -> bool:
        """Apply pushed settings; False when they carry nothing (the caller then pulls)."""
        if not isinstance(settings, Mapping):
            return False
        nested = settings.get(SECTION)
        if isinstance(nested, Mapping):
            if TRUSTED in settings:
                self._take({TRUSTED: settings[TRUSTED]})
            self.raw = self._take(nested)
            return True
        if TRUSTED in settings:
            self._take({TRUSTED: settings[TRUSTED]})
        if any(k in SETTING_NAMES for k in settings):  # the settings themselves, flat
            self.raw = self._take(settings)
            return True
        return TRUSTED in settings

    def from_pull(self, section: Any) -> Mapping[str, Any] | None:
        """The pulled ``ralph`` section (None when the client has none to give)."""
        if not isinstance(section, Mapping):
            return None
        return self._take(section)

    def settings(self, raw: Mapping[str, Any] | None = None) -> Settings:
        """Settings from ``raw`` (default: the latest received), reporting each problem once."""
        settings, warnings = settings_from_dict(
            self.raw if raw is None else raw, trusted=self.trusted
        )
        for warning in warnings:
            self._warn_once(warning)
        return settings

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self._warn(message)
