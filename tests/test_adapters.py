"""The adapter comparison harness (tests/adapters/): real stream adapters next to our verdict.

For each adapter whose packages are importable here, one fixture we pass must be executed
exactly as we report it (`agree`), and one fixture we block must be one the adapter would
execute anyway (`executes-blocked`) — the reason the gate exists. Each class is skipped,
naming the missing package, when it is not importable (the README's test command runs with
the standard library only). The rest is standard library only: the harness's comparison
rules, its command line, and that the validator never imports tests/adapters/.

Install the adapters with `python3 tests/adapters/setup.py` (tests/adapters/.venv) and run this file
with that environment's Python to exercise them.
"""

import ast
import json
import os
import subprocess
import sys
import unittest

from support import FIXTURES, ROOT, SCRIPT, vts

from adapters import drivers  # tests/adapters/ (imports no third-party package by itself)
from adapters import run as harness

RUN = os.path.join(ROOT, "tests", "adapters", "run.py")

# adapter -> ((fixture, expected verdict), ...): one pass it must agree on, one blocked turn it
# would execute (what the fixture shows about the library is in the comment).
CASES = {
    "openai-python": (
        ("openai/valid-fragmented-single-call.json", "agree"),
        # ChatCompletionStreamState appends the re-sent cumulative arguments: '{...}{...}' runs
        ("openai/trailing-data-cumulative-arguments-resent.json", "executes-blocked"),
        ("openai-responses/pass-parallel-calls.json", "agree"),
    ),
    "anthropic": (
        ("anthropic/pass-three-parallel-tool-uses.json", "agree"),
        # two tool_use blocks with one id: both are handed over
        ("anthropic/identity-collision-duplicate-tool-use-id.json", "executes-blocked"),
    ),
    "openai-agents": (
        ("openai-responses/pass-parallel-calls.json", "agree"),
        # response.completed names another tool than the streamed item: the final output runs
        ("openai-responses/identity-collision-final-output-other-name.json", "executes-blocked"),
    ),
    "google-genai": (
        ("gemini/pass-call-with-id.json", "agree"),
        ("gemini/identity-collision-two-calls-same-id.json", "executes-blocked"),
    ),
    "cohere": (
        ("cohere/pass-parallel-calls-one-after-another.json", "agree"),
        # assembled by index, both interleaved calls run
        ("cohere/unexpected-event-interleaved-calls.json", "executes-blocked"),
    ),
    "ollama": (
        ("ollama/pass-parallel-calls-in-separate-lines.json", "agree"),
        # no done:true line: the calls already handed over run
        ("ollama/missing-terminal-no-done-line.json", "executes-blocked"),
    ),
    "litellm": (
        ("openai/valid-fragmented-single-call.json", "agree"),
        # stream_chunk_builder joins every fragment of index 0: '{...}{...}' runs
        ("openai/trailing-data-cumulative-arguments-resent.json", "executes-blocked"),
        ("ollama/pass-call-line-then-done-line.json", "agree"),
        # ollama_chat gives each line's calls index 0..n-1 of that line: two calls in two lines are
        # joined into one call (the second's name, '{...}{...}' arguments)
        ("ollama/pass-parallel-calls-in-separate-lines.json", "differs-on-pass"),
        # cohere_chat (v2) json.loads every raw SSE line, `event:` and `data:` lines included:
        # MidStreamFallbackError on the first line of the real wire
        ("cohere/pass-single-call-pretty-printed-fragments.json", "refuses"),
    ),
    "langchain-core": (
        ("openai/valid-fragmented-single-call.json", "agree"),
        ("anthropic/pass-three-parallel-tool-uses.json", "agree"),
        # parse_partial_json completes arguments cut mid-string: the truncated call runs
        ("openai/missing-terminal-cut-mid-arguments.json", "executes-blocked"),
        ("anthropic/missing-terminal-stream-cut-mid-arguments.json", "executes-blocked"),
        ("ollama/pass-parallel-calls-in-separate-lines.json", "agree"),
        ("ollama/missing-terminal-no-done-line.json", "executes-blocked"),
        # ChatCohere.stream(): every start/delta chunk gets a fresh uuid4 id, so langchain-core never
        # merges them: name-only and arguments-only calls run next to the assembled one
        ("cohere/pass-single-call-pretty-printed-fragments.json", "differs-on-pass"),
    ),
    "vercel-ai-sdk": (
        ("anthropic/pass-three-parallel-tool-uses.json", "agree"),
        ("anthropic/identity-collision-duplicate-tool-use-id.json", "executes-blocked"),
        ("cohere/pass-parallel-calls-one-after-another.json", "agree"),
        ("cohere/identity-collision-two-calls-share-an-id.json", "executes-blocked"),
    ),
}


def _env():
    return dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **{harness.NO_REEXEC: "1"})


class _AdapterCase:
    """Mixed into one unittest.TestCase per adapter below."""

    ADAPTER = ""

    @classmethod
    def setUpClass(cls):
        missing = drivers.missing_modules(cls.ADAPTER)
        if missing:
            raise unittest.SkipTest(f"{', '.join(missing)} not importable; install with `python3 tests/adapters/setup.py` "
                                    f"and run with tests/adapters/.venv/bin/python")
        ok, info = drivers.availability(cls.ADAPTER)
        if not ok:
            if cls.ADAPTER == "vercel-ai-sdk":  # Node.js and tests/adapters/vercel/node_modules
                raise unittest.SkipTest(f"vercel-ai-sdk unavailable: {info}")
            raise AssertionError(f"{cls.ADAPTER}: packages found but unusable: {info}")

    def test_known_verdicts(self):
        for relpath, expected in CASES[self.ADAPTER]:
            with self.subTest(fixture=relpath):
                line = harness.evaluate(os.path.join(FIXTURES, relpath), [self.ADAPTER], vts, drivers)
                entry = line["adapters"][self.ADAPTER]
                self.assertEqual(entry["verdict"], expected,
                                 f"{self.ADAPTER} on fixtures/{relpath}: {json.dumps(entry)[:2000]}\n"
                                 f"ours: {line['status']} {line['codes']} {json.dumps(line['calls'])[:1000]}")
                if expected == "executes-blocked":
                    self.assertEqual(line["status"], "blocked")
                    self.assertGreaterEqual(len(entry["calls"]), 1)


for _name in drivers.ADAPTERS:
    _class = type("Adapter_" + _name.replace("-", "_"), (_AdapterCase, unittest.TestCase), {"ADAPTER": _name})
    globals()[_class.__name__] = _class
del _name, _class


class VercelBatches(unittest.TestCase):
    """run.py's one node start per group of fixtures (prefetch), with node replaced by a fake."""

    def setUp(self):
        self.module = drivers._vercel_module()
        if self.module is None or not hasattr(self.module, "prefetch"):
            self.fail("tests/adapters/vercel/driver.py has no prefetch()")
        self.batches = []
        self.real_batch = self.module.vercel_batch

        def fake_batch(jobs, timeout=None):
            self.batches.append([job["stream"][0]["n"] for job in jobs])
            return [{"calls": [{"id": "c", "name": "f", "input": {"n": job["stream"][0]["n"]}, "invalid": False}],
                     "executable": True} for job in jobs]
        self.module.vercel_batch = fake_batch
        self.addCleanup(setattr, self.module, "vercel_batch", self.real_batch)
        self.addCleanup(self.module._PREFETCHED.clear)

    def turn(self, n, profile="anthropic"):
        return (profile, [{"n": n}], {"f": {"type": "object"}}, None)

    def test_prefetched_turns_start_no_node(self):
        taken = drivers.prefetch("vercel-ai-sdk", [self.turn(1), self.turn(2), self.turn(3, "mistral")])
        self.assertEqual(taken, 2)                       # mistral: a profile the driver does not read
        self.assertEqual(self.batches, [[1, 2]])         # one process for the group
        calls = drivers.run("vercel-ai-sdk", *self.turn(2))
        self.assertEqual([c["arguments"] for c in calls], ['{"n":2}'])
        self.assertEqual(self.batches, [[1, 2]])         # read from the stored result
        drivers.run("vercel-ai-sdk", *self.turn(2))      # handed out once: now replayed on its own
        self.assertEqual(self.batches, [[1, 2], [2]])
        drivers.run("vercel-ai-sdk", "anthropic", [{"n": 1}], {"f": {"type": "object"}}, {"tools": ["f"]})
        self.assertEqual(self.batches[-1], [1])          # another request is another turn

    def test_a_failed_batch_stores_nothing(self):
        def broken(jobs, timeout=None):
            raise self.module.VercelError("driver exited 1")
        self.module.vercel_batch = broken
        self.assertEqual(drivers.prefetch("vercel-ai-sdk", [self.turn(1)]), 0)
        self.assertEqual(self.module._PREFETCHED, {})

    def test_a_batch_that_prints_no_json_stores_nothing(self):
        def garbled(jobs, timeout=None):
            return json.loads("node printed this")   # what vercel_batch raises on a non-JSON line
        self.module.vercel_batch = garbled
        self.assertEqual(drivers.prefetch("vercel-ai-sdk", [self.turn(1)]), 0)
        self.assertEqual(self.module._PREFETCHED, {})

    def test_run_py_survives_a_failing_prefetch(self):
        def garbled(jobs, timeout=None):
            if len(jobs) > 1:
                raise ValueError("not JSON")
            return [{"calls": [], "executable": True, "errors": []}]
        self.module.vercel_batch = garbled
        path = os.path.join(FIXTURES, "anthropic", "pass-three-parallel-tool-uses.json")
        turn = harness._turn(harness._load(path)[1], vts.STREAM_KEY)
        self.assertEqual(drivers.prefetch("vercel-ai-sdk", [turn, turn]), 0)
        line = harness.evaluate(path, ["vercel-ai-sdk"], vts, drivers)   # replayed on its own
        self.assertEqual(line["adapters"]["vercel-ai-sdk"]["verdict"], "refuses")

    def test_other_adapters_take_no_prefetch(self):
        self.assertEqual(drivers.prefetch("litellm", [self.turn(1, "openai")]), 0)
        self.assertEqual(self.batches, [])


class SpeedHarness(unittest.TestCase):
    """tests/adapters/speed.py's measurement loop, with a runner that times itself (the node rows)."""

    @classmethod
    def setUpClass(cls):
        import importlib.util
        spec = importlib.util.spec_from_file_location("_vts_speed", os.path.join(ROOT, "tests", "adapters", "speed.py"))
        cls.speed = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.speed)

    def test_a_self_timed_run_counts_its_own_figure(self):
        runs = []

        def runner(progress):
            runs.append(1)
            return self.speed.Timed(["result"], 0.25 + len(runs))   # slower each time: the first is best
        checked = []
        timing = self.speed.measure(runner, 3, 60, checked.append)
        self.assertEqual(timing.best, 1.25)
        self.assertEqual(timing.runs, 3)
        self.assertEqual(checked, [["result"]] * 3)   # the check sees the result, not the Timed

    def test_the_allowance_covers_what_lies_outside_a_self_timed_figure(self):
        import signal
        import time
        if not hasattr(signal, "setitimer"):
            self.skipTest("no interval timer here: speed.py sets no limit")

        def slow_start(progress):
            time.sleep(0.4)                              # node start: outside its own figure
            return self.speed.Timed(["result"], 0.01)
        self.assertIsNone(self.speed.measure(slow_start, 1, 0.2).best)            # no allowance: cut
        self.assertEqual(self.speed.measure(slow_start, 1, 0.2, None, 1.0).best, 0.01)


class VercelTimingMode(unittest.TestCase):
    """driver.mjs's time_runs mode, with node (skipped without tests/adapters/vercel/node_modules)."""

    def test_time_runs(self):
        ok, info = drivers.availability("vercel-ai-sdk")
        if not ok:
            self.skipTest(f"vercel-ai-sdk unavailable: {info}")
        module = drivers._vercel_module()
        with open(os.path.join(FIXTURES, "anthropic", "pass-three-parallel-tool-uses.json"), encoding="utf-8") as fh:
            doc = json.load(fh)
        job = {"profile": "anthropic", "tool_schemas": doc["tool_schemas"], "stream": doc["events"]}
        plain, timed = module.vercel_batch([job, dict(job, time_runs=3)])
        self.assertEqual(len(timed["timings_ms"]), 3)
        self.assertTrue(all(isinstance(t, (int, float)) and t > 0 for t in timed["timings_ms"]))
        self.assertNotIn("timings_ms", plain)
        self.assertEqual(timed["calls"], plain["calls"])
        self.assertEqual(len(plain["calls"]), 3)


def _call(call_id="c1", name="f", arguments='{"a":1}', kind="function"):
    return {"id": call_id, "name": name, "arguments": arguments, "kind": kind}


class Comparison(unittest.TestCase):
    """The harness's verdict rules (standard library only)."""

    def test_agree_compares_json_values_not_bytes(self):
        ours = [_call(arguments='{"a": 1, "b": [true]}')]
        self.assertEqual(harness.verdict("pass", [_call(arguments='{"b":[true],"a":1}')], False, False, ours),
                         ("agree", []))

    def test_true_is_not_one(self):
        result, problems = harness.verdict("pass", [_call(arguments='{"a":true}')], False, False, [_call()])
        self.assertEqual((result, problems), ("differs-on-pass", ["call 0: arguments"]))

    def test_name_count_and_order(self):
        ours = [_call("c1", "f"), _call("c2", "g")]
        self.assertEqual(harness.verdict("pass", [_call("c1", "h"), _call("c2", "g")], False, False, ours),
                         ("differs-on-pass", ["call 0: name"]))
        self.assertEqual(harness.verdict("pass", [ours[0]], False, False, ours)[1], ["1 calls, ours 2"])
        self.assertEqual(harness.verdict("pass", [ours[1], ours[0]], False, False, ours)[1],
                         ["same calls in another order"])

    def test_ids_only_when_both_have_one(self):
        self.assertEqual(harness.verdict("pass", [_call(None)], False, False, [_call("c1")])[0], "agree")
        self.assertEqual(harness.verdict("pass", [_call("made-up")], False, False, [_call(None)])[0], "agree")
        self.assertEqual(harness.verdict("pass", [_call("c9")], False, False, [_call("c1")])[1], ["call 0: id"])
        self.assertEqual(harness.verdict("pass", [_call("c1c1c1")], False, False, [_call("c1")])[1],
                         ["call 0: id (ours repeated 3 times)"])

    def test_surrogate_halves_are_the_same_text(self):
        ours = [_call(arguments='{"e":"\U0001F600"}')]
        theirs = [_call(arguments='{"e":"\ud83d\ude00"}')]  # two UTF-16 halves as two Python characters
        self.assertEqual(harness.verdict("pass", theirs, False, False, ours)[0], "agree")

    def test_custom_tool_text_against_a_json_string(self):
        ours = [_call(arguments="free text", kind="custom")]
        self.assertEqual(harness.verdict("pass", [_call(arguments='"free text"')], False, False, ours)[0], "agree")
        self.assertEqual(harness.verdict("pass", [_call(arguments="free text")], False, False, ours)[0], "agree")
        self.assertEqual(harness.verdict("pass", [_call(arguments='"other"')], False, False, ours)[0],
                         "differs-on-pass")

    def test_blocked_refused_and_not_applicable(self):
        self.assertEqual(harness.verdict("blocked", [_call()], False, False, [_call()])[0], "executes-blocked")
        self.assertEqual(harness.verdict("blocked", [], True, False, [_call()])[0], "refuses")
        self.assertEqual(harness.verdict("blocked", [], False, False, [_call()])[0], "refuses")
        self.assertEqual(harness.verdict("pass", [], True, False, [_call()])[0], "refuses")
        self.assertEqual(harness.verdict("pass", [], False, False, [_call()])[0], "refuses")
        self.assertEqual(harness.verdict("not_applicable", [], False, False, [])[0], "not-applicable")
        self.assertEqual(harness.verdict("not_applicable", [_call()], False, False, [])[0], "executes-blocked")
        self.assertEqual(harness.verdict("pass", [_call()], False, True, [_call()])[0], "not-applicable")
        # a finding about the envelope file says nothing about the stream an adapter reads
        self.assertEqual(harness.verdict("blocked", [_call()], False, False, [], ["invalid_fixture"])[0],
                         "not-applicable")

    def test_unsupported_profile_is_not_applicable(self):
        line = harness.evaluate(os.path.join(FIXTURES, "bedrock", "pass-parallel-tool-uses.json"),
                                ["openai-python"], vts, drivers)
        self.assertEqual(line["status"], "pass")
        self.assertEqual(line["adapters"]["openai-python"]["verdict"], "not-applicable")


class CommandLine(unittest.TestCase):
    def _run(self, *args):
        proc = subprocess.run([sys.executable, RUN, *args], capture_output=True, env=_env(), timeout=120, cwd=ROOT)
        return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")

    def test_help(self):
        code, out, _ = self._run("--help")
        self.assertEqual(code, 0)
        for word in ("--adapter", "--all", "--markdown", *drivers.ADAPTERS):
            self.assertIn(word, out)

    def test_usage_errors_exit_3(self):
        fixture = os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json")
        for args in ((fixture,), ("--adapter", "nope", fixture), ("--adapter", "litellm", "no/such/path.json"),
                     ("--all", "--adapter", "litellm", fixture), ("--adapter", "litellm")):
            with self.subTest(args=args):
                self.assertEqual(self._run(*args)[0], 3)

    def test_unavailable_adapter_is_named(self):
        missing = drivers.missing_modules("litellm")
        if not missing:
            self.skipTest("litellm is importable here")
        code, _, err = self._run("--adapter", "litellm", os.path.join(FIXTURES, "openai"))
        self.assertEqual(code, 3)
        self.assertIn("litellm is unavailable", err)


class Isolation(unittest.TestCase):
    """The validator stays standard-library only and never imports tests/adapters/ (or the old sdkdiff/)."""

    def test_validator_source_imports_neither(self):
        with open(SCRIPT, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                self.assertNotIn(name.split(".")[0], ("adapters", "sdkdiff"), f"line {node.lineno}: import {name}")
        for node in ast.walk(tree):  # nor by name through importlib / __import__
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.assertNotIn(node.value, ("adapters", "adapters.drivers", "sdkdiff", "sdkdiff.drivers"))

    def test_validator_run_loads_no_adapter_module(self):
        code = ("import runpy, sys\n"
                f"sys.argv = ['vts', {os.path.join(FIXTURES, 'openai', 'valid-fragmented-single-call.json')!r}]\n"
                "try:\n"
                f"    runpy.run_path({SCRIPT!r}, run_name='__main__')\n"
                "except SystemExit:\n"
                "    pass\n"
                "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('adapters', 'sdkdiff', 'openai', "
                "'anthropic', 'litellm', 'langchain_core', 'agents', 'google'))\n"
                "sys.stderr.write(repr(bad))\n")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=_env(), timeout=120, cwd=ROOT)
        self.assertEqual(proc.stderr.decode().strip().splitlines()[-1], "[]")

    def test_harness_imports_no_third_party_package_by_itself(self):
        code = ("import sys\n"
                f"sys.path.insert(0, {os.path.join(ROOT, 'tests')!r})\n"
                "import adapters.drivers, adapters.run\n"
                "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'litellm', "
                "'langchain_core', 'langchain_openai', 'langchain_anthropic', 'langchain_cohere', "
                "'langchain_ollama', 'agents', 'google', 'cohere', 'ollama', 'httpx', 'httpx2', 'pydantic'))\n"
                "print(repr(bad))\n")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=_env(), timeout=120, cwd=ROOT)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        self.assertEqual(proc.stdout.decode().strip(), "[]")


if __name__ == "__main__":
    unittest.main()
