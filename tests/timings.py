"""Where the suite's time goes: per-module and per-test wall time and CPU (children included).

    PYTHONDONTWRITEBYTECODE=1 python3 tests/timings.py [pattern] [how many slowest tests]

Runs the tests that `discover` finds (default pattern test_*.py; set VTS_QUICK=1 for the quick
subset) and prints the modules, slowest first, then the slowest tests.
"""

import os
import resource
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class _Timed(unittest.TextTestResult):
    times = []

    def startTest(self, test):
        self._started = (time.perf_counter(), time.process_time(), _children_cpu())
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        wall, cpu, children = self._started
        self.times.append((test.id(), time.perf_counter() - wall,
                           time.process_time() - cpu + _children_cpu() - children))


def main(argv):
    pattern = argv[0] if argv else "test_*.py"
    shown = int(argv[1]) if len(argv) > 1 else 40
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(HERE, pattern=pattern)
    started = time.perf_counter()
    with open(os.devnull, "w") as sink:
        result = unittest.TextTestRunner(resultclass=_Timed, verbosity=0, stream=sink).run(suite)
    print(f"{result.testsRun} tests in {time.perf_counter() - started:.1f} s wall: {len(result.failures)} failures, "
          f"{len(result.errors)} errors, {len(result.skipped)} skipped")
    for test, _ in result.failures + result.errors:
        print("  FAILED", test.id())
    modules = {}
    for test_id, wall, cpu in _Timed.times:
        entry = modules.setdefault(test_id.split(".")[0], [0.0, 0.0, 0])
        entry[0] += wall
        entry[1] += cpu
        entry[2] += 1
    print("\n   wall     cpu  tests  module")
    for name, (wall, cpu, count) in sorted(modules.items(), key=lambda item: -item[1][0]):
        print(f"{wall:7.2f} {cpu:7.2f} {count:6d}  {name}")
    print("\n   wall     cpu  test")
    for test_id, wall, cpu in sorted(_Timed.times, key=lambda item: -item[1])[:shown]:
        print(f"{wall:7.2f} {cpu:7.2f}  {test_id}")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
