"""The example's tests, as `python3 -m unittest discover -s tests` runs them (the standard
library only), and, when $RALPH_JUNIT_DIR names a folder (a ralph-lsp verification sets it),
a JUnit XML report there: which test passed, as the test runner says, is how a run knows each
scenario of the change is verified (a test names its scenario in its docstring)."""

import os
import sys
import unittest
from xml.sax.saxutils import quoteattr


class Recording(unittest.TextTestResult):
    """unittest's own result, which also keeps each test's outcome for the report."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes.append((test, ""))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes.append((test, "failure"))

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes.append((test, "error"))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes.append((test, "skipped"))


def junit(outcomes) -> str:
    cases = []
    for test, outcome in outcomes:
        cls = type(test)
        name = getattr(test, "_testMethodName", str(test))
        inner = f"<{outcome}/>" if outcome else ""
        classname = quoteattr(f"{cls.__module__}.{cls.__qualname__}")
        cases.append(f"<testcase classname={classname} name={quoteattr(name)}>{inner}</testcase>")
    body = "".join(cases)
    return f'<?xml version="1.0"?><testsuite name="unittest" tests="{len(cases)}">{body}</testsuite>'


def main() -> int:
    suite = unittest.defaultTestLoader.discover("tests")
    result = unittest.TextTestRunner(resultclass=Recording).run(suite)
    folder = os.environ.get("RALPH_JUNIT_DIR")
    if folder:
        with open(os.path.join(folder, "unittest.xml"), "w", encoding="utf-8") as f:
            f.write(junit(result.outcomes))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
