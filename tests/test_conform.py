"""`conform`: an adapter command run against every served fixture, and its verdicts.

The adapter commands are small Python programs started by conform (tests/conform/ holds the
naive chat accumulator); the validator side runs in this process.
"""

import json
import os
import shlex
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

from support import FIXTURES, ROOT, run_cli, vts

NAIVE = f"{shlex.quote(sys.executable)} {shlex.quote(os.path.join(ROOT, 'tests', 'conform', 'naive_chat_adapter.py'))}"
PASS = os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json")
BLOCKED = os.path.join(FIXTURES, "openai", "wrong-terminal-reason-length-truncated-arguments.json")
OLLAMA = os.path.join(FIXTURES, "ollama", "pass-call-line-then-done-line.json")


def python(code):
    """An adapter command that runs this Python code."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def conform(*fixtures, cmd=NAIVE, extra=()):
    code, out, err = run_cli("conform", "--adapter-cmd", cmd, *extra, "--report", "json", *fixtures)
    lines = [json.loads(line) for line in out.splitlines()]
    return code, lines[:-1], lines[-1]["summary"], err


class Verdicts(unittest.TestCase):
    def test_agree_and_executes_blocked(self):
        code, records, summary, err = conform(PASS, BLOCKED)
        self.assertEqual(code, 1, err)
        verdicts = {os.path.basename(r["fixture"]): r["verdict"] for r in records}
        self.assertEqual(verdicts, {"valid-fragmented-single-call.json": "agree",
                                    "wrong-terminal-reason-length-truncated-arguments.json": "executes-blocked"})
        self.assertEqual((summary["agree"], summary["executes-blocked"]), (1, 1))
        self.assertEqual(summary["by_code"]["wrong_terminal_reason"]["executes-blocked"], 1)

    def test_differs_on_pass(self):
        changed = python('print(\'[{"id": "call_Wq8rT2mZkP4vN6xY1bC3dE5f", "name": "get_weather", '
                         '"arguments": {"city": "Lyon"}}]\')')
        code, records, _, _ = conform(PASS, cmd=changed)
        self.assertEqual((code, records[0]["verdict"], records[0]["differences"]),
                         (1, "differs-on-pass", ["call 0: arguments"]))
        same_value = python('print(\'[{"id": "call_Wq8rT2mZkP4vN6xY1bC3dE5f", "name": "get_weather", '
                            '"arguments": {"unit": "celsius", "city": "Paris"}}]\')')
        self.assertEqual(conform(PASS, cmd=same_value)[1][0]["verdict"], "agree")   # a JSON value, any order

    def test_refusals(self):
        for cmd, why in ((python("import sys; sys.exit(4)"), "exited with status 4"),
                         (python("print('not json')"), "not one JSON value"),
                         (python("print('{}')"), "not a JSON list of calls"),
                         (python("print('[{\"name\": 1, \"arguments\": \"{}\"}]')"), "call 0 is not"),
                         (python("pass"), "printed nothing")):
            with self.subTest(why=why):
                code, records, summary, err = conform(PASS, cmd=cmd)
                self.assertEqual((records[0]["verdict"], summary["refuses"]), ("refuses", 1))
                self.assertIn(why, records[0]["refused"])
                # refusing every turn is no verdict on the adapter: a broken command or URL, exit 3
                self.assertEqual(code, 3)
                self.assertIn("the adapter refused every fixture", err)
        said = conform(PASS, cmd=python("import sys; print('x' * 5000 + 'last words\\x1b[31m', file=sys.stderr); "
                                         "sys.exit(3)"))[1][0]["refused"]
        self.assertTrue(said.startswith("it exited with status 3: "), said)
        self.assertLess(len(said), 400)
        code, records, _, _ = conform(PASS, cmd=python("import time; time.sleep(30)"), extra=("--timeout", "0.5"))
        self.assertIn("did not finish within 0.5 s", records[0]["refused"])

    def test_refusing_a_blocked_turn_among_others_is_fine(self):
        only_passes = python("import os, json, subprocess, sys\n"
                             "if 'wrong-terminal' in os.environ['VTS_FIXTURE']: sys.exit(1)\n"
                             f"sys.exit(subprocess.call({shlex.split(NAIVE)!r}))")
        code, records, summary, _ = conform(PASS, BLOCKED, cmd=only_passes)
        self.assertEqual((code, summary["agree"], summary["refuses"]), (0, 1, 1))

    def test_a_command_that_cannot_start_is_a_usage_error(self):
        code, out, err = run_cli("conform", "--adapter-cmd", "/no/such/adapter", PASS)
        self.assertEqual((code, out), (3, ""))
        self.assertIn("could not be started", err)

    def test_nothing_it_started_outlives_it(self):
        # a child left running (a wrapper such as npx or sh -c often leaves one) must not write into
        # the next fixture's output: the whole process group ends with the command
        late = python("import subprocess, sys\n"
                      "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1.5); print(123)'])\n"
                      f"sys.exit(subprocess.call({shlex.split(NAIVE)!r}))")
        code, records, _, err = conform(PASS, BLOCKED, cmd=late)
        self.assertEqual([r["verdict"] for r in records], ["agree", "executes-blocked"], err)

    def test_an_empty_list_on_a_blocked_turn_is_no_execution(self):
        code, records, _, _ = conform(PASS, BLOCKED, cmd=python(
            "import os; print('[]' if 'wrong-terminal' in os.environ['VTS_FIXTURE'] else "
            "'[{\"id\": \"call_Wq8rT2mZkP4vN6xY1bC3dE5f\", \"name\": \"get_weather\", "
            "\"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}]')"))
        self.assertEqual((code, [r["verdict"] for r in records]), (0, ["agree", "refuses"]))


class Environment(unittest.TestCase):
    def test_the_command_gets_the_url_profile_fixture_and_tools(self):
        with tempfile.TemporaryDirectory() as folder:
            dump = os.path.join(folder, "env.json")
            cmd = python("import json, os; json.dump({k: v for k, v in os.environ.items() if k.startswith('VTS_')} "
                         f"| {{'tools': json.load(open(os.environ['VTS_TOOLS_FILE']))}}, open({dump!r}, 'w')); "
                         "print('[]')")
            bedrock = os.path.join(FIXTURES, "bedrock", "pass-fragmented-single-call.json")
            conform(bedrock, cmd=cmd)
            with open(dump, encoding="utf-8") as handle:
                env = json.load(handle)
        self.assertRegex(env["VTS_BASE_URL"], r"^http://127\.0\.0\.1:\d+/pass-fragmented-single-call$")
        self.assertEqual(env["VTS_API_URL"], env["VTS_BASE_URL"] + vts.PROFILES["bedrock"].api_example)
        self.assertEqual((env["VTS_PROFILE"], env["VTS_FIXTURE"]), ("bedrock", os.path.abspath(bedrock)))
        self.assertEqual(env["tools"]["tools"][0]["toolSpec"]["name"], "get_weather")

    def test_the_shell_form(self):
        with tempfile.TemporaryDirectory() as folder:
            mark = os.path.join(folder, "profile")
            cmd = f'echo "$VTS_PROFILE" > {shlex.quote(mark)}; {NAIVE}'
            code, records, _, err = conform(PASS, cmd=cmd, extra=("--shell",))
            self.assertEqual((code, records[0]["verdict"]), (0, "agree"), err)
            with open(mark, encoding="utf-8") as handle:
                self.assertEqual(handle.read(), "openai\n")
            # without --shell the words are arguments: echo prints them, which is no JSON list
            self.assertEqual(conform(PASS, cmd=cmd)[1][0]["verdict"], "refuses")

    def test_another_profile_through_its_own_api(self):
        reads_ndjson = python(
            "import json, os, urllib.request\n"
            "body = urllib.request.urlopen(urllib.request.Request(os.environ['VTS_API_URL'], data=b'{}')).read()\n"
            "calls = [c for line in body.splitlines() for c in json.loads(line)['message'].get('tool_calls') or []]\n"
            "print(json.dumps([{'id': c.get('id'), 'name': c['function']['name'], "
            "'arguments': c['function']['arguments']} for c in calls]))")
        self.assertEqual(conform(OLLAMA, cmd=reads_ndjson)[1][0]["verdict"], "agree")


class Names(unittest.TestCase):
    def test_a_fixture_name_that_needs_quoting_in_a_url(self):
        import shutil

        with tempfile.TemporaryDirectory() as folder:
            inner = os.path.join(folder, "sub dir", "ünï")
            os.makedirs(inner)
            shutil.copy(PASS, os.path.join(inner, "with space #1 %2F.json"))
            code, records, _, err = conform(folder)
        self.assertEqual((code, records[0]["verdict"]), (0, "agree"), err)

    def test_folders_whose_fixtures_share_a_name_are_a_usage_error(self):
        code, out, err = run_cli("conform", "--adapter-cmd", NAIVE, os.path.join(FIXTURES, "anthropic"),
                                 os.path.join(FIXTURES, "bedrock"))
        self.assertEqual((code, out), (3, ""))
        self.assertIn("give their common folder", err)


class Reports(unittest.TestCase):
    def test_text_junit_and_github(self):
        code, out, _ = run_cli("conform", "--adapter-cmd", NAIVE, PASS, BLOCKED)
        self.assertEqual(code, 1)
        self.assertIn("agree: ", out)
        self.assertIn("executes-blocked: ", out)
        self.assertIn("summary: fixtures 2, agree 1, differs-on-pass 0, executes-blocked 1", out)
        code, out, _ = run_cli("conform", "--adapter-cmd", NAIVE, "--report", "junit", PASS, BLOCKED)
        suite = ET.fromstring(out)
        self.assertEqual((suite.get("tests"), suite.get("failures")), ("2", "1"))
        code, out, _ = run_cli("conform", "--adapter-cmd", NAIVE, "--report", "github", PASS, BLOCKED)
        self.assertEqual([line.split("::")[1].split(" ")[0] for line in out.splitlines() if line.startswith("::")],
                         ["error"])

    def test_usage_errors(self):
        for args in (("--adapter-cmd", "", PASS), ("--adapter-cmd", "'unclosed", PASS),
                     ("--adapter-cmd", NAIVE, "--timeout", "0", PASS),
                     ("--adapter-cmd", NAIVE, os.path.join(FIXTURES, "envelope"))):
            with self.subTest(args=args):
                self.assertEqual(run_cli("conform", *args)[0], 3)

    def test_adapter_output_shapes(self):
        self.assertEqual(vts.adapter_calls_from('[{"name": "f", "arguments": {"a": 1}, "namespace": "n"}]'),
                         ([{"id": None, "name": "f", "arguments": {"a": 1}, "namespace": "n"}], ""))
        self.assertIsNone(vts.adapter_calls_from('[{"name": "f"}]')[0])
        self.assertIsNone(vts.adapter_calls_from('[{"name": "f", "arguments": "{}", "id": 5}]')[0])
        self.assertIsNone(vts.adapter_calls_from('[1]')[0])


if __name__ == "__main__":
    unittest.main()
