#!/usr/bin/env python3
"""Set up the optional adapter harness: tests/adapters/.venv with the pinned adapter packages.

    python3 tests/adapters/setup.py [--recreate] [--skip-npm] [--venv PATH] [--python PYTHON]

Creates the virtual environment (unless it exists), installs tests/adapters/requirements.txt
into it, and, when tests/adapters/vercel/package.json exists, runs `npm ci` there (`npm install`
without a package-lock.json) for the Vercel AI SDK driver. tests/adapters/run.py re-runs itself
with tests/adapters/.venv's Python when the current interpreter lacks the packages.

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
VERCEL = os.path.join(HERE, "vercel")
sys.path.insert(0, os.path.dirname(HERE))

from venv_setup import add_venv_options, failed, make_venv, run  # noqa: E402  (tests/ is on the path from here)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/adapters/setup.py", allow_abbrev=False,
                                     description="Create tests/adapters/.venv with the pinned adapter packages and "
                                                 "install the Vercel AI SDK driver's node_modules.")
    add_venv_options(parser, os.path.join(HERE, ".venv"),
                     "where to create the environment (default: tests/adapters/.venv, the one run.py uses)")
    parser.add_argument("--skip-npm", action="store_true", help="do not run npm in tests/adapters/vercel/")
    args = parser.parse_args(argv)

    venv = os.path.abspath(args.venv)
    try:
        python = make_venv(args, venv, REQUIREMENTS)

        package_json = os.path.join(VERCEL, "package.json")
        if args.skip_npm:
            print("skipping npm (--skip-npm)")
        elif os.path.isfile(package_json):
            npm = shutil.which("npm")
            if npm is None:
                print("npm not found on PATH: the vercel-ai-sdk adapter stays unavailable "
                      f"(install Node.js, then run `npm ci` in {VERCEL})", file=sys.stderr)
            else:
                lock = os.path.isfile(os.path.join(VERCEL, "package-lock.json"))
                run([npm, "ci" if lock else "install", "--no-audit", "--no-fund"], cwd=VERCEL)
        else:
            print(f"no {package_json}: the vercel-ai-sdk adapter is not set up")
    except (subprocess.CalledProcessError, OSError) as exc:
        return failed("tests/adapters/setup.py", exc)

    if os.path.realpath(venv) == os.path.realpath(os.path.join(HERE, ".venv")):
        print("\nready: python3 tests/adapters/run.py --all fixtures/   (re-runs itself with tests/adapters/.venv)")
    else:
        print(f"\nready: {python} tests/adapters/run.py --all fixtures/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
