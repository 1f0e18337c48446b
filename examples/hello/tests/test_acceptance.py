"""The change's spec as acceptance tests (openspec/changes/add-greeting-cli/specs/greeting/spec.md).

They fail until the change is implemented: ticking the boxes of tasks.md is not enough.
Run with `python3 -m unittest discover -s tests` (the standard library only), or `make test`.
Each test names the scenario it checks (`Scenario: <title>`), so a run knows which are verified.
"""

import subprocess
import sys
import unittest


def hello(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hello.cli", *args], capture_output=True, text=True, timeout=60
    )


class GreetingCommandLine(unittest.TestCase):
    def test_one_name(self) -> None:
        """Scenario: One name"""
        result = hello("Ada")
        self.assertEqual((result.returncode, result.stdout), (0, "Hello, Ada!\n"))

    def test_several_names(self) -> None:
        """Scenario: Several names"""
        result = hello("Ada", "Grace")
        self.assertEqual(result.stdout, "Hello, Ada!\nHello, Grace!\n")

    def test_no_name(self) -> None:
        """Scenario: No name"""
        result = hello()
        self.assertEqual(result.returncode, 2)
        self.assertIn("usage", result.stderr)

    def test_shout(self) -> None:
        """Scenario: Shout"""
        self.assertEqual(hello("--shout", "Ada").stdout, "HELLO, ADA!\n")


if __name__ == "__main__":
    unittest.main()
