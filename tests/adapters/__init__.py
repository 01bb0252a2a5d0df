"""SDK drivers and adapter harness: what real SDKs and stream adapters would execute, next to our verdict.

Optional and test-only: the validator (scripts/validate_tool_stream.py) never imports this
package, and nothing here imports tests/support.py. The third-party packages are listed in
requirements.txt and imported lazily (see drivers.py), so the package imports with the
standard library only. The scripts here (run.py, speed.py, crosscheck.py) put tests/ on
sys.path and import it as ``adapters``.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
ROOT = os.path.dirname(TESTS)
SCRIPTS = os.path.join(ROOT, "scripts")
FIXTURES = os.path.join(ROOT, "fixtures")


def validator():
    """scripts/validate_tool_stream.py as a module, found by its path (standard library only)."""
    if SCRIPTS not in sys.path:
        sys.path.insert(0, SCRIPTS)
    import validate_tool_stream

    return validate_tool_stream
