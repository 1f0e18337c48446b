"""An agent for the conformance gate: it builds the `shout` module, checks every task and
tests two of the three scenarios of its change; later spawns add the missing test only when
the prompt's Conformance section names it and the agent was started `responsive` (`lazy`:
never), or, started `reviewed`, when a reviewer appended an open task naming it (adding the
test and checking that task). Started `mixed`, its first spawn tests one scenario well, one
wrongly (a failing test) and leaves the third untested. A real program the engine spawns, as
every fake agent is."""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn, tasks_file

MODULE = """def shout(text: str, times: int = 1) -> str:
    if not text:
        raise ValueError("nothing to shout")
    return " ".join([text.upper() + "!"] * times)
"""
FIRST_TESTS = '''import pytest

from shout import shout


def test_shout() -> None:
    """Scenario: Shout once"""
    assert shout("hi") == "HI!"


def test_empty() -> None:
    # Scenario: Empty input
    with pytest.raises(ValueError):
        shout("")
'''
MIXED_TESTS = '''from shout import shout


def test_shout() -> None:
    """Scenario: Shout once"""
    assert shout("hi") == "HI!"


def test_shout_twice() -> None:
    """Scenario: Shout twice"""
    assert shout("hi", 2) == "HI!HI!"  # wrong: the words are apart
'''
MISSING_TEST = '''

def test_shout_twice() -> None:
    """Scenario: Shout twice"""
    assert shout("hi", 2) == "HI! HI!"
'''

prompt = read_prompt()
record_spawn(prompt)
mode = sys.argv[1] if len(sys.argv) > 1 else "lazy"
path = tasks_file(prompt)
root = path.parents[3]
text = path.read_text(encoding="utf-8")
ticked = re.sub(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, flags=re.M)
if mode == "reviewed" and re.search(r"^\s*[-*+] \[ \].*Shout twice", text, flags=re.M):
    with open(root / "tests" / "test_shout.py", "a", encoding="utf-8") as f:
        f.write(MISSING_TEST)
    path.write_text(ticked, encoding="utf-8")
    print("added the test for Shout twice, as the review asked")
elif ticked != text:
    (root / "shout.py").write_text(MODULE, encoding="utf-8")
    tests = MIXED_TESTS if mode == "mixed" else FIRST_TESTS
    (root / "tests" / "test_shout.py").write_text(tests, encoding="utf-8")
    path.write_text(ticked, encoding="utf-8")
    print("built shout, tested two scenarios, checked every task")
elif mode == "responsive" and "Scenario *Shout twice* has no test that names it" in prompt:
    with open(root / "tests" / "test_shout.py", "a", encoding="utf-8") as f:
        f.write(MISSING_TEST)
    print("added the test for Shout twice")
else:
    print("nothing left to do")
