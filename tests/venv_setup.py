"""What tests/adapters/setup.py and tests/engines/setup.py share: the options that name a virtual environment,
and making it (recreated on request, created unless it exists) with a requirements file installed into it.

A plain module of two plain scripts (each puts tests/ on sys.path): no package build, no third-party import.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys


def venv_python(venv: str) -> str:
    return os.path.join(venv, "Scripts", "python.exe") if os.name == "nt" else os.path.join(venv, "bin", "python")


def run(command: list[str], cwd: str | None = None) -> None:
    print("+ " + " ".join(command) + (f"   (in {cwd})" if cwd else ""), flush=True)
    subprocess.run(command, cwd=cwd, check=True)


def add_venv_options(parser: argparse.ArgumentParser, default_venv: str, venv_help: str) -> None:
    """--venv (default DEFAULT_VENV, VENV_HELP), --python and --recreate."""
    parser.add_argument("--venv", default=default_venv, help=venv_help)
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter the environment is created from (default: this one)")
    parser.add_argument("--recreate", action="store_true", help="delete the environment first")


def make_venv(args: argparse.Namespace, venv: str, requirements: str) -> str:
    """VENV removed first with --recreate, created from --python unless it exists, REQUIREMENTS installed into
    it; its Python's path.  A failing command raises subprocess.CalledProcessError, a missing file OSError."""
    if args.recreate and os.path.isdir(venv):
        print(f"removing {venv}", flush=True)
        shutil.rmtree(venv)
    python = venv_python(venv)
    if not os.path.isfile(python):
        run([args.python, "-m", "venv", venv])
    run([python, "-m", "pip", "install", "--disable-pip-version-check", "-r", requirements])
    return python


def failed(prog: str, exc: Exception) -> int:
    """Say on stderr why PROG stopped (a command's exit status, or the OSError); the exit status 1."""
    if isinstance(exc, subprocess.CalledProcessError):
        print(f"{prog}: command failed with exit status {exc.returncode}: {' '.join(exc.cmd)}", file=sys.stderr)
    else:
        print(f"{prog}: {exc}", file=sys.stderr)
    return 1
