#!/usr/bin/env python3
"""How many fixtures per second `conform` judges with the reference adapter.  Not a unit test.

Standard library only, Python 3.10+.  It runs `validate_tool_stream.py conform` over a folder of
fixtures (default fixtures/openai) with tests/conform/streamgate_adapter.py as the adapter command,
each way in turn: a process per fixture, --persistent, a process per fixture with --jobs 2 and
--persistent with --jobs 2; per way it prints the wall time, the CPU time of conform and its
adapters (getrusage of the children), fixtures/s and the exit status (0: every verdict green).
--script runs each way against another copy of the validator too, in turn (before/after in one run; the adapter
imports this tree's validator either way); --ways picks the ways by number (1-4); --no-pidfd runs conform with
os.pidfd_open taken away (as on macOS, or a Linux before 5.3), where it cannot wait on a descriptor of the process.

Usage:
  python3 tests/bench/conform_speed.py                      # fixtures/openai, each way once
  python3 tests/bench/conform_speed.py --repeat 3 fixtures/anthropic
  python3 tests/bench/conform_speed.py --script /work/wt/base34.py --ways 2,4 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "validate_tool_stream.py"
ADAPTER = ROOT / "tests" / "conform" / "streamgate_adapter.py"
WAYS = (("a process per fixture", (), ""), ("--persistent", ("--persistent",), " --persistent"),
        ("a process per fixture, --jobs 2", ("--jobs", "2"), ""),
        ("--persistent --jobs 2", ("--persistent", "--jobs", "2"), " --persistent"))


NO_PIDFD = ("-c", "import os, runpy, sys; del os.pidfd_open; sys.argv = sys.argv[1:]; "
                  "runpy.run_path(sys.argv[0], run_name='__main__')")


def run(folder: str, options: tuple, adapter_flag: str, adapter: str = f"{sys.executable} {ADAPTER}",
        script: Path = SCRIPT, no_pidfd: bool = False) -> tuple[float, float, int]:
    """(wall s, CPU s of conform and everything it started, exit status) of one conform run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, *(NO_PIDFD if no_pidfd else ()), str(script), "conform", "--quiet",
                           "--adapter-cmd", f"{adapter}{adapter_flag}", *options, folder],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "fixtures" / "openai"))
    parser.add_argument("--repeat", type=int, default=1, help="runs per way; the best wall time is printed")
    parser.add_argument("--adapter", default=f"{sys.executable} {ADAPTER}",
                        help="the adapter command (it must take --persistent), e.g. tests/adapters/.venv/bin/python "
                             "tests/conform/openai_sdk_adapter.py; default: the reference adapter")
    parser.add_argument("--script", type=Path, help="another copy of the validator, run in turn (before/after)")
    parser.add_argument("--ways", default="1,2,3,4", help="the ways to run, by number (default 1,2,3,4)")
    parser.add_argument("--no-pidfd", action="store_true", help="conform without os.pidfd_open (Linux 5.3 and later)")
    args = parser.parse_args()
    count = sum(1 for _, _, files in os.walk(args.folder) for name in files if name.endswith(".json"))
    scripts = [("", SCRIPT)] + ([("--script ", args.script)] if args.script else [])
    print(f"{count} fixtures in {args.folder}; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
          + ("; conform without os.pidfd_open" if args.no_pidfd else ""))
    for label, path in scripts:
        print(f"# {label or 'this '}script: {path}")
    print(f"{'way':44} {'wall s':>8} {'CPU s':>8} {'fixtures/s':>11} {'exit':>5}")
    for number in (int(way) for way in args.ways.split(",")):
        name, options, flag = WAYS[number - 1]
        best: dict[str, tuple[float, float, int]] = {}
        for _ in range(max(1, args.repeat)):
            for label, path in scripts:   # in turn: a slow spell of the machine falls on both
                result = run(args.folder, options, flag, args.adapter, path, args.no_pidfd)
                best[label] = min(best.get(label, result), result)
        for label, _ in scripts:
            wall, cpu, status = best[label]
            print(f"{label + name:44} {wall:8.2f} {cpu:8.2f} {count / wall:11.1f} {status:5d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
