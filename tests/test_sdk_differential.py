"""Differential test: whenever the validator says `pass`, the real SDKs hand over the same calls.

Every bundled fixture is replayed through the stream accumulators of openai-python,
anthropic-sdk-python, openai-agents and google-genai, and through the clients of cohere-python
(ClientV2.chat_stream) and ollama-python (Client.chat, stream=True) over an in-memory body
(tests/adapters/drivers.py). When our report's status is
"pass", each driver for the fixture's profile must return exactly the report's calls: same
count and order, `name` equal, `arguments` equal byte for byte (Anthropic: equal as JSON
values, since that SDK hands over parsed objects), `id` equal, and the same `kind` (function,
or custom for a Responses custom tool call) when the report states one. Arguments are compared
as UTF-16 code units: the validator joins a surrogate pair split across fragments into one
character, openai-python keeps the two halves as two Python characters; both are the same text
to any JSON consumer.

A driver that raises means the SDK refuses a stream we let through: it hands the application
nothing, so nothing runs that was not checked, but it is still a difference. Each such refusal is
pinned in KNOWN_REFUSALS with its cause, so a new one (or one that went away) fails the test.

Optional: the SDKs are not a dependency of the validator. Each class below is skipped, naming
the missing package, when that package is not importable, so the README test command passes
with only the standard library. Install them with
`python3 -m pip install -r tests/adapters/requirements.txt`.
"""

import json
import os
import re
import subprocess
import sys
import unittest

from support import FIXTURES, fixture_paths, load_fixture, vts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from adapters import drivers  # tests/adapters/ (imports no SDK by itself)

# Drivers whose SDK (openai-python) concatenates a string `id` that a stream repeats in every
# fragment (accumulate_delta appends str to str). That changes only the id the SDK reports,
# never which calls run or their arguments, so for these drivers an SDK id equal to our id
# repeated k >= 1 times is accepted.
ID_REPEAT_DRIVERS = frozenset({"openai_chat_stream_helper", "openai_chat_state"})
# Drivers whose `arguments` is json.dumps of an already parsed object: compare as JSON values.
JSON_VALUE_DRIVERS = frozenset({"anthropic_message_stream", "google_genai_chunks", "ollama_chat_stream"})
# Drivers whose SDK type has no call id: ollama-python's Message.ToolCall (_types.py:333-349) has
# only `function`, so pydantic drops the wire's `id` (and `function.index`). The id is compared
# only where the SDK hands one over (a later SDK that keeps it is compared again).
ID_DROPPED_DRIVERS = frozenset({"ollama_chat_stream"})


def _stream_of(doc):
    if not isinstance(doc, dict):
        return None
    profile = doc.get("profile")
    key = vts.STREAM_KEY.get(profile) if isinstance(profile, str) else None
    stream = doc.get(key) if key else None
    return stream if isinstance(stream, list) else None


def _same_id(sdk_id, our_id, allow_repeat):
    if sdk_id == our_id:
        return True
    if not (allow_repeat and isinstance(sdk_id, str) and isinstance(our_id, str) and our_id):
        return False
    times, rest = divmod(len(sdk_id), len(our_id))
    return rest == 0 and times >= 1 and sdk_id == our_id * times


_typed, _utf16 = drivers.typed_json, drivers.utf16


def _same_arguments(sdk_args, our_args, as_json):
    if not as_json:
        return _utf16(sdk_args) == _utf16(our_args)  # code unit for code unit
    try:
        return _typed(json.loads(sdk_args)) == _typed(json.loads(our_args))
    except (TypeError, ValueError):
        return False


# Passing fixtures on which an SDK raises, so it hands over nothing (it runs no call at all):
# (fixture, driver) -> the cause found in the SDK's source.  Pinned so that a change shows.
KNOWN_REFUSALS = {
    ("anthropic/pass-non-ascii-surrogate-pair-split.json", "anthropic_message_stream"):
        "UnicodeEncodeError: _messages.py encodes each partial_json to UTF-8, a lone surrogate half cannot be",
    ("mistral/valid-two-whole-calls-one-delta.json", "openai_chat_stream_helper"):
        "TypeError: openai-python needs an index on every tool_calls entry; Mistral's own calls have none",
    ("mistral/valid-two-whole-calls-one-delta.json", "openai_chat_state"): "as above",
    ("mistral/valid-whole-call-no-index-no-type.json", "openai_chat_stream_helper"): "as above",
    ("mistral/valid-whole-call-no-index-no-type.json", "openai_chat_state"): "as above",
    ("openai/valid-azure-prompt-filter-and-filter-annotations.json", "openai_chat_state"):
        "AttributeError: a choice without delta (Azure filter annotations); the .stream() helper drops that chunk",
    ("openai/valid-empty-and-null-continuation-identity.json", "openai_chat_stream_helper"):
        "AssertionError: openai-python asserts type == \"function\" after a fragment with \"type\": null",
    ("openai/valid-empty-and-null-continuation-identity.json", "openai_chat_state"): "as above",
    ("openai/valid-function-and-custom-tool-call-in-parallel.json", "openai_chat_stream_helper"):
        "AttributeError: openai-python's chat stream helper has no custom tool calls (openai-node has)",
    ("openai/valid-function-and-custom-tool-call-in-parallel.json", "openai_chat_state"): "as above",
    ("gemini/pass-vertex-integer-enums-two-calls.json", "google_genai_chunks"):
        "AttributeError: google-genai reads enums as names only ('int' object has no attribute 'upper'); it never "
        "asks for enum numbers (alt=sse), only the proto-generated REST clients do",
    ("openai/valid-no-object-member-anywhere.json", "openai_chat_stream_helper"):
        "AssertionError: the .stream() helper drops every chunk without \"object\", then has no snapshot",
    ("openai/valid-object-null-in-every-chunk-as-model-dump-writes.json", "openai_chat_stream_helper"):
        "AssertionError: as above: \"object\": null is not \"chat.completion.chunk\", so every chunk is dropped",
}


# Passing fixtures on which an SDK hands over other calls without raising: (fixture, driver)
# -> the cause found in its source.  Pinned like the refusals, so that a change shows.
KNOWN_DIFFERENCES = {
    ("openai/valid-function-and-custom-tool-call-in-parallel.json", "openai_agents_chat"):
        "openai-agents' ChatCmplStreamHandler reads only function tool calls: the chat custom tool call is "
        "dropped and the function call alone runs (a subset of the checked calls)",
    ("cohere/pass-no-argument-call-start-then-end.json", "cohere_v2_chat_stream"):
        "tool-call-start (arguments \"\") then tool-call-end: cohere-python hands over the joined string \"\", "
        "our report gives {} (as the Vercel AI SDK reads it); json.loads(\"\") raises in the "
        "application, so it runs nothing rather than another call",
}


class _Refused(Exception):
    """The SDK raised on the stream: it hands over nothing."""


def _disagreement(driver_name, stream, our_calls):
    """None when the driver hands over exactly our calls, else a readable description."""
    ours = [{key: c[key] for key in ("id", "name", "arguments", "kind", "namespace") if key in c} for c in our_calls]
    try:
        sdk = drivers.DRIVERS[driver_name](stream)
    except drivers.NotAssembled:
        raise
    except drivers.DriverError as exc:
        where = f" at {exc.where}" if exc.where else ""
        raise _Refused(f"SDK raised {exc.exc_type}{where}: {exc.message}") from None
    problems = []
    if len(sdk) != len(ours):
        problems.append(f"{len(sdk)} calls, ours {len(ours)}")
    for position, (got, want) in enumerate(zip(sdk, ours)):
        if got["name"] != want["name"]:
            problems.append(f"call {position}: name")
        if got.get("namespace") != want.get("namespace"):   # part of the call's identity (openai-agents)
            problems.append(f"call {position}: namespace")
        if "kind" in got and "kind" in want and got["kind"] != want["kind"]:  # function / custom
            problems.append(f"call {position}: kind")
        if not _same_arguments(got["arguments"], want["arguments"], driver_name in JSON_VALUE_DRIVERS):
            problems.append(f"call {position}: arguments")
        if driver_name in ID_DROPPED_DRIVERS and got["id"] is None:
            pass  # the SDK has no id to hand over
        elif not _same_id(got["id"], want["id"], driver_name in ID_REPEAT_DRIVERS):
            problems.append(f"call {position}: id")
    if not problems:
        return None
    return f"{'; '.join(problems)}\n  ours: {ours}\n  sdk:  {sdk}"


def _skip_unless(*packages):
    have = drivers.available()
    missing = [name for name in packages if have.get(name) is None]
    if missing:
        raise unittest.SkipTest(
            f"{', '.join(missing)} not importable; install with "
            f"`python3 -m pip install -r tests/adapters/requirements.txt` to run the SDK differential test")


class _Differential(unittest.TestCase):
    PACKAGES = ()
    DRIVERS = ()

    @classmethod
    def setUpClass(cls):
        _skip_unless(*cls.PACKAGES)

    def _check_all_fixtures(self):
        checked = 0
        refused = {}
        differing: set = set()
        for relpath in fixture_paths():
            try:
                data, doc = load_fixture(relpath)
            except ValueError:  # not even JSON to Python: no SDK could be fed it, nothing to compare
                continue
            stream = _stream_of(doc)
            names = [name for name in drivers.PROFILE_DRIVERS.get(doc.get("profile"), ()) if name in self.DRIVERS] \
                if stream is not None else []
            if not names:
                continue
            report = None
            with self.subTest(fixture=relpath):  # a validator crash on one fixture must not hide the rest
                report = vts.validate_bytes(data)
            if report is None or report["status"] != "pass":
                continue
            for name in names:
                with self.subTest(fixture=relpath, driver=name):
                    checked += 1
                    try:
                        problem = _disagreement(name, stream, report["calls"])
                    except _Refused as exc:
                        refused[(relpath, name)] = str(exc)
                        continue
                    except drivers.NotAssembled:
                        # google-genai yields Vertex's partialArgs pieces as they come: the
                        # application assembles them, so there is no SDK reading to compare.
                        self.unassembled = getattr(self, "unassembled", 0) + 1
                        checked -= 1
                        continue
                    if problem is not None:
                        differing.add((relpath, name))
                        if (relpath, name) not in KNOWN_DIFFERENCES:
                            self.fail(f"fixtures/{relpath} passes our validator but {name} disagrees: {problem}")
        self.assertGreater(checked, 0, "no passing fixture reached these drivers")
        self.checked = checked
        known = {key for key in KNOWN_REFUSALS if key[1] in self.DRIVERS}
        self.assertEqual(set(refused) - known, set(), f"new SDK refusals: {refused}")
        self.assertEqual(known - set(refused), set(), "pinned SDK refusals that no longer happen")
        pinned = {key for key in KNOWN_DIFFERENCES if key[1] in self.DRIVERS}
        self.assertEqual(pinned - differing, set(), "pinned SDK differences that no longer happen")


class OpenAIDrivers(_Differential):
    PACKAGES = ("openai",)
    DRIVERS = ("openai_chat_stream_helper", "openai_chat_state", "openai_responses_stream")

    def test_passing_fixtures_match_openai_python(self):
        self._check_all_fixtures()

    def test_drivers_see_the_stream_helper_object_filter(self):
        """A known divergence: .stream() drops a chunk whose `object` is not exactly
        "chat.completion.chunk", raw ChatCompletionStreamState keeps it."""
        def chunk(delta, obj="chat.completion.chunk", finish=None):
            return {"id": "chatcmpl-1", "object": obj, "created": 1, "model": "m",
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        def fragment(text):
            return {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}

        start = {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}
        chunks = [chunk(start), chunk(fragment('{"city":'), obj="chat.completion.chunk.x"),
                  chunk(fragment('"Paris"}')), chunk({}, finish="tool_calls")]
        helper = drivers.openai_chat_stream_helper(chunks)
        state = drivers.openai_chat_state(chunks)
        self.assertEqual([c["arguments"] for c in state], ['{"city":"Paris"}'])
        self.assertEqual([c["arguments"] for c in helper], ['"Paris"}'])
        self.assertNotEqual(helper[0]["arguments"], state[0]["arguments"])


class AnthropicDriver(_Differential):
    PACKAGES = ("anthropic",)
    DRIVERS = ("anthropic_message_stream",)

    def test_passing_fixtures_match_anthropic_sdk(self):
        self._check_all_fixtures()


class AnthropicBedrockInvoke(unittest.TestCase):
    """Claude on Amazon Bedrock: every passing anthropic fixture, sent as an InvokeModelWithResponseStream
    body (its events base64 in chunk frames), is read by `capture --profile anthropic` and by the
    Anthropic SDK's Bedrock stream decoder; when we pass it, the SDK hands over exactly our calls."""

    @classmethod
    def setUpClass(cls):
        _skip_unless("anthropic")
        try:
            import botocore  # noqa: F401  (AnthropicBedrock's decoder needs it)
        except ImportError:
            raise unittest.SkipTest("botocore not importable; install with `python3 -m pip install -r "
                                    "tests/adapters/requirements.txt` to run the Bedrock invoke differential")

    @staticmethod
    def body(events):
        import base64
        from support import eventstream

        return eventstream([{"chunk": {"bytes": base64.b64encode(json.dumps(event).encode()).decode(),
                                       "p": "abcdefgh"}} for event in events])

    def test_passing_anthropic_fixtures_read_the_same_through_the_bedrock_client(self):
        checked = 0
        for relpath in fixture_paths():
            if not relpath.startswith("anthropic/"):
                continue
            _, doc = load_fixture(relpath)
            if doc.get("expect", {}).get("status") != "pass" or "request" in doc:
                continue
            with self.subTest(fixture=relpath):
                raw = self.body(doc["events"])
                envelope, _ = vts.sse_to_envelope(raw, "anthropic", doc["tool_schemas"], redact=False)
                report = vts.validate_envelope(envelope)
                self.assertEqual(report["status"], "pass")
                refused = KNOWN_REFUSALS.get((relpath, "anthropic_message_stream"))
                if refused is not None:   # the same accumulator: it refuses there as it does here
                    with self.assertRaises(drivers.DriverError) as caught:
                        drivers.anthropic_bedrock_invoke(raw)
                    self.assertIn(refused.split(":")[0], caught.exception.exc_type)
                    continue
                sdk = drivers.anthropic_bedrock_invoke(raw)
                self.assertEqual([(c["id"], c["name"]) for c in sdk], [(c["id"], c["name"]) for c in report["calls"]])
                for got, want in zip(sdk, report["calls"]):
                    self.assertTrue(_same_arguments(got["arguments"], want["arguments"], True))
                checked += 1
        self.assertGreater(checked, 5)

    def test_an_exception_frame_raises_in_the_sdk_and_blocks_here(self):
        from support import eventstream

        _, doc = load_fixture("anthropic/pass-bedrock-invoke-parallel-tool-use-with-invocation-metrics.json")
        raw = self.body(doc["events"][:6]) + eventstream([{"throttlingException": {"message": "slow down"}}])
        with self.assertRaises(drivers.DriverError):
            drivers.anthropic_bedrock_invoke(raw)
        envelope, _ = vts.sse_to_envelope(raw, "anthropic", doc["tool_schemas"])
        self.assertIn("stream_error", [f["code"] for f in vts.validate_envelope(envelope)["findings"]])


class AgentsDriver(_Differential):
    PACKAGES = ("openai-agents",)
    DRIVERS = ("openai_agents", "openai_agents_chat")

    def test_passing_fixtures_match_openai_agents(self):
        self._check_all_fixtures()


class GeminiDriver(_Differential):
    PACKAGES = ("google-genai",)
    DRIVERS = ("google_genai_chunks",)

    def test_passing_fixtures_match_google_genai(self):
        self._check_all_fixtures()
        self.assertGreater(getattr(self, "unassembled", 0), 0, "no streamed-arguments fixture reached the driver")

    def test_the_sdk_hands_streamed_pieces_over_unassembled(self):
        chunks = [{"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "f", "willContinue": True}}]}}]}]
        with self.assertRaises(drivers.NotAssembled):
            drivers.google_genai_chunks(chunks)


def _cohere_start(index, call_id, name, arguments=""):
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": {
        "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}}}}


def _cohere_delta(index, text):
    return {"type": "tool-call-delta", "index": index,
            "delta": {"message": {"tool_calls": {"function": {"arguments": text}}}}}


_COHERE_END = {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": {
    "billed_units": {"input_tokens": 1, "output_tokens": 2}, "tokens": {"input_tokens": 3, "output_tokens": 4}}}}


class CohereDriver(_Differential):
    PACKAGES = ("cohere",)
    DRIVERS = ("cohere_v2_chat_stream",)

    def test_passing_fixtures_match_cohere_python(self):
        self._check_all_fixtures()
        self.assertGreaterEqual(self.checked, 6)

    def test_interleaved_calls_are_assembled_by_index(self):
        events = [_cohere_start(0, "a_1", "f"), _cohere_start(1, "b_2", "g"), _cohere_delta(0, '{"x":'),
                  _cohere_delta(1, '{"y":'), _cohere_delta(0, "1}"), _cohere_delta(1, "2}"),
                  {"type": "tool-call-end", "index": 1}, {"type": "tool-call-end", "index": 0}, _COHERE_END]
        calls = drivers.cohere_v2_chat_stream(events)
        self.assertEqual([(c["id"], c["name"], c["arguments"]) for c in calls],
                         [("b_2", "g", '{"y":2}'), ("a_1", "f", '{"x":1}')])   # in order of the ends

    def test_an_event_the_sdk_cannot_parse_is_skipped(self):
        # a tool-call-start without id fits no V2ChatStreamResponse type: the SDK logs and skips it,
        # so its deltas belong to no open call (and the call is never handed over)
        no_id = _cohere_start(0, "x", "f")
        del no_id["delta"]["message"]["tool_calls"]["id"]
        with self.assertRaises(drivers.DriverError) as caught:
            drivers.cohere_v2_chat_stream([no_id, _cohere_delta(0, "{}"), _COHERE_END])
        self.assertEqual(caught.exception.exc_type, "KeyError")
        unknown = {"type": "tool-call-frob", "index": 0}
        calls = drivers.cohere_v2_chat_stream([_cohere_start(0, "a_1", "f"), unknown, _cohere_delta(0, "{}"),
                                               {"type": "tool-call-end", "index": 0}, _COHERE_END])
        self.assertEqual([c["arguments"] for c in calls], ["{}"])

    def test_a_call_without_tool_call_end_is_not_handed_over(self):
        self.assertEqual(drivers.cohere_v2_chat_stream([_cohere_start(0, "a_1", "f"), _cohere_delta(0, "{}")]), [])


class OllamaDriver(_Differential):
    PACKAGES = ("ollama",)
    DRIVERS = ("ollama_chat_stream",)

    @staticmethod
    def line(calls=None, done=False):
        message = {"role": "assistant", "content": ""}
        if calls is not None:
            message["tool_calls"] = calls
        return {"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z", "message": message, "done": done,
                **({"done_reason": "stop"} if done else {})}

    def test_passing_fixtures_match_ollama_python(self):
        self._check_all_fixtures()
        self.assertGreaterEqual(self.checked, 7)

    def test_the_sdk_drops_the_wire_id_and_index(self):
        call = {"id": "call_ab12cd34", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Tokyo"}}}
        calls = drivers.ollama_chat_stream([self.line([call]), self.line(done=True)])
        self.assertEqual(calls, [{"id": None, "name": "get_weather", "arguments": '{"city":"Tokyo"}',
                                  "kind": "function"}])

    def test_an_error_line_raises_and_a_string_argument_is_refused(self):
        call = {"function": {"name": "f", "arguments": {}}}
        with self.assertRaises(drivers.DriverError) as caught:
            drivers.ollama_chat_stream([self.line([call]), {"error": "model crashed"}])
        self.assertEqual(caught.exception.exc_type, "ResponseError")
        as_text = {"function": {"name": "f", "arguments": "{}"}}
        with self.assertRaises(drivers.DriverError) as caught:
            drivers.ollama_chat_stream([self.line([as_text]), self.line(done=True)])
        self.assertEqual(caught.exception.exc_type, "ValidationError")


class HarnessIsOptional(unittest.TestCase):
    """Runs everywhere (standard library only)."""

    def test_validator_never_imports_sdkdiff(self):
        with open(os.path.join(ROOT, "scripts", "validate_tool_stream.py"), encoding="utf-8") as handle:
            source = handle.read()
        self.assertIsNone(re.search(r"^\s*(from|import)\s+(sdkdiff|adapters)\b", source, re.M))
        # and at run time: validating a fixture in a fresh interpreter loads no driver module
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import validate_tool_stream as v; "
                "v.validate_bytes(open(sys.argv[2], 'rb').read()); "
                "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sdkdiff', 'adapters')))")
        fixture = os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json")
        proc = subprocess.run([sys.executable, "-I", "-c", code, os.path.join(ROOT, "scripts"), fixture],
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.strip(), "[]")

    def test_drivers_import_without_the_sdks(self):
        # -S: no site-packages, so none of the SDKs is importable; -I: ignore PYTHON* env and user site.
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from adapters import drivers; "
                "print(sorted(drivers.available().items())); print(sorted(m for m in sys.modules "
                "if m.split('.')[0] in ('openai', 'anthropic', 'agents', 'cohere', 'ollama', 'httpx')))")
        proc = subprocess.run([sys.executable, "-S", "-I", "-c", code, os.path.join(ROOT, "tests")],
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(lines[0], str(sorted((name, None) for name in drivers.PACKAGES)))
        self.assertEqual(lines[1], "[]")


if __name__ == "__main__":
    unittest.main()
