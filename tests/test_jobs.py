"""--jobs N: a run's fixtures validated in worker processes, its output the serial run's byte for byte.

Most tests run the command line in this process (run_cli); its workers are real processes.  What only a
process shows (a SIGTERM to the command, the children it leaves) starts the script (marked slow).
"""

import json
import operator
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

from support import ENV, FIXTURES, run_cli, SCRIPT, slow, vts, write
from support import fixture_paths as support_fixture_paths

FORMATS = ("json", "text", "junit", "github") + tuple(   # and the run summary's, where the tool has them
    name for name in ("summary", "summary-json", "summary-markdown") if name in vts._REPORT_FORMATS)


def forks():
    """Do workers start by fork here (a patch in this process then reaches them)?"""
    return vts._jobs_start_method() == "fork"


class SameOutput(unittest.TestCase):
    """Every bundled fixture, each report format: the same stdout, stderr and exit code with --jobs 2 as with 1."""

    def same(self, *args):
        serial = run_cli(*args, FIXTURES)
        parallel = run_cli("--jobs", "2", *args, FIXTURES)
        self.assertEqual(serial[0], parallel[0], parallel[2][-500:])
        self.assertEqual(serial[2], parallel[2])
        self.assertEqual(serial[1], parallel[1])
        return serial

    def test_each_format(self):
        for form in FORMATS:
            with self.subTest(form=form):
                code, out, _ = self.same("--report", form)
                self.assertEqual(code, 1)   # the corpus holds blocked turns
                self.assertTrue(out)

    def test_expect_redacted_quiet(self):
        # --expect writes its mismatches on stderr, in order; --quiet leaves out passes; both sides must agree
        code, _, _ = self.same("--report", "json", "--expect", "--redact-arguments", "--quiet",
                               "--allow-not-applicable")
        self.assertEqual(code, 0)   # every bundled fixture matches its expect block

    @slow("the other options, each over the whole corpus")
    def test_other_options(self):
        for form in FORMATS:
            for options in (("--quiet",), ("--expect",), ("--allow-not-applicable", "--redact-arguments"),
                            ("--expect", "--redact-arguments", "--quiet", "--allow-not-applicable")):
                with self.subTest(form=form, options=options):
                    self.same("--report", form, *options)

    def test_zero_is_one_per_cpu_and_more_jobs_than_fixtures(self):
        folder = os.path.join(FIXTURES, "cohere")
        serial = run_cli(folder)
        self.assertEqual(run_cli("--jobs", "0", folder), serial)
        self.assertEqual(run_cli("--jobs", "64", folder), serial)   # a worker per fixture at most

    def test_one_fixture_or_one_cpu_starts_no_worker(self):
        path = os.path.join(FIXTURES, "openai", sorted(os.listdir(os.path.join(FIXTURES, "openai")))[0])
        with mock.patch.object(vts, "_Jobs", side_effect=AssertionError("a worker was started")):
            self.assertEqual(run_cli("--jobs", "8", path), run_cli(path))
            with mock.patch.object(vts, "_cpu_count", return_value=1):
                self.assertEqual(run_cli("--jobs", "0", os.path.join(FIXTURES, "cohere"))[0], 1)

    @slow("starts workers by forkserver and spawn, each importing the script again")
    def test_every_start_method(self):
        folder = os.path.join(FIXTURES, "gemini")
        serial = run_cli("--report", "github", folder)
        for method in ("fork", "forkserver", "spawn"):
            if method == "fork" and not sys.platform.startswith("linux"):
                continue
            with self.subTest(method=method), mock.patch.object(vts, "_jobs_start_method", return_value=method):
                self.assertEqual(run_cli("--jobs", "2", "--report", "github", folder), serial)


def corpus_jsonl(folder):
    """Every bundled fixture as one JSON Lines line, then a blank line, one that is not JSON and one not an object."""
    lines = []
    for path in sorted(support_fixture_paths()):
        with open(os.path.join(FIXTURES, path), "rb") as handle:
            lines.append(json.dumps(json.loads(handle.read())))
    return write(folder, "corpus.jsonl", "\n".join(lines + ["", "not json", "[1]"]) + "\n")


class SameOutputJsonLines(unittest.TestCase):
    """--jsonl: the same stdout, stderr and exit code with --jobs 2 as with 1, each format."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp()
        cls.path = corpus_jsonl(cls.folder)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def test_json_and_junit(self):
        self.each_format(("json", "junit"), ((),))

    @slow("each format and options over the corpus as JSON Lines")
    def test_each_format(self):
        self.each_format(FORMATS, ((), ("--expect", "--quiet", "--redact-arguments")))

    def each_format(self, forms, option_sets):
        for form in forms:
            for options in option_sets:
                with self.subTest(form=form, options=options):
                    serial = run_cli("--jsonl", "--report", form, *options, self.path)
                    self.assertEqual(run_cli("--jsonl", "--jobs", "2", "--report", form, *options, self.path), serial)
                    self.assertEqual(serial[0], 1)

    @slow("the corpus as JSON Lines on standard input, twice")
    def test_standard_input(self):
        with open(self.path, "rb") as handle:
            data = handle.read()
        serial = run_cli("--jsonl", "-", stdin=data)
        self.assertEqual(run_cli("--jsonl", "--jobs", "3", "-", stdin=data), serial)

    def test_a_read_error_is_raised_in_its_turn(self):
        lines = vts._jsonl_lines

        def failing(handle, limit, name):
            for number, data in lines(handle, limit, name):
                if number == 40:
                    raise vts.UsageError(f"cannot read {name}: Input/output error")
                yield number, data

        with mock.patch.object(vts, "_jsonl_lines", failing):   # (read in this process, by the parent's thread)
            serial = run_cli("--jsonl", self.path)
            self.assertEqual(serial[0], 3)
            self.assertEqual(serial[1].count("\n"), 39)
            self.assertEqual(run_cli("--jsonl", "--jobs", "2", self.path), serial)


class Usage(unittest.TestCase):
    def test_bad_counts_are_usage_errors(self):
        for value in ("-1", "65", "x", "1.5", ""):
            with self.subTest(value=value):
                code, out, err = run_cli("--jobs", value, FIXTURES)
                self.assertEqual((code, out), (3, ""))
                self.assertEqual(err, "validate_tool_stream: argument --jobs: expected a whole number from 0 (one "
                                      f"per CPU) to 64, got \"{value}\" (see --help)\n")

    def test_cpu_count(self):
        self.assertGreaterEqual(vts._cpu_count(), 1)
        with mock.patch.object(os, "cpu_count", return_value=None), \
                mock.patch.object(os, "process_cpu_count", return_value=None, create=True):
            self.assertEqual(vts._cpu_count(), 1)


class InOrder(unittest.TestCase):
    """_Jobs.map on its own: answers in the items' order, a bounded window, an item's exception in its turn."""

    def test_order_and_window(self):
        pulled = []

        def items():
            for number in range(500):
                pulled.append(number)
                yield (number,)

        window = 2 * vts._JOBS_AHEAD * vts._JOBS_BATCH
        got = []
        with vts._Jobs(2, int, (), operator.add, repr) as jobs:   # work(int(), n) = n
            for answer in jobs.map(items()):
                got.append(answer)
                self.assertLessEqual(len(pulled) - len(got), window)   # never the whole input held
        self.assertEqual(got, list(range(500)))

    def test_an_item_that_raises_raises_in_its_turn(self):
        got = []
        with self.assertRaises(TypeError):
            with vts._Jobs(2, int, (), operator.add, repr) as jobs:
                for answer in jobs.map([(n,) for n in range(40)] + [("x",)] + [(n,) for n in range(40)]):
                    got.append(answer)
        self.assertEqual(got, list(range(40)))   # everything before it, nothing after

    def test_workers_are_reaped(self):
        with vts._Jobs(2, int, (), operator.add, repr) as jobs:
            self.assertEqual(list(jobs.map([(1,), (2,), (3,)])), [1, 2, 3])
            workers = list(jobs.workers)
        self.assertEqual([worker.exitcode for worker in workers], [0, 0])   # told to stop, joined
        with self.assertRaises(KeyError):
            with vts._Jobs(2, int, (), operator.add, repr) as jobs:
                next(jobs.map([(1,)] * 100))
                workers = list(jobs.workers)
                raise KeyError("the run stops early")
        self.assertTrue(all(worker.exitcode is not None for worker in workers))   # killed and joined


class WorkerFailures(unittest.TestCase):
    """What a worker raises is raised in its fixture's turn, as in the serial run; a worker that dies fails
    the run closed (exit 3, no verdict), never a report.  (Processes.test_a_worker_killed_in_a_process: the same
    wherever this process runs threads.)"""

    def setUp(self):
        if not forks():
            self.skipTest("this process runs threads, so workers do not start by fork and a patch here cannot "
                          "reach them")
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder)
        source = os.path.join(FIXTURES, "openai")
        names = sorted(os.listdir(source))[:30]
        for number, name in enumerate(names):
            with open(os.path.join(source, name), "rb") as handle:
                write(self.folder, f"{number:02d}-{name}", handle.read())
        self.marked = os.path.join(self.folder, f"17-{names[17]}")

    def patched(self, what):
        judge = vts._judge

        def failing(path, *rest):
            if path == self.marked:
                what()
            return judge(path, *rest)

        return mock.patch.object(vts, "_judge", failing)

    def test_an_exception_is_the_serial_runs(self):
        def memory():
            raise MemoryError

        def vanished():
            raise vts.UsageError(f"cannot read {self.marked}: No such file or directory")

        for what in (memory, vanished):
            with self.subTest(what=what.__name__), self.patched(what):
                serial = run_cli(self.folder)
                self.assertEqual(serial[0], 3)
                self.assertEqual(serial[1].count("\n"), 17)   # the reports before it
                self.assertEqual(run_cli("--jobs", "2", self.folder), serial)
                self.assertEqual(run_cli("--jobs", "3", "--report", "text", self.folder),
                                 run_cli("--report", "text", self.folder))

    def test_a_file_found_unreadable_after_the_workers_started(self):
        # a --jobs run opens its files while the workers judge the first batches: one that cannot be opened is
        # the serial run's usage error (exit 3), with no report printed and every worker stopped and reaped
        last = os.path.join(self.folder, sorted(os.listdir(self.folder))[-1])
        parent, opener = os.getpid(), os.open

        def refusing(path, *rest, **named):
            if path == last and os.getpid() == parent:
                raise PermissionError(13, "Permission denied", path)
            return opener(path, *rest, **named)

        started, enter = [], vts._Jobs.__enter__

        def entering(jobs):
            started.append(jobs)
            return enter(jobs)

        with mock.patch.object(os, "open", refusing):
            serial = run_cli(self.folder)
            self.assertEqual(serial, (3, "", f"validate_tool_stream: cannot read {last}: Permission denied\n"))
            with mock.patch.object(vts._Jobs, "__enter__", entering):
                for form in FORMATS:
                    with self.subTest(form=form):
                        self.assertEqual(run_cli("--jobs", "2", "--report", form, self.folder), serial)
        self.assertEqual(len(started), len(FORMATS))   # the workers had started
        self.assertTrue(all(worker.exitcode is not None for jobs in started for worker in jobs.workers))

    def test_a_worker_that_dies_fails_the_run_closed(self):
        serial = run_cli(self.folder)[1]
        with self.patched(lambda: os.kill(os.getpid(), signal.SIGKILL)):
            for form in FORMATS:
                with self.subTest(form=form):
                    code, out, err = run_cli("--jobs", "2", "--report", form, self.folder)
                    self.assertEqual(code, 3)
                    self.assertEqual(err, f"validate_tool_stream: a worker process ended (killed by signal 9) while "
                                          f"validating {self.marked}; no verdict\n")
                    self.assertNotIn("summary", out)
                    self.assertNotIn("17-", out)   # nothing of it or after it
                    if form == "json":   # what was printed is the serial run's first reports, in order
                        self.assertTrue(serial.startswith(out))


@slow("starts the command as a process and signals it")
@unittest.skipUnless(sys.platform.startswith("linux") and os.getpid() in vts._proc_entries(),
                     "reads a process's children from a /proc that shows this process")
class Processes(unittest.TestCase):
    """SIGTERM or SIGINT to the command during a --jobs run: exit 3, "interrupted; no verdict", no child left;
    --jsonl answers a line before the next is sent."""

    def run_and_signal(self, number):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        source = os.path.join(FIXTURES, "openai")
        for name in sorted(os.listdir(source)):
            with open(os.path.join(source, name), "rb") as handle:
                data = handle.read()
            for copy in range(3):
                write(folder, f"{copy}-{name}", data)
        # nobody reads its standard output until it is signalled: once the pipe is full it waits in a write,
        # in the middle of the run, whatever the machine's speed
        process = subprocess.Popen([sys.executable, SCRIPT, "--jobs", "2", folder], env=ENV,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        children, name = [], None
        for _ in range(1000):
            # its /proc entry (named by another id where /proc belongs to another pid namespace)
            name = name or vts._proc_entries().get(process.pid)
            try:
                with open(f"/proc/{name}/task/{name}/children") as handle:
                    children = handle.read().split()
            except OSError:
                children = []
            if len(children) >= 2:
                break
            time.sleep(0.01)
        self.assertEqual(len(children), 2)
        process.stdout.read(4096)   # it has begun printing
        process.send_signal(number)
        out, err = process.communicate(timeout=60)
        self.assertEqual(process.returncode, 3)
        self.assertEqual(err.decode(), "validate_tool_stream: interrupted; no verdict\n")
        for child in children:
            self.assertFalse(os.path.exists(f"/proc/{child}"), f"worker {child} is left")

    def test_jsonl_answers_each_line_before_the_next_comes(self):
        # a program that sends one line and waits for its answer (an engine's executable function) is served
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        with open(corpus_jsonl(folder), "rb") as handle:
            lines = handle.read().splitlines()[:12]
        process = subprocess.Popen([sys.executable, SCRIPT, "--jsonl", "--jobs", "2", "-"], env=ENV,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for number, line in enumerate(lines, 1):
                process.stdin.write(line + b"\n")
                process.stdin.flush()
                self.assertEqual(json.loads(process.stdout.readline())["line"], number)
            process.stdin.close()
            self.assertIn(b'"fixtures": 12', process.stdout.read())
            self.assertEqual(process.wait(60), 1)
        finally:
            process.kill()
            process.wait()
            process.stdout.close()
            process.stderr.close()

    def test_a_worker_killed_in_a_process(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        source = os.path.join(FIXTURES, "cohere")
        names = sorted(os.listdir(source))
        for name in names:
            shutil.copyfile(os.path.join(source, name), os.path.join(folder, name))
        marked = os.path.join(folder, names[20])
        driver = ("import os, signal, sys\n"
                  f"sys.path.insert(0, {os.path.dirname(SCRIPT)!r})\n"
                  "import validate_tool_stream as vts\n"
                  "judge = vts._judge\n"
                  "def dying(path, *rest):\n"
                  f"    if path == {marked!r}:\n"
                  "        os.kill(os.getpid(), signal.SIGKILL)\n"
                  "    return judge(path, *rest)\n"
                  "vts._judge = dying\n"
                  f"sys.exit(vts.main(['--jobs', '2', {folder!r}]))\n")
        done = subprocess.run([sys.executable, "-c", driver], env=ENV, capture_output=True, timeout=120)
        self.assertEqual(done.returncode, 3)
        self.assertEqual(done.stderr.decode(), "validate_tool_stream: a worker process ended (killed by signal 9) "
                                               f"while validating {marked}; no verdict\n")
        self.assertNotIn(names[20], done.stdout.decode())

    def test_sigterm(self):
        self.run_and_signal(signal.SIGTERM)

    def test_sigint(self):
        self.run_and_signal(signal.SIGINT)


if __name__ == "__main__":
    unittest.main()
