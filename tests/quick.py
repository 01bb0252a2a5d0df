"""The quick run: the in-memory tests, serve on loopback and one conform run (about 18 s of CPU).

    PYTHONDONTWRITEBYTECODE=1 python3 tests/quick.py [-v] [-f]

It sets VTS_QUICK=1 (support.slow then skips every test marked slow: one that starts this tool as a
process, fuzzes, or feeds megabytes) and leaves out the modules that exist to run other programs:
the README's commands (test_readme), the framework adapters (test_adapters) and the SDKs
(test_sdk_differential).
The full suite is still the README's command; this is a subset of it, never a replacement.
"""

import os
import sys
import unittest

os.environ["VTS_QUICK"] = "1"
HERE = os.path.dirname(os.path.abspath(__file__))
LEFT_OUT = ("test_readme", "test_adapters", "test_sdk_differential")


def suite():
    sys.path.insert(0, HERE)
    loader = unittest.defaultTestLoader
    names = sorted(name[:-3] for name in os.listdir(HERE)
                   if name.startswith("test_") and name.endswith(".py") and name[:-3] not in LEFT_OUT)
    return unittest.TestSuite(loader.loadTestsFromName(name) for name in names)


if __name__ == "__main__":
    print(f"quick run (VTS_QUICK=1), leaving out {', '.join(LEFT_OUT)}", file=sys.stderr)
    options = sys.argv[1:]
    result = unittest.TextTestRunner(verbosity=2 if "-v" in options else 1, failfast="-f" in options).run(suite())
    sys.exit(0 if result.wasSuccessful() else 1)
