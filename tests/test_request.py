"""The optional request block: tool controls per profile, request_violation, capture --request."""

import json
import os
import tempfile
import unittest

from support import codes, eventstream, load_fixture, run_cli, SCHEMAS, vts


def chat_turn(*names, finish="tool_calls"):
    entries = [{"index": k, "id": f"c{k}", "type": "function", "function": {"name": n, "arguments": "{}"}}
               for k, n in enumerate(names)]
    return [{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": entries}}]},
            {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]


def run(request, *names, profile="openai", finish="tool_calls"):
    doc = {"profile": profile, "tool_schemas": SCHEMAS, "chunks": chat_turn(*names, finish=finish), "request": request}
    return vts.validate_envelope(json.loads(json.dumps(doc)))


def capture_cli(profile, body, raw, *extra):
    """Run `capture --profile P --request BODY RAW` through the real CLI: (exit code, stdout, stderr)."""
    with tempfile.TemporaryDirectory() as folder:
        req, path = os.path.join(folder, "req.json"), os.path.join(folder, "raw")
        with open(req, "w") as handle:
            json.dump(body, handle)
        with open(path, "wb") as handle:
            handle.write(raw)
        return run_cli("capture", "--profile", profile, "--request", req, *(a.replace("REQ", req) for a in extra),
                       path)


class Translators(unittest.TestCase):
    def test_each_profile_reads_its_own_tool_choice_shape(self):
        cases = [
            ("openai", {"type": "function", "function": {"name": "f"}}, "f", {"f"}),
            ("openai", {"type": "custom", "custom": {"name": "f"}}, "f", {"f"}),
            ("openai", {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
                {"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "g"}}]}},
             None, {"f", "g"}),
            ("mistral", "any", None, None),
            ("openai-responses", {"type": "function", "name": "f"}, "f", {"f"}),
            ("openai-responses", {"type": "allowed_tools", "mode": "auto", "tools": [
                {"type": "function", "name": "g"}, {"type": "web_search"}]}, None, {"g"}),
            ("openai-responses", {"type": "file_search"}, None, set()),
            ("anthropic", {"type": "tool", "name": "f"}, "f", {"f"}),
            ("anthropic", {"type": "any"}, None, None),
            ("bedrock", {"tool": {"name": "f"}}, "f", {"f"}),
            ("bedrock", {"any": {}}, None, None),
        ]
        for profile, choice, forced, allowed in cases:
            with self.subTest(profile=profile, choice=choice):
                context = vts.request_context(profile, {"tool_choice": choice})
                self.assertEqual(context.forced, forced)
                self.assertEqual(context.allowed, None if allowed is None else frozenset(allowed))

    def test_shapes_no_translator_knows_are_errors(self):
        cases = [
            ("openai", {"tool_choice": "any"}), ("openai", {"tool_choice": {"type": "function"}}),
            ("openai", {"parallel_tool_calls": "no"}), ("openai", {"tools": ["f", "f"]}), ("openai", {"tools": "f"}),
            ("openai", {"toolChoice": "auto"}), ("anthropic", {"parallel_tool_calls": False}),
            ("anthropic", {"tool_choice": {"type": "auto", "name": "f"}}), ("anthropic", {"tool_choice": "auto"}),
            ("anthropic", {"tool_choice": {"type": "auto", "disable_parallel_tool_use": "yes"}}),
            ("bedrock", {"tool_choice": {"auto": {}, "any": {}}}), ("bedrock", {"tool_choice": {"auto": {"x": 1}}}),
            ("openai-responses", {"tool_choice": {"type": "hosted_thing"}}), ("openai", []),
        ]
        for profile, request in cases:
            with self.subTest(profile=profile, request=request), self.assertRaises(vts.RequestError):
                vts.request_context(profile, request)

    def test_parallel_false_and_disable_parallel_mean_one_call(self):
        self.assertTrue(vts.request_context("openai", {"parallel_tool_calls": False}).single)
        self.assertFalse(vts.request_context("openai", {"parallel_tool_calls": True}).single)
        self.assertTrue(vts.request_context("anthropic", {"tool_choice": {
            "type": "any", "disable_parallel_tool_use": True}}).single)


class Violations(unittest.TestCase):
    def test_each_control_blocks_with_request_violation_at_the_call(self):
        for request, names, count in (({"tool_choice": "none"}, ("f",), 1),
                                      ({"parallel_tool_calls": False}, ("f", "g"), 1),
                                      ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, ("f", "g"), 1),
                                      ({"tools": ["f"]}, ("f", "g"), 1),
                                      ({"tool_choice": "none", "tools": ["g"]}, ("f",), 2)):
            with self.subTest(request=request):
                report = run(request, *names)
                self.assertEqual(codes(report), ["request_violation"] * count)
                self.assertEqual(report["findings"][0]["position"], 1)

    def test_allowed_requests_pass(self):
        for request in ({"tool_choice": "required", "parallel_tool_calls": True, "tools": ["f", "g"]},
                        {"tool_choice": "auto"}, {}):
            with self.subTest(request=request):
                self.assertEqual(run(request, "f", "g")["status"], "pass")

    def test_forced_stop_terminal_needs_exactly_one_call_of_the_forced_tool(self):
        forced = {"tool_choice": {"type": "function", "function": {"name": "f"}}}
        self.assertEqual(run(forced, "f", finish="stop")["status"], "pass")
        self.assertEqual(codes(run({}, "f", finish="stop")), ["wrong_terminal_reason"])
        self.assertEqual(codes(run(forced, "f", "f", finish="stop")), ["wrong_terminal_reason"])
        self.assertEqual(codes(run(forced, "g", finish="stop")), ["wrong_terminal_reason", "request_violation"])
        self.assertEqual(codes(run(forced, "f", finish="length")), ["wrong_terminal_reason"])
        # the stop terminal is OpenAI chat's; mistral keeps requiring tool_calls
        self.assertEqual(codes(run(forced, "f", finish="stop", profile="mistral")), ["wrong_terminal_reason"])

    def test_a_request_after_the_stream_reads_the_same(self):
        data, doc = load_fixture("openai/valid-forced-tool-choice-finish-reason-stop.json")
        late = {k: v for k, v in doc.items() if k != "request"}
        late["request"] = doc["request"]
        report = vts.validate_bytes(json.dumps(late).encode())
        self.assertEqual(report, vts.validate_bytes(data))
        self.assertEqual(report["status"], "pass")

    def test_library_gate_refuses_a_malformed_request(self):
        with self.assertRaises(ValueError):
            vts.StreamGate("openai", SCHEMAS, request={"tool_choice": "sometimes"})
        gate = vts.StreamGate("openai", SCHEMAS, request={"tool_choice": "none"})
        gate.feed_all(chat_turn("f"))
        self.assertEqual(codes(gate.finish()), ["request_violation"])

    def test_envelope_request_must_be_an_object(self):
        report = vts.validate_envelope({"profile": "openai", "tool_schemas": {}, "chunks": [], "request": None})
        self.assertEqual(codes(report), ["invalid_fixture"])


class RequestFromBody(unittest.TestCase):
    def test_every_request_format(self):
        params = {"type": "object", "properties": {"a": {"type": "string"}}}
        cases = [
            ("openai", {"messages": [{"role": "user", "content": "hi"}], "tools": [
                {"type": "function", "function": {"name": "f", "parameters": params}}],
                "tool_choice": "required", "parallel_tool_calls": False}),
            ("openai-responses", {"input": "hi", "tools": [{"type": "function", "name": "f", "parameters": params},
                                                           {"type": "web_search"}],
                                  "tool_choice": {"type": "function", "name": "f"}, "parallel_tool_calls": False}),
            ("anthropic", {"messages": [], "tools": [{"name": "f", "input_schema": params},
                                                     {"type": "web_search_20250305", "name": "web_search"}],
                           "tool_choice": {"type": "any", "disable_parallel_tool_use": True}}),
            ("bedrock", {"messages": [], "toolConfig": {"tools": [{"toolSpec": {"name": "f", "inputSchema": {
                "json": params}}}, {"systemTool": {"name": "nova_grounding"}}], "toolChoice": {"any": {}}}}),
        ]
        for profile, body in cases:
            with self.subTest(profile=profile):
                schemas, request, warnings = vts.request_from_body(profile, body)
                self.assertEqual(schemas, {"f": params})
                self.assertEqual(request["tools"], ["f"])
                self.assertNotIn("messages", request)
                self.assertEqual(warnings, [])
                vts.request_context(profile, request)

    def test_custom_tools_text_and_grammar(self):
        body = {"tools": [{"type": "custom", "name": "note", "format": {"type": "text"}},
                          {"type": "custom", "name": "patch", "format": {"type": "grammar", "syntax": "lark",
                                                                         "definition": "start: x"}}]}
        schemas, request, warnings = vts.request_from_body("openai-responses", body)
        self.assertEqual(schemas, {"note": {"type": "string"}})
        self.assertEqual(len(warnings), 1)
        self.assertIn("patch", warnings[0])

    def test_malformed_bodies(self):
        for body in ([], {"tools": {}}, {"tools": [1]}, {"tool_choice": "sometimes"},
                     {"tools": [{"type": "function", "function": {"name": "f"}}] * 2}):
            with self.subTest(body=body), self.assertRaises(vts.CaptureError):
                vts.request_from_body("openai", body)

    def test_capture_request_through_the_cli(self):
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "PROMPT-TEXT"}],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
                "tool_choice": {"type": "function", "function": {"name": "f"}}}
        sse = "".join("data: " + json.dumps(c) + "\n\n" for c in chat_turn("f", finish="stop")) + "data: [DONE]\n\n"
        code, out, err = capture_cli("openai", body, sse.encode())
        self.assertEqual(code, 0, err)
        self.assertNotIn("PROMPT-TEXT", out)
        envelope = json.loads(out)
        self.assertEqual(envelope["request"], {"tools": ["f"], "tool_choice": body["tool_choice"]})
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")
        self.assertEqual(capture_cli("openai", body, sse.encode(), "--schemas", "REQ")[0], 3)

    def test_capture_bedrock_event_stream_with_its_request(self):

        body = {"modelId": "us.amazon.nova-2-lite-v1:0", "messages": [{"role": "user", "content": [{"text": "PROMPT"}]}],
                "toolConfig": {"tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {"type": "object"}}}},
                                         {"systemTool": {"name": "nova_grounding"}}],
                               "toolChoice": {"tool": {"name": "f"}}}}
        events = [{"messageStart": {"role": "assistant"}},
                  {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {
                      "toolUseId": "tooluse_1", "name": "f", "type": "tool_use"}}}},
                  {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a":1}'}}}},
                  {"contentBlockStop": {"contentBlockIndex": 0}}, {"messageStop": {"stopReason": "tool_use"}}]
        code, out, err = capture_cli("bedrock", body, eventstream(events))
        self.assertEqual(code, 0, err)
        self.assertNotIn("PROMPT", out)
        envelope = json.loads(out)
        self.assertEqual(envelope["request"], {"tools": ["f"], "tool_choice": {"tool": {"name": "f"}}})
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")

    def test_capture_responses_stream_with_its_request(self):
        body = {"model": "gpt-5", "input": "PROMPT-TEXT", "instructions": "PROMPT-TEXT",
                "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}, {"type": "web_search"}],
                "tool_choice": {"type": "function", "name": "f"}, "parallel_tool_calls": False}
        item = {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": '{"a":1}',
                "call_id": "call_1", "name": "f"}
        events = [{"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": [],
                                                            "instructions": "PROMPT-TEXT"}},
                  {"type": "response.output_item.added", "output_index": 0, "item": dict(item, arguments="")},
                  {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1",
                   "delta": '{"a":1}'},
                  {"type": "response.output_item.done", "output_index": 0, "item": item},
                  {"type": "response.completed", "response": {"id": "r", "status": "completed", "output": [item]}}]
        sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        code, out, err = capture_cli("openai-responses", body, sse.encode())
        self.assertEqual(code, 0, err)
        self.assertNotIn("PROMPT-TEXT", out)
        envelope = json.loads(out)
        self.assertEqual(envelope["request"], {"tools": ["f"], "tool_choice": body["tool_choice"],
                                               "parallel_tool_calls": False})
        report = vts.validate_envelope(envelope)
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", '{"a":1}'))


if __name__ == "__main__":
    unittest.main()
