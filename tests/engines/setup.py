#!/usr/bin/env python3
"""Set up the optional engines environment: tests/engines/.venv with DuckDB, PySpark and chdb.

    python3 tests/engines/setup.py [--recreate] [--venv PATH] [--python PYTHON]

Creates the virtual environment (unless it exists) and installs tests/engines/requirements.txt into it.
Then, from tests/: `engines/.venv/bin/python -m unittest test_engines` runs README's "Auditing logged
traffic" recipes in each engine, and `tests/engines/.venv/bin/python tests/bench/engines.py` measures them.
Spark also needs Java 17 or newer (`java` on PATH or JAVA_HOME); nothing here installs it.

This is a plain script, not a setuptools file: nothing in it is a package build.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIREMENTS = os.path.join(HERE, "requirements.txt")
sys.path.insert(0, os.path.dirname(HERE))

from venv_setup import add_venv_options, failed, make_venv  # noqa: E402  (tests/ is on the path from here)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/engines/setup.py", allow_abbrev=False,
                                     description="Create tests/engines/.venv with DuckDB, PySpark and chdb.")
    add_venv_options(parser, os.path.join(HERE, ".venv"),
                     "where to create the environment (default: tests/engines/.venv)")
    args = parser.parse_args(argv)

    try:
        python = make_venv(args, os.path.abspath(args.venv), REQUIREMENTS)
    except (subprocess.CalledProcessError, OSError) as exc:
        return failed("tests/engines/setup.py", exc)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        print("java not found: the Spark recipe's test will skip (install Java 17 or newer)", file=sys.stderr)
    print(f"\nready: cd tests && {os.path.relpath(python, os.path.dirname(HERE))} -m unittest test_engines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
