"""The package imports and has a version (each change adds its own tests beside this one)."""

import unittest

import toolbox


class Package(unittest.TestCase):
    def test_version(self) -> None:
        self.assertEqual(toolbox.__version__, "0.0.1")


if __name__ == "__main__":
    unittest.main()
