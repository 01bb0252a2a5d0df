"""`serve` read by the official SDK clients, over real loopback HTTP (optional).

openai-python (chat completions and Responses), the Anthropic SDK, google-genai and botocore's
bedrock-runtime client are pointed at `serve`; for every passing fixture of their profiles each
must hand over exactly the calls the SDK drivers of tests/adapters/drivers.py report for the same
payloads (or raise where the driver raises), and botocore must yield the fixture's events: every
member, block index, toolUse identity, input fragment and stop reason.
So a served stream reads as the provider's own. Skipped, naming the package, without it.
"""

import json
import os
import unittest

from support import FIXTURES, ServedFixtures, load_fixture
from adapters import drivers


class _Served(ServedFixtures, unittest.TestCase):


    def passing(self, *profiles):
        for prefix, fixture in sorted(self.served.items()):
            if fixture.profile in profiles and load_fixture(prefix + ".json")[1]["expect"]["status"] == "pass" \
                    and "error" not in fixture.fault:   # an error before the stream: the SDK's retry, not its reading
                yield prefix, fixture

    def each_pass(self, profiles, calls, driver, parsed=False):
        """Every passing fixture of these profiles: calls(self.client(prefix)) over HTTP against
        driver(payloads); the number compared."""
        checked = 0
        for prefix, fixture in self.passing(*profiles):
            client = self.client(prefix)
            with self.subTest(fixture=prefix):
                self.same(prefix, lambda: calls(client), lambda: driver(fixture.stream), parsed)
            checked += 1
        return checked

    def same(self, prefix, client, driver, parsed=False):
        """The client's calls over HTTP equal the driver's on the payloads (or both raise)."""
        try:
            want = [(c["id"], c["name"], json.loads(c["arguments"]) if parsed else c["arguments"])
                    for c in driver()]
        except drivers.DriverError:
            want = None
        try:
            got = client()
        except Exception:   # noqa: BLE001 - any SDK exception: it hands over nothing
            got = None
        self.assertEqual(got, want, prefix)


class OpenAIChat(_Served):
    MODULE = "openai"

    def client(self, prefix):
        import openai

        return openai.OpenAI(base_url=self.url + prefix + "/v1", api_key="sk-test", max_retries=0)

    def test_chat_completions_stream(self):
        def calls(client):
            with client.chat.completions.stream(model="gpt-4o", messages=[{"role": "user", "content": "x"}]) as s:
                message = s.get_final_completion().choices[0].message
            return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]

        self.assertGreaterEqual(self.each_pass(("openai", "mistral"), calls, drivers.openai_chat_stream_helper), 20)

    def test_responses_stream(self):
        def calls(client):
            with client.responses.stream(model="gpt-5", input="x") as s:
                response = s.get_final_response()
            return [(item.call_id, item.name, item.arguments if item.type == "function_call" else item.input)
                    for item in response.output if item.type in ("function_call", "custom_tool_call")]

        self.assertGreaterEqual(self.each_pass(("openai-responses",), calls, drivers.openai_responses_stream), 10)


class Anthropic(_Served):
    MODULE = "anthropic"

    def client(self, prefix):
        import anthropic

        return anthropic.Anthropic(base_url=self.url + prefix, api_key="sk-test", max_retries=0)

    def test_messages_stream(self):
        def calls(client):
            with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64,
                                        messages=[{"role": "user", "content": "x"}]) as s:
                message = s.get_final_message()
            return [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]

        self.assertGreater(self.each_pass(("anthropic",), calls, drivers.anthropic_message_stream, parsed=True), 10)


class GoogleGenai(_Served):
    MODULE = "google.genai"

    def test_generate_content_stream(self):
        from google import genai

        checked = 0
        for prefix, fixture in self.passing("gemini"):
            if any(isinstance(c, dict) and "createTime" in c for c in fixture.stream):
                continue   # Vertex payloads: the Gemini API client converts them otherwise
            client = genai.Client(api_key="test", http_options={"base_url": self.url + prefix})

            def calls():
                found = []
                for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents="x"):
                    found += [(c.id, c.name, c.args or {}) for c in chunk.function_calls or []]
                return found

            with self.subTest(fixture=prefix):
                try:
                    drivers.google_genai_chunks(fixture.stream)
                except drivers.NotAssembled:
                    continue   # streamed partialArgs: handed over in pieces, counted by the differential
                except drivers.DriverError:
                    pass
                self.same(prefix, calls, lambda: drivers.google_genai_chunks(fixture.stream), parsed=True)
            checked += 1
        self.assertGreater(checked, 5)


def tool_view(events):
    """What a ConverseStream reader builds calls from: every event's member, block index, toolUse
    start identity and input fragment, and stop reason (botocore leaves out members its model lacks)."""
    view = []
    for event in events:
        (member, body), = event.items()
        start = (body.get("start") or {}).get("toolUse") or {}
        delta = (body.get("delta") or {}).get("toolUse") or {}
        view.append((member, body.get("contentBlockIndex"), start.get("toolUseId"), start.get("name"),
                     start.get("type"), delta.get("input"), body.get("stopReason")))
    return view


class Bedrock(_Served):
    MODULE = "botocore"

    def test_converse_stream_events(self):
        import botocore.session

        checked = 0
        session = botocore.session.get_session()
        for prefix, fixture in self.passing("bedrock"):
            client = session.create_client("bedrock-runtime", region_name="us-east-1", endpoint_url=self.url + prefix,
                                           aws_access_key_id="test", aws_secret_access_key="test")
            with self.subTest(fixture=prefix):
                response = client.converse_stream(modelId="us.anthropic.claude-sonnet-4-v1:0",
                                                  messages=[{"role": "user", "content": [{"text": "x"}]}])
                self.assertEqual(tool_view(list(response["stream"])), tool_view(fixture.stream))
            checked += 1
        self.assertGreater(checked, 5)


class VercelThroughConform(unittest.TestCase):
    """The Vercel AI SDK's own providers and fetch, as an adapter command of `conform`."""

    FIXTURES = ("openai/valid-interleaved-parallel-two-tools-usage-chunk.json",
                "openai-responses/pass-parallel-calls.json",
                "anthropic/pass-three-parallel-tool-uses.json", "gemini/pass-call-with-id.json",
                "cohere/pass-parallel-calls-one-after-another.json")

    def test_passing_fixtures_agree_through_http(self):
        import shutil

        from support import ROOT, run_cli

        vercel = os.path.join(ROOT, "tests", "adapters", "vercel")
        if shutil.which("node") is None or not os.path.isdir(os.path.join(vercel, "node_modules", "@ai-sdk")):
            self.skipTest("node and tests/adapters/vercel/node_modules are needed (python3 tests/adapters/setup.py)")
        paths = [os.path.join(FIXTURES, name) for name in self.FIXTURES]
        for path in paths:
            self.assertEqual(load_fixture(os.path.relpath(path, FIXTURES))[1]["expect"]["status"], "pass", path)
        code, out, err = run_cli("conform", "--adapter-cmd", f"node {os.path.join(vercel, 'conform_adapter.mjs')}",
                                 "--report", "json", *paths)
        records = [json.loads(line) for line in out.splitlines()][:-1]
        self.assertEqual((code, len(records)), (0, len(self.FIXTURES)), err)
        self.assertEqual({r["verdict"] for r in records}, {"agree"}, records)



class FaultFixturesThroughSdkAdapters(unittest.TestCase):
    """tests/conform/anthropic_sdk_adapter.py and litellm_adapter.py (run with this interpreter) on the
    fault fixtures, as tests/conform/README.md's "Real adapters" table reports them: the SDK's default
    retries take the 429 then the stream (agree); an error on every try is refused; the Anthropic SDK
    hands over a turn cut off mid call, LiteLLM raises. Skipped, naming the package, without it."""

    def verdicts(self, module, adapter, profile, error):
        import shlex
        import sys

        from support import ROOT, run_cli

        import importlib.util

        if importlib.util.find_spec(module) is None:   # not imported here: litellm's import would fetch its cost map
            self.skipTest(f"{module} is not installed (python3 tests/adapters/setup.py)")
        names = ("missing-terminal-connection-closed-mid-call.json", "pass-http-429-rate-limit-then-the-stream-on-retry.json",
                 f"not-applicable-http-{error}-before-the-stream.json")
        command = f"{shlex.quote(sys.executable)} {shlex.quote(os.path.join(ROOT, 'tests', 'conform', adapter))}"
        code, out, err = run_cli("conform", "--adapter-cmd", command, "--report", "json",
                                 *[os.path.join(FIXTURES, profile, name) for name in names])
        records = {os.path.basename(r["fixture"]): r["verdict"] for r in map(json.loads, out.splitlines()) if "fixture" in r}
        self.assertEqual(len(records), 3, err)
        return code, [records[name] for name in names]

    def test_anthropic_sdk(self):
        self.assertEqual(self.verdicts("anthropic", "anthropic_sdk_adapter.py", "anthropic", "529-overloaded"),
                         (1, ["executes-blocked", "agree", "refuses"]))

    def test_litellm(self):
        self.assertEqual(self.verdicts("litellm", "litellm_adapter.py", "openai", "500-server-error"),
                         (0, ["refuses", "agree", "refuses"]))


if __name__ == "__main__":
    unittest.main()
