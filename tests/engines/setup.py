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


def _venv_python(venv: str) -> str:
    return os.path.join(venv, "Scripts", "python.exe") if os.name == "nt" else os.path.join(venv, "bin", "python")


def _run(command: list[str]) -> None:
    print("+ " + " ".join(command), flush=True)
    subprocess.run(command, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/engines/setup.py", allow_abbrev=False,
                                     description="Create tests/engines/.venv with DuckDB, PySpark and chdb.")
    parser.add_argument("--venv", default=os.path.join(HERE, ".venv"),
                        help="where to create the environment (default: tests/engines/.venv)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter the environment is created from (default: this one)")
    parser.add_argument("--recreate", action="store_true", help="delete the environment first")
    args = parser.parse_args(argv)

    venv = os.path.abspath(args.venv)
    try:
        if args.recreate and os.path.isdir(venv):
            print(f"removing {venv}", flush=True)
            shutil.rmtree(venv)
        python = _venv_python(venv)
        if not os.path.isfile(python):
            _run([args.python, "-m", "venv", venv])
        _run([python, "-m", "pip", "install", "--disable-pip-version-check", "-r", REQUIREMENTS])
    except subprocess.CalledProcessError as exc:
        print(f"tests/engines/setup.py: command failed with exit status {exc.returncode}: {' '.join(exc.cmd)}",
              file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"tests/engines/setup.py: {exc}", file=sys.stderr)
        return 1
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        print("java not found: the Spark recipe's test will skip (install Java 17 or newer)", file=sys.stderr)
    print(f"\nready: cd tests && {os.path.relpath(python, os.path.dirname(HERE))} -m unittest test_engines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
