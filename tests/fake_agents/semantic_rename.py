"""Does a toolbox change as the demo agent does (ticks its tasks, writes its code), then, for
two changes, one side of a semantic conflict the text merge cannot see:

- ``add-word-count`` also renames ``toolbox.text.shout`` to ``yell`` (and its test);
- ``add-title-case`` also adds ``toolbox/banner.py``, which calls ``shout`` by its old name.

Each branch passes its own tests; merged together they import a name that no longer exists."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn

from ralph_lsp.demo import agent

prompt = read_prompt()
record_spawn(prompt)
code = agent.main(["-p", prompt, "--output-format", "text"])
found = agent.find_tasks_file(agent._followed(prompt))
tasks = None if found is None else (Path.cwd() / found).resolve()
if code != 0 or tasks is None:
    sys.exit(code or 1)
change, root = tasks.parent.name, tasks.parents[3]
if change == "add-word-count":
    text = root / "toolbox" / "text.py"
    text.write_text(text.read_text().replace("def shout(", "def yell("))
    test = root / "tests" / "test_text.py"
    test.write_text(test.read_text().replace("shout", "yell"))
    print("renamed toolbox.text.shout to yell")
elif change == "add-title-case":
    (root / "toolbox" / "banner.py").write_text(
        "from toolbox.text import shout\n\n\ndef banner(s):\n    return '** ' + shout(s) + ' **'\n"
    )
    (root / "tests" / "test_banner.py").write_text(
        "import unittest\n\nfrom toolbox.banner import banner\n\n\n"
        "class Banner(unittest.TestCase):\n"
        "    def test_banner(self) -> None:\n"
        "        self.assertEqual(banner('hi'), '** HI **')\n"
    )
    print("added toolbox.banner, calling toolbox.text.shout")
