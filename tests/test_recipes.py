"""README's run-time recipes ("Gating a stream as you read it"), each run as written (optional SDKs).

Each recipe is the ```python block after its `<!-- recipe: NAME -->` comment in README.md, read from
README itself, so the text and its test cannot drift.  It is executed with its SDK's own client pointed at
`serve` on loopback (fake keys, no network; boto3's invoke_model_with_response_stream through an in-memory
botocore transport, since `serve` answers the anthropic profile at /v1/messages only) for every fixture of
its profile that `serve` plays as a stream: passing, blocked and not applicable, cut-off ones included.
Fault fixtures with `serve.error` are left out: the provider's HTTP error is the SDK raising before any
stream, never a report.  The recipe's report must equal `validate_envelope` of the fixture's envelope
holding what the SDK hands over (status, findings' codes and messages, calls; see _Recipe), and
`run_calls` gets the calls exactly when the report is executable; every fixture where what the SDK hands
over has another verdict than the wire is listed in the class's CHANGED, with the SDK source that says why.
A fixture whose stream the SDK itself cannot read (it raises mid-stream, e.g. on an in-stream error
event) is listed in the class's CANNOT_READ with the exception's type: the recipe must raise it, with
`.report` still None and no call handed on.  Without the SDK the class skips, naming the package.
Until branches sdk (SDK objects in feed) and fb (feed_bytes) are merged, the recipes fail where items are
SDK objects or bytes (boto3's ConverseStream items are plain dicts and pass already).
"""

import base64
import json
import logging
import os
import re
import unittest

from support import FIXTURES, ROOT, ServedFixtures, load_fixture, slow, vts

with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
    README = handle.read()

RECIPES = dict(re.findall(r"^<!-- recipe: ([a-z0-9-]+) -->\n```python\n(.*?)^```$", README, re.S | re.M))

USER = [{"role": "user", "content": "x"}]


def outcome(report):
    """A verdict at a glance: the status and the sorted set of codes."""
    return report["status"], sorted({f["code"] for f in report["findings"]})


def verdict(report):
    """What a recipe's report must share with the envelope's: status, each finding's code and message, calls."""
    return report["status"], [(f["code"], f["message"]) for f in report["findings"]], report["calls"]


class RecipesAreInReadme(unittest.TestCase):
    """Every recipe a class below runs is in README, at most ten lines, and README has no other (default run)."""

    def test_each_recipe_is_found_and_short(self):
        self.assertEqual(set(RECIPES), {cls.RECIPE for cls in _Recipe.__subclasses__()})
        for name, code in RECIPES.items():
            with self.subTest(recipe=name):
                self.assertLessEqual(len(code.splitlines()), 10)
                compile(code, name, "exec")
                self.assertIn("vts.gate_stream(", code)
        self.assertEqual(README.count("<!-- recipe: "), len(RECIPES))


def leave_out(*numbers):
    """What an SDK hands over when it skips the items at these positions of the stream."""
    return lambda stream: [item for number, item in enumerate(stream) if number not in numbers]


@slow("SDK clients over loopback HTTP, every fixture of a profile")
class _Recipe(ServedFixtures):
    """One recipe, a TestCase by its subclasses (with unittest.TestCase).

    What the recipe's report must equal is validate_envelope of the envelope whose stream is what the SDK
    hands over: the wire stream, less what the SDK skips (hands_over, for every fixture; LEFT_OUT, for one).
    Where that changes the verdict of the wire (status or codes), the fixture must be in CHANGED with the
    status the SDK's stream gets, so every such change is listed here and in the report.
    """

    RECIPE = ""
    MODULE = ""          # the import the SDK needs; the class skips, naming it, without it
    PROFILES = ()
    PARAMS = {}
    CANNOT_READ = {}     # fixture prefix -> the exception type the SDK raises while reading its stream
    LEFT_OUT = {}        # fixture prefix -> stream -> the stream the SDK hands over, where it skips more
    CHANGED = {}         # fixture prefix -> the status of what the SDK hands over, where the verdict changes
    MINIMUM = 1          # fixtures checked, at least

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        logging.getLogger("google_genai").setLevel(logging.ERROR)   # chunk.text on a call part warns
        cls.root_level = logging.getLogger().level   # cohere-python warns through the root logger when it skips
        logging.getLogger().setLevel(logging.ERROR)

    @classmethod
    def tearDownClass(cls):
        logging.getLogger().setLevel(cls.root_level)
        super().tearDownClass()

    def fixtures(self):
        """(prefix, served fixture, its envelope) for each fixture of the profiles served as a stream."""
        for prefix, fixture in sorted(self.served.items()):
            if fixture.profile in self.PROFILES and "error" not in fixture.fault:
                yield prefix, fixture, load_fixture(os.path.relpath(fixture.path, FIXTURES))[1]

    def namespace(self, prefix, fixture, doc):
        """The names the recipe assumes (README): the SDK's client for this fixture and the rest."""
        return {"client": self.client(prefix, fixture), "params": self.PARAMS}

    def hands_over(self, stream):
        """The items of a stream the SDK hands over (all, unless a class says otherwise)."""
        return stream

    def close(self, names):
        """Close the fixture's client, where the SDK's client has close()."""
        close = getattr(names["client"], "close", None)
        if close is not None:
            close()

    def test_recipe_gives_the_envelope_report_for_every_fixture(self):
        code = compile(RECIPES[self.RECIPE], f"README.md recipe {self.RECIPE}", "exec")
        checked, raised, changed = 0, set(), {}
        for prefix, fixture, doc in self.fixtures():
            with self.subTest(fixture=prefix):
                handed = []
                names = dict(self.namespace(prefix, fixture, doc), vts=vts, json=json, tool_schemas=doc["tool_schemas"],
                             request=doc.get("request"), run_calls=handed.append, print=lambda *a, **k: None)
                try:
                    checked += self.judge(prefix, fixture, doc, code, names, handed, raised, changed)
                finally:
                    self.close(names)
        self.assertEqual(raised, set(self.CANNOT_READ), "CANNOT_READ names a fixture that is not served")
        self.assertEqual(changed, self.CHANGED, "what the SDK hands over changes these verdicts")
        self.assertGreaterEqual(checked, self.MINIMUM)

    def judge(self, prefix, fixture, doc, code, names, handed, raised, changed):
        """Run the recipe on one fixture; 1 when its report was checked, 0 when its SDK cannot read it."""
        if prefix in self.CANNOT_READ:
            raised.add(prefix)
            with self.assertRaises(Exception) as caught:
                exec(code, names)
            self.assertEqual(type(caught.exception).__name__, self.CANNOT_READ[prefix])
            self.assertIsNone(names["stream"].report)
            self.assertEqual(handed, [])   # a refusal: nothing runs (a passing one is noted in the table)
            return 0
        key = fixture.row.stream_key
        seen = self.LEFT_OUT.get(prefix, lambda stream: stream)(self.hands_over(doc[key]))
        want = vts.validate_envelope(dict(doc, **{key: seen}))
        if outcome(want) != outcome(vts.validate_envelope(doc)):
            changed[prefix] = want["status"]
        self.check(names, code, handed, want)
        return 1

    def check(self, names, code, handed, want):
        exec(code, names)
        report = names["stream"].report
        self.assertIsNotNone(report)
        self.assertEqual(verdict(report), verdict(want))
        self.assertEqual(handed, [report["calls"]] if report["executable"] else [])


def openai_objects(stream, module, name):
    """The payloads as openai-python's Stream hands them over (openai/_streaming.py Stream.__stream__ ->
    _base_client.py _process_response_data -> _models.py construct_type, which coerces a value its type
    allows, such as a tool call's "index" "0", 0.0 or true to an int, and orders members as its model
    declares them), written back as JSON with the members they hold (to_dict: exclude_unset)."""
    import importlib

    from openai._models import construct_type

    kind = getattr(importlib.import_module(module), name)
    objects = (construct_type(type_=kind, value=item) for item in stream)
    return [item.to_dict(mode="json", warnings=False) if hasattr(item, "to_dict") else item for item in objects]


class OpenAIChat(_Recipe, unittest.TestCase):
    RECIPE, MODULE, PROFILES = "openai-chat", "openai", ("openai",)
    PARAMS = {"model": "gpt-4o", "messages": USER}
    MINIMUM = 90
    # openai/_streaming.py Stream.__stream__: a chunk with an "error" member raises APIError
    CANNOT_READ = {"openai/stream-error-error-member-mid-call": "APIError"}

    # construct_type makes a tool call's "index" "0", 0.0 and true the int 0 (missing_index on the wire), so
    # these three turns are blocked for other findings (identity_collision, trailing_data)
    CHANGED = {"openai/missing-index-boolean-true": "blocked", "openai/missing-index-float-zero": "blocked",
               "openai/missing-index-string-zero": "blocked"}

    def hands_over(self, stream):
        return openai_objects(stream, "openai.types.chat", "ChatCompletionChunk")

    def client(self, prefix, fixture):
        import openai

        return openai.OpenAI(base_url=self.url + prefix + "/v1", api_key="sk-test", max_retries=0)


class OpenAIResponses(_Recipe, unittest.TestCase):
    RECIPE, MODULE, PROFILES = "openai-responses", "openai", ("openai-responses",)
    PARAMS = {"model": "gpt-5", "input": "x"}
    MINIMUM = 52
    # openai/_streaming.py Stream.__stream__ raises APIError on an event with an "error" member: the WebSocket
    # mode's error event, served over SSE here
    CANNOT_READ = dict.fromkeys(("openai-responses/stream-error-websocket-error-before-any-output",
                                 "openai-responses/stream-error-websocket-error-event-mid-call"), "APIError")

    def hands_over(self, stream):
        return openai_objects(stream, "openai.types.responses", "ResponseStreamEvent")

    def client(self, prefix, fixture):
        import openai

        return openai.OpenAI(base_url=self.url + prefix + "/v1", api_key="sk-test", max_retries=0)


class Anthropic(_Recipe, unittest.TestCase):
    RECIPE, MODULE, PROFILES = "anthropic", "anthropic", ("anthropic",)
    PARAMS = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": USER}
    MINIMUM = 81
    # anthropic/_streaming.py Stream.__stream__: an "error" event raises (APIStatusError from _make_status_error)
    CANNOT_READ = {"anthropic/stream-error-overloaded-mid-tool-block": "APIStatusError"}

    def hands_over(self, stream):
        # anthropic/_streaming.py Stream.__stream__ skips an event named "ping" and one without a name; serve
        # names an event after its payload's "type" when that is a string of one line (sse_body)
        def named(item):
            kind = item.get("type") if isinstance(item, dict) else None
            return isinstance(kind, str) and kind.splitlines() == [kind] and kind != "ping"

        return [item for item in stream if named(item)]

    def client(self, prefix, fixture):
        import anthropic

        return anthropic.Anthropic(base_url=self.url + prefix, api_key="sk-test", max_retries=0)


class GoogleGenai(_Recipe, unittest.TestCase):
    RECIPE, MODULE, PROFILES = "google-genai", "google.genai", ("gemini",)
    PARAMS = {"model": "gemini-2.5-flash", "contents": "x"}
    MINIMUM = 82
    # models.py Models._generate_content_stream_with_continuation: a hop that ends on CONTINUATION with a
    # continuation token starts another (_extra_utils.py StreamContinuation.end_hop), which serve answers
    # with the same stream once more
    LEFT_OUT = {"gemini/missing-terminal-turn-ends-on-continuation": lambda stream: stream + stream}
    # a candidate "index": "0" becomes 0 (Candidate.index is an int): blocked on the wire, a pass through it
    CHANGED = {"gemini/missing-index-candidate-index-string": "pass"}
    # google/genai/types.py GenerateContentResponse._from_response validates each chunk (pydantic): a value of
    # the wrong type raises ValidationError; an integer enum (Vertex's REST with integer enums) reaches
    # _common.py CaseInSensitiveEnum._missing_, which calls .upper() on it: AttributeError, a passing Vertex
    # turn included (the Gemini API client refuses it: nothing runs); a chunk that starts {"error": raises
    # ServerError (_api_client.py BaseApiClient.request_streamed -> errors.py APIError.raise_error).
    CANNOT_READ = {"gemini/non-object-arguments-args-list": "ValidationError",
                   "gemini/not-applicable-vertex-integer-enums-text": "AttributeError",
                   "gemini/pass-vertex-integer-enums-two-calls": "AttributeError",
                   "gemini/stream-error-error-chunk-mid-stream": "ServerError",
                   "gemini/unsupported-event-avg-logprobs-not-a-number": "ValidationError",
                   "gemini/unsupported-event-thought-signature-not-base64": "ValidationError",
                   "gemini/wrong-terminal-reason-integer-finish-that-may-be-a-failed-call": "AttributeError",
                   "gemini/wrong-terminal-reason-integer-max-tokens-with-call": "AttributeError"}

    def hands_over(self, stream):
        # models.py Models._generate_content_stream: each chunk through _GenerateContentResponse_from_mldev, then
        # types.GenerateContentResponse._from_response (pydantic: a candidate index "0" becomes 0, a numberValue
        # a float), written back with the members it holds (by_alias: the wire's names; exclude_unset)
        from google.genai import types
        from google.genai.models import _GenerateContentResponse_from_mldev

        return [types.GenerateContentResponse._from_response(
                    response=_GenerateContentResponse_from_mldev(item, None, None), kwargs={}).model_dump(
                    mode="json", by_alias=True, exclude_unset=True, warnings=False) for item in stream]

    def client(self, prefix, fixture):
        from google import genai

        return genai.Client(api_key="test", http_options={"base_url": self.url + prefix})


class Cohere(_Recipe, unittest.TestCase):
    RECIPE, MODULE, PROFILES = "cohere", "cohere", ("cohere",)
    PARAMS = {"model": "command-a-03-2025", "messages": USER}
    MINIMUM = 36
    # cohere/v2/raw_client.py V2RawClient.chat_stream: an event it cannot build as one of its types (an
    # unknown type, a tool-call-start whose id is null or whose tool_calls is a list) is skipped with a
    # warning, so the gate never sees it: the first turn, blocked on the wire, passes on what it hands over
    LEFT_OUT = {"cohere/unsupported-event-unknown-event-type": leave_out(14),
                "cohere/missing-id-start-without-id": leave_out(3),
                "cohere/unsupported-event-tool-calls-as-a-list": leave_out(3)}
    CHANGED = {"cohere/unsupported-event-unknown-event-type": "pass",
               "cohere/missing-id-start-without-id": "blocked",
               "cohere/unsupported-event-tool-calls-as-a-list": "blocked"}

    def client(self, prefix, fixture):
        import cohere

        return cohere.ClientV2(api_key="test", base_url=self.url + prefix)


class Ollama(_Recipe, unittest.TestCase):
    RECIPE, MODULE, PROFILES = "ollama", "ollama", ("ollama",)
    PARAMS = {"model": "qwen3:8b", "messages": USER}
    MINIMUM = 26
    # ollama/_client.py Client._request, its inner() (stream): an {"error"} line raises ResponseError; each line is
    # validated as a ChatResponse (ollama/_types.py, pydantic): a member of the wrong type raises ValidationError
    CANNOT_READ = {"ollama/stream-error-error-line": "ResponseError",
                   "ollama/unsupported-event-arguments-as-a-string": "ValidationError",
                   "ollama/unsupported-event-arguments-null": "ValidationError",
                   "ollama/unsupported-event-content-not-a-string": "ValidationError",
                   "ollama/unsupported-event-logprobs-entry-without-logprob": "ValidationError"}

    # Client._request's inner(): each line becomes ChatResponse(**line) (ollama/_types.py, pydantic models
    # that ignore members they do not declare): a tool call keeps only its function (name, arguments), so its
    # id, index and type are gone, whatever the dump; three turns blocked on the wire for those (a shared id,
    # an index that is not an integer, a call with OpenAI's "type") pass through it
    CHANGED = {"ollama/identity-collision-two-calls-share-an-id": "pass",
               "ollama/missing-index-index-not-an-integer": "pass",
               "ollama/unsupported-event-openai-shaped-call": "pass"}

    def hands_over(self, stream):
        from ollama import ChatResponse

        return [ChatResponse(**item).model_dump(mode="json", exclude_unset=True, warnings=False)
                for item in stream]

    def client(self, prefix, fixture):
        import ollama

        return ollama.Client(host=self.url + prefix)


class Mistral(_Recipe, unittest.TestCase):
    RECIPE, MODULE, PROFILES = "mistralai", "mistralai.client", ("mistral",)
    PARAMS = {"model": "mistral-large-latest", "messages": USER}
    MINIMUM = 9
    CANNOT_READ = {}

    def client(self, prefix, fixture):
        from mistralai.client import Mistral

        return Mistral(api_key="test", server_url=self.url + prefix)


def bedrock_client(endpoint_url):
    import boto3

    return boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=endpoint_url,
                        aws_access_key_id="test", aws_secret_access_key="test")


class BedrockConverseStream(_Recipe, unittest.TestCase):
    RECIPE, MODULE, PROFILES = "boto3-converse-stream", "boto3", ("bedrock",)
    PARAMS = {"modelId": "us.anthropic.claude-sonnet-4-20250514-v1:0",
              "messages": [{"role": "user", "content": [{"text": "x"}]}]}
    MINIMUM = 34
    # botocore/eventstream.py EventStream._parse_event: an exception frame raises EventStreamError
    CANNOT_READ = {"bedrock/stream-error-model-stream-error-exception": "EventStreamError"}
    # botocore/parsers.py BaseEventStreamParser._do_parse reads an event by the service model: an event type
    # it lacks becomes {} (which EventStream.__iter__ drops), and a member it lacks is left out (the toolUse
    # start's "input"); so these two turns, blocked on the wire, pass on what boto3 hands over.
    LEFT_OUT = {"bedrock/unsupported-event-tool-use-start-with-input": lambda stream: [
                    stream[0], {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {
                        k: v for k, v in stream[1]["contentBlockStart"]["start"]["toolUse"].items() if k != "input"}}}},
                    *stream[2:]],
                "bedrock/unsupported-event-unknown-member": leave_out(1)}
    CHANGED = {"bedrock/unsupported-event-tool-use-start-with-input": "pass",
               "bedrock/unsupported-event-unknown-member": "pass"}

    def client(self, prefix, fixture):
        return bedrock_client(self.url + prefix)


class _InMemoryBody:
    """What botocore reads an event-stream response from (its `raw`): stream() and close()."""

    def __init__(self, body):
        self.body = body

    def stream(self, **_):
        yield from (self.body[at:at + 97] for at in range(0, len(self.body), 97))   # frames split anywhere

    def close(self):
        pass


class BedrockInvokeAnthropic(_Recipe, unittest.TestCase):
    """Claude through InvokeModelWithResponseStream: `serve` has no such path for the anthropic profile (its
    HttpRules answer /v1/messages), so botocore's `before-send` event answers in memory (botocore/endpoint.py,
    Endpoint._do_get_response: the first handler's AWSResponse is the response) with the fixture's events,
    each in a `chunk` frame {"bytes": base64 of the event's JSON, "p": padding}, as Bedrock frames them."""

    RECIPE, MODULE, PROFILES = "boto3-invoke-anthropic", "boto3", ("anthropic",)
    PARAMS = {"modelId": "anthropic.claude-sonnet-4-5-20250929-v1:0",
              "body": json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": USER})}
    MINIMUM = 82
    CANNOT_READ = {}

    def client(self, prefix, fixture):
        from botocore.awsrequest import AWSResponse

        body = b"".join(vts.eventstream_frame({"chunk": {
            "bytes": base64.b64encode(vts.wire_json(event).encode("utf-8", "surrogatepass")).decode("ascii"),
            "p": "abcdefgh"}}) for event in fixture.stream)
        client = bedrock_client("https://bedrock-runtime.us-east-1.amazonaws.com")

        def answer(request, **_):
            headers = {"content-type": "application/vnd.amazon.eventstream",
                       "x-amzn-bedrock-content-type": "application/json"}
            return AWSResponse(request.url, 200, headers, _InMemoryBody(body))

        client.meta.events.register("before-send.bedrock-runtime.InvokeModelWithResponseStream", answer)
        return client


class HttpxBytes(_Recipe, unittest.TestCase):
    """The raw-bytes recipe over every profile `serve` answers (gemini both as SSE and as its JSON array):
    the relayed bytes are the served body, unchanged, and the report the envelope's.  Needs StreamGate.feed_bytes
    (branch fb), which reads a body by capture's rules: where capture refuses one, the report is blocked with that
    refusal as one unsupported_event (REFUSED), although the envelope of the same payloads is judged."""

    # the gemini JSON array cut before its "]" (its envelope: missing_terminal) and the empty array "[]" (its
    # envelope: not_applicable); a stream of no events is an empty body, which httpx hands on as no piece at all:
    # the recipe's body=True makes that the empty body capture refuses, not a turn without items
    REFUSED = {"gemini/missing-terminal-connection-closed-mid-call?json-array":
               'line 2: the body starts like a JSON list but is not strict JSON: expecting "," delimiter at line 2 '
               'column 439',
               "gemini/not-applicable-empty-chunks?json-array": "the body holds no payloads",
               "anthropic/not-applicable-empty-events": "the body is empty: nothing was captured",
               "gemini/not-applicable-empty-chunks": "the body is empty: nothing was captured"}
    CHANGED = dict.fromkeys(REFUSED, "blocked")

    RECIPE, MODULE = "httpx-bytes", "httpx"
    PROFILES = tuple(name for name, row in vts.PROFILES.items() if row.http is not None
                     and not (row.http.socket is not None and row.http.socket.only))   # httpx POSTs
    MINIMUM = 516
    CANNOT_READ = {}

    def fixtures(self):
        for prefix, fixture, doc in super().fixtures():
            yield prefix, fixture, doc
            if fixture.profile == "gemini":
                yield prefix + "?json-array", fixture, doc

    def namespace(self, prefix, fixture, doc):
        import httpx

        http = fixture.row.http
        path, query = http.api_example.partition("?")[::2]
        if prefix.endswith("?json-array"):
            prefix, query = prefix[:-len("?json-array")], ""
        self.relayed = []
        self.served_body = (http.cut_frame or http.frame if fixture.fault.get("cut") else http.frame)(
            fixture.stream, query)[1]
        if getattr(self, "http", None) is None:   # one client for every fixture, as a gateway keeps one
            self.http = httpx.Client(timeout=30)
            self.addCleanup(self.http.close)
        return {"client": self.http, "url": self.url + prefix + path + ("?" + query if query else ""), "body": {},
                "profile": fixture.profile, "relay": self.relayed.append}

    def judge(self, prefix, fixture, doc, code, names, handed, raised, changed):
        if prefix not in self.REFUSED:
            return super().judge(prefix, fixture, doc, code, names, handed, raised, changed)
        changed[prefix] = "blocked"
        exec(code, names)
        refusal = [("unsupported_event", self.REFUSED[prefix])]
        self.assertEqual(verdict(names["stream"].report), ("blocked", refusal, []))
        self.assertEqual((handed, b"".join(self.relayed)), ([], self.served_body))
        return 1

    def check(self, names, code, handed, want):
        super().check(names, code, handed, want)
        self.assertEqual(b"".join(self.relayed), self.served_body)

    def close(self, names):
        pass   # one client for every fixture, closed at the end


if __name__ == "__main__":
    unittest.main()
