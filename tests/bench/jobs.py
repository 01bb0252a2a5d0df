#!/usr/bin/env python3
"""Fixtures per second of one validation run with --jobs 1, 2 and 0 (one per CPU).  Not a unit test.

Standard library only, Python 3.10+, Linux or macOS (it reads each run's CPU time from `wait4`).  It copies the
bundled fixtures (fixtures/, in sorted order, again and again) into a temporary folder until it holds --fixtures
of them (5,000 by default), then runs the command `validate_tool_stream.py --jobs J FOLDER` for each J, --repeat
times taken in turn, each run's standard output written to a file, and prints per J:

  wall s      the run's wall time, best of --repeat (start-up included)
  net s       the same less the start-up: the best wall time of `--version`, which loads the same script
  fixtures/s  --fixtures / net s: the rate the --jobs target is about (a start-up, about 0.4 s, is paid once
              per run whatever J is)
  x           fixtures/s against --jobs 1's
  cpu s       the run's CPU time, its workers' included (the cost of the same work spread over processes)
  cpu ms/fx   cpu s per fixture: the per-turn cost, which --jobs must leave as it is
  same        the output is byte for byte --jobs 1's

--start-methods also times, in this process, one --jobs 2 run of the same folder per way a worker may start
(fork, forkserver, spawn: see README "Many fixtures at once"), to show what each costs.

--script times another copy of the validator with --jobs 1 beside this one (a copy without --jobs is run
without it), for the per-turn cost before and after.  --report picks the format.  The load average is printed
before and after: figures taken on a busy machine say little.

Usage:
  python3 tests/bench/jobs.py
  python3 tests/bench/jobs.py --fixtures 5000 --repeat 5 --script /tmp/main.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "validate_tool_stream.py"
FIXTURES = ROOT / "fixtures"


def build(folder: Path, count: int) -> None:
    """count copies of the bundled fixtures, in their sorted order, in subfolders of 1,000."""
    bundled = sorted(path for path in FIXTURES.rglob("*.json"))
    for number in range(count):
        source = bundled[number % len(bundled)]
        target = folder / f"{number // 1000:02d}" / f"{number:05d}-{'__'.join(source.relative_to(FIXTURES).parts)}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def timed(command: list[str], output: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the process and its children, exit code) of one run, stdout to `output`."""
    with open(output, "wb") as handle:
        began = time.perf_counter()
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, process.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--report", default="json", choices=("json", "text", "junit", "github"))
    parser.add_argument("--jobs", default="1,2,0", help="the --jobs values, comma-separated (default 1,2,0)")
    parser.add_argument("--script", type=Path, help="another copy of the validator, timed with --jobs 1 beside")
    parser.add_argument("--start-methods", action="store_true", help="time a --jobs 2 run per start method")
    args = parser.parse_args()
    jobs = args.jobs.split(",")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPUs {os.cpu_count()}, "
          f"Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) / "fixtures"
        build(folder, args.fixtures)
        runs: dict[str, list[tuple[float, float, int]]] = {}
        commands = {f"--jobs {j}": [sys.executable, str(SCRIPT), "--report", args.report, "--jobs", j, str(folder)]
                    for j in jobs}
        if args.script:
            helped = subprocess.run([sys.executable, str(args.script), "--help"], capture_output=True, text=True)
            knows_jobs = "--jobs" in helped.stdout
            commands["--script"] = [sys.executable, str(args.script), "--report", args.report,
                                    *(["--jobs", "1"] if knows_jobs else []), str(folder)]
        start = [sys.executable, str(SCRIPT), "--version"]
        for _ in range(args.repeat):   # in turn, so a change of load falls on every row alike
            runs.setdefault("start-up", []).append(timed(start, Path(temporary) / "version.out"))
            for name, command in commands.items():
                runs.setdefault(name, []).append(timed(command, Path(temporary) / f"{name.replace(' ', '')}.out"))
        reference = (Path(temporary) / "--jobs1.out").read_bytes() if "1" in jobs else None
        startup = min(wall for wall, _, _ in runs["start-up"])
        print(f"start-up (--version): {startup:.3f} s; {args.fixtures} fixtures, --report {args.report}, "
              f"best of {args.repeat}")
        print(f"{'run':<10} {'wall s':>7} {'net s':>7} {'fixtures/s':>11} {'x':>5} {'cpu s':>6} {'cpu ms/fx':>9}  same")
        base = None
        for name in commands:
            wall, cpu, code = min(runs[name])
            net = max(wall - startup, 1e-9)
            rate = args.fixtures / net
            base = base or rate
            output = (Path(temporary) / f"{name.replace(' ', '')}.out").read_bytes()
            same = "-" if reference is None or name == "--script" else ("yes" if output == reference else "NO")
            print(f"{name:<10} {wall:7.2f} {net:7.2f} {rate:11.0f} {rate / base:5.2f} {cpu:6.2f} "
                  f"{1000 * cpu / args.fixtures:9.3f}  {same}")
        if args.start_methods:
            start_methods(folder, args.repeat)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def start_methods(folder: Path, repeat: int) -> None:
    """Wall time of vts.run(["--jobs", "2", folder]) in this process, per start method, best of `repeat`."""
    import io
    from contextlib import redirect_stdout
    from unittest import mock

    sys.path.insert(0, str(SCRIPT.parent))
    import validate_tool_stream as vts

    best: dict[str, float] = {}
    for _ in range(repeat):
        for method in ("fork", "forkserver", "spawn"):
            with mock.patch.object(vts, "_jobs_start_method", return_value=method), redirect_stdout(io.StringIO()):
                began = time.perf_counter()
                vts.run(["--jobs", "2", str(folder)])
                best[method] = min(best.get(method, 1e9), time.perf_counter() - began)
    print("start methods (--jobs 2, in this process): "
          + ", ".join(f"{method} {wall:.2f} s" for method, wall in best.items()))


if __name__ == "__main__":
    sys.exit(main())
