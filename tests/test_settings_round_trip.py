"""A runner, a queue's runner and a Ray job get their settings as ``settings_to_dict`` writes
them, read back by ``settings_from_dict``: every setting must come back as it was. (``onRunEnd``
did not: written as a list, it was refused as "not a command line", and a detached run's or a
runner queue's ``--on-end`` never ran.)"""

from __future__ import annotations

from typing import Any

from ralph_lsp.settings import _FIELDS, Settings, settings_from_dict, settings_to_dict

SAMPLES: list[Any] = [
    "notify-send 'run ended' --urgency=low",
    "claude",
    "worktree",
    "ray",
    "off",
    "inherit",
    "all",
    "http://127.0.0.1:8265",
    True,
    False,
    3,
    2.5,
    ["make build", "make test"],
    {"FOO": "bar"},
    {"cpus": 2},
    {"apply": "m-apply", "plan": "m-plan"},
]


def _non_default(key: str) -> Any | None:
    """A value of ``key`` that parses and differs from the default (None: none of the samples)."""
    name, parse = _FIELDS[key]
    default = getattr(Settings(), name)
    for sample in SAMPLES:
        try:
            value = parse(sample)
        except (ValueError, TypeError):
            continue
        if value != default:
            return sample
    return None


def test_every_setting_comes_back_as_it_was() -> None:
    raw = {key: v for key in _FIELDS if (v := _non_default(key)) is not None}
    assert "onRunEnd" in raw and len(raw) >= len(_FIELDS) // 2, sorted(set(_FIELDS) - set(raw))
    settings, warnings = settings_from_dict(raw)
    assert warnings == [], warnings
    back, warnings = settings_from_dict(settings_to_dict(settings))
    assert warnings == [], warnings
    for key in raw:
        name = _FIELDS[key][0]
        assert getattr(back, name) == getattr(settings, name), key
    assert back == settings


def test_a_command_line_keeps_its_quoting() -> None:
    settings, _ = settings_from_dict({"onRunEnd": "notify 'the run ended' \"$HOME\" a;b"})
    assert settings.on_run_end == ("notify", "the run ended", "$HOME", "a;b")
    back, warnings = settings_from_dict(settings_to_dict(settings))
    assert warnings == [] and back.on_run_end == settings.on_run_end
