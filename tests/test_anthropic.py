"""The Anthropic Messages profile: content blocks and their slots, Anthropic-defined tools."""

import json
import os
import tempfile
import unittest

from support import anthropic_turn, codes, envelope, eventstream, frames_deep, judge, positions, run_cli, vts


# ---------------------------------------------------------------------------------------------------
# Anthropic content blocks (was test_stream_rules.py).
# ---------------------------------------------------------------------------------------------------


class AnthropicBlocks(unittest.TestCase):
    START = {"type": "message_start", "message": {"id": "msg_1", "content": []}}

    def events(self, *middle, reason="tool_use", stop=True):
        out = [self.START, *middle]
        if reason is not None:
            out.append({"type": "message_delta", "delta": {"stop_reason": reason}})
        if stop:
            out.append({"type": "message_stop"})
        return out

    @staticmethod
    def tool(index, id="toolu_1", name="f", input=None):
        return {"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": input or {}}}

    @staticmethod
    def part(index, text):
        return {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": text}}

    @staticmethod
    def stop(index):
        return {"type": "content_block_stop", "index": index}

    def test_empty_input_tool_uses_start_input(self):
        for middle in ([], [self.part(0, "")], [self.part(0, ""), self.part(0, "")]):
            with self.subTest(deltas=len(middle)):
                report = judge("anthropic", self.events(self.tool(0), *middle, self.stop(0)))
                self.assertEqual(report["status"], "pass", report["findings"])
                self.assertEqual(report["calls"][0]["arguments"], "{}")
                self.assertIsNone(report["calls"][0]["choice"])

    def test_start_input_used_when_no_fragments(self):
        report = judge("anthropic", self.events(self.tool(0, input={"k": "\u00e9"}), self.stop(0)))
        self.assertEqual(report["calls"][0]["arguments"], '{"k":"\u00e9"}')

    def test_truncated_by_max_tokens(self):
        report = judge("anthropic", self.events(self.tool(0), self.part(0, '{"a":'), reason="max_tokens"))
        self.assertEqual(positions(report), [("wrong_terminal_reason", 3), ("missing_terminal", None)])

    def test_events_after_message_stop(self):
        report = judge("anthropic", self.events(self.tool(0), self.part(0, "{}"), self.stop(0)) + [self.part(0, "x")])
        self.assertEqual(positions(report), [("delta_after_terminal", 6)])

    def test_ping_is_ignored_everywhere(self):
        ping = {"type": "ping"}
        report = judge("anthropic", [ping] + self.events(ping, self.tool(0), ping, self.part(0, "{}"), ping,
                                                       self.stop(0), ping))
        self.assertEqual(report["status"], "pass", report["findings"])
        late = judge("anthropic", self.events(self.tool(0), self.part(0, "{}"), self.stop(0)) + [ping])
        self.assertEqual(codes(late), ["delta_after_terminal"])  # SPEC: anything after message_stop

# ---------------------------------------------------------------------------------------------------
# Anthropic defined tools, issue 21 (was test_fidelity.py).
# ---------------------------------------------------------------------------------------------------


EXAMPLES = {   # (type, input, valid?): the documented and recorded inputs, and what the documentation rules out
    "computer_20241022": [({"action": "screenshot"}, True), ({"action": "mouse_move", "coordinate": [10, 20]}, True),
                          ({"action": "type", "text": "hi"}, True), ({"action": "type"}, False),
                          ({"action": "scroll", "scroll_direction": "up", "scroll_amount": 1}, False),
                          ({"action": "mouse_move", "coordinate": [1, 2, 3]}, False)],
    "computer_20250124": [({"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [100, 100],
                            "text": "ctrl"}, True),
                          ({"action": "left_click_drag", "coordinate": [1, 1]}, False),
                          ({"action": "scroll", "coordinate": [5, 5], "scroll_direction": "down", "scroll_amount": 3}, True),
                          ({"action": "scroll", "scroll_direction": "sideways", "scroll_amount": 3}, False),
                          ({"action": "hold_key", "text": "shift", "duration": 1.5}, True),
                          ({"action": "hold_key", "text": "shift"}, False), ({"action": "wait", "duration": 1}, True),
                          ({"action": "left_click", "coordinate": [3, 4], "key": "ctrl"}, True),
                          ({"action": "zoom", "region": [0, 0, 10, 10]}, False), ({}, False)],
    "computer_20251124": [({"action": "zoom", "region": [100, 200, 400, 350]}, True), ({"action": "zoom"}, False),
                          ({"action": "triple_click"}, True)],
    "bash_20241022": [({"command": "ls"}, True), ({"restart": True}, True), ({"restart": False}, False), ({}, False)],
    "bash_20250124": [({"command": "python3 -c \"print(2 + 2)\""}, True), ({"command": 7}, False)],
    "text_editor_20241022": [({"command": "undo_edit", "path": "/a"}, True),
                             ({"command": "insert", "path": "/a", "insert_line": 2, "new_str": "x"}, True),
                             ({"command": "insert", "path": "/a", "insert_line": 2, "insert_text": "x"}, False)],
    "text_editor_20250124": [({"command": "create", "path": "/a", "file_text": "x"}, True),
                             ({"command": "create", "path": "/a"}, False), ({"command": "view"}, False)],
    "text_editor_20250429": [({"command": "insert", "path": "/a", "insert_line": 0, "new_str": "x"}, True),
                             ({"command": "insert", "path": "/a", "insert_line": 0, "insert_text": "x"}, True),
                             ({"command": "undo_edit", "path": "/a"}, False)],
    "text_editor_20250728": [({"command": "view", "path": "hello.py"}, True),
                             ({"command": "view", "path": "/a", "view_range": [1, -1]}, True),
                             ({"command": "insert", "path": "/tmp/test.txt", "insert_line": 2, "insert_text": "HELLO\n"}, True),
                             ({"command": "insert", "path": "/a", "insert_line": 2}, False),
                             ({"command": "str_replace", "path": "/a", "old_str": "x", "new_str": "y"}, True),
                             ({"command": "str_replace", "path": "/a"}, False)],
    "memory_20250818": [({"command": "view", "path": "/memories"}, True),
                        ({"command": "rename", "old_path": "/memories/a", "new_path": "/memories/b"}, True),
                        ({"command": "rename", "old_path": "/memories/a"}, False),
                        ({"command": "insert", "path": "/m", "insert_line": 1, "insert_text": "x"}, True),
                        ({"command": "insert", "path": "/m", "insert_line": 1, "new_str": "x"}, False),
                        ({"command": "forget", "path": "/m"}, False)],
}


def anthropic_call(name, arguments):
    events = anthropic_turn([json.dumps(arguments)])
    events[1]["content_block"]["name"] = name
    return events


class Redaction(unittest.TestCase):
    """capture's redaction of anthropic events (SSE, JSON Lines and the Bedrock invoke event stream)."""

    KEY = "sk-ant-api03-" + "Zq8Wm2Rt6Yp4" * 2
    TEXT = "private words of the user"

    def bodies(self, events):
        import base64
        sse = "".join((f"event: {e['type']}\n" if isinstance(e.get("type"), str) else "event: x\n")
                      + "data: " + json.dumps(e) + "\n\n" for e in events).encode()
        lines = "".join(json.dumps(e) + "\n" for e in events).encode()
        invoke = eventstream([{"chunk": {"bytes": base64.b64encode(json.dumps(e).encode()).decode()}}
                              for e in events])
        return {"SSE": sse, "JSON Lines": lines, "Bedrock invoke": invoke}

    def test_an_event_of_an_unknown_or_no_type_keeps_only_its_shape(self):
        # issue 30: such an event was copied whole, text included
        turn = AnthropicBlocks().events(AnthropicBlocks.tool(0), AnthropicBlocks.part(0, '{"a": 1}'),
                                        AnthropicBlocks.stop(0))
        odd = [{"type": "future_event", "index": 0, "delta": {"type": "text_delta", "text": self.TEXT},
                "note": "key " + self.KEY, "n": [1, 2.5, True, None, ""]},
               {"note": self.TEXT, "delta": {"text": "key " + self.KEY}}]
        for extra in odd:
            events = turn[:3] + [extra] + turn[3:]
            for how, body in self.bodies(events).items():
                if how == "SSE" and "type" not in extra:
                    continue   # an SSE event's name must equal its type: no such body to capture
                with self.subTest(how=how, extra=extra):
                    verdicts = []
                    for redact in (False, True):
                        made, _ = vts.sse_to_envelope(body, "anthropic", {"f": {"type": "object"}}, redact)
                        report = vts.validate_envelope(made)
                        verdicts.append((report["status"], codes(report), [c["arguments"] for c in report["calls"]]))
                    self.assertEqual(verdicts, [("blocked", ["unsupported_event"], ['{"a": 1}'])] * 2)
                    text = json.dumps(made["events"])
                    for secret in (self.TEXT, self.KEY, "sk-ant", "key "):
                        self.assertNotIn(secret, text)
                    kept = made["events"][3]
                    self.assertEqual(kept.get("type"), extra.get("type"))
                    self.assertEqual(kept.get("n"), extra.get("n") and [1, 2.5, True, None, ""])
                    self.assertEqual(kept["delta"], {**({"type": "text_delta"} if "type" in extra["delta"] else {}),
                                                     "text": "[redacted]"})

    def test_reviewed_events_keep_what_the_rules_read_and_nothing_else(self):
        events = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                        "model": "claude-x", "content": [], "stop_sequence": None,
                                                        "usage": {"input_tokens": 5, "service_tier": "standard"},
                                                        "memo": self.TEXT}},
                  {"type": "ping", "memo": self.TEXT},
                  AnthropicBlocks.tool(0), dict(AnthropicBlocks.part(0, '{"a": 1}'), memo=self.TEXT),
                  dict(AnthropicBlocks.stop(0), memo=self.TEXT),
                  {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": self.TEXT},
                   "usage": {"output_tokens": 3}},
                  {"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 5}},
                  {"type": "error", "error": {"type": "overloaded_error", "message": self.TEXT}}]
        made, _ = vts.sse_to_envelope(self.bodies(events)["JSON Lines"], "anthropic", {"f": {"type": "object"}})
        out = made["events"]
        self.assertNotIn(self.TEXT, json.dumps(out))
        self.assertEqual(out[0]["message"], {"id": "msg_1", "type": "message", "role": "assistant",
                                             "model": "claude-x", "content": [], "stop_sequence": None,
                                             "usage": {"input_tokens": 5, "service_tier": "[redacted]"},
                                             "memo": "[redacted]"})
        self.assertEqual(out[2:4], [events[2], dict(events[3], memo="[redacted]")])
        self.assertEqual(out[5], {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                                                                     "stop_sequence": "[redacted]"},
                                  "usage": {"output_tokens": 3}})
        self.assertEqual(out[6], events[6])
        self.assertEqual(out[7], {"type": "error", "error": {"type": "overloaded_error", "message": "[redacted]"}})
        report = vts.validate_envelope(dict(made, events=events))
        redacted = vts.validate_envelope(made)
        self.assertEqual((redacted["status"], codes(redacted)), (report["status"], codes(report)))
        self.assertEqual(codes(redacted), ["stream_error", "delta_after_terminal"])

    def test_a_member_the_redactor_reads_nests_as_deep_as_one_it_does_not(self):
        # Each frame a deep member costs lowers how deep a capture may nest before "an event nests too
        # deeply to process": the message, a block of it and a delta cost what the same value costs
        # in a member no redactor reads (a helper with a comprehension of its own cost one frame more:
        # a capture nested 492 lists deep under message_start's message was refused)
        deep = "text"
        for _ in range(40):
            deep = [deep]
        redact = vts.PROFILES["anthropic"].capture.redact
        for kind, member, label, value in (
                ("message_start", "message", "a member", {"usage": deep}),
                ("message_start", "message", "itself", deep),
                ("message_start", "message", "a block", {"content": [{"type": "text", "text": deep}]}),
                ("content_block_delta", "delta", "a text delta", {"type": "text_delta", "text": deep}),
                ("message_delta", "delta", "a member", {"stop_reason": "end_turn", "usage": deep}),
                ("message_delta", "delta", "itself", deep)):
            with self.subTest(kind=kind, member=member, deep=label):
                read = frames_deep(lambda: redact({"type": kind, member: value}))
                unread = frames_deep(lambda: redact({"type": kind, "memo": value}))
                self.assertLessEqual(read, unread)


class AnthropicDefinedTools(unittest.TestCase):
    def test_every_reviewed_version_has_examples_and_they_hold(self):
        self.assertEqual(set(EXAMPLES), set(vts.ANTHROPIC_CLIENT_TOOLS))
        for kind, cases in EXAMPLES.items():
            name, schema = vts.ANTHROPIC_CLIENT_TOOLS[kind]
            for arguments, valid in cases:
                with self.subTest(type=kind, arguments=arguments):
                    report = vts.validate_envelope({"profile": "anthropic", "tool_schemas": {name: schema},
                                                    "events": anthropic_call(name, arguments)})
                    self.assertEqual(set(codes(report)), set() if valid else {"schema_violation"})

    def test_capture_request_keeps_them_as_known_tools(self):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 9, "tool_choice": {"type": "tool", "name": "computer"},
                "tools": [{"type": "computer_20250124", "name": "computer", "display_width_px": 1024,
                           "display_height_px": 768, "display_number": None},
                          {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool", "max_characters": 900},
                          {"type": "bash_20250124", "name": "bash", "cache_control": {"type": "ephemeral"}},
                          {"type": "memory_20250818", "name": "memory"},
                          {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
                          {"name": "f", "input_schema": {"type": "object"}}]}
        schemas, request, warnings = vts.request_from_body("anthropic", body)
        self.assertEqual(sorted(schemas), ["bash", "computer", "f", "memory", "str_replace_based_edit_tool"])
        self.assertEqual(schemas["computer"], vts.ANTHROPIC_CLIENT_TOOLS["computer_20250124"][1])
        self.assertEqual(request["tools"], ["bash", "computer", "f", "memory", "str_replace_based_edit_tool"])
        self.assertEqual(warnings, [])
        report = vts.validate_envelope({"profile": "anthropic", "tool_schemas": schemas, "request": request,
                                        "events": anthropic_call("computer", {"action": "screenshot"})})
        self.assertEqual((report["status"], codes(report)), ("pass", []))
        # the same tools as a --schemas array
        self.assertEqual(vts.schemas_from_doc(body["tools"][:4] + body["tools"][5:]), schemas)

    def test_an_unreviewed_version_is_unsupported_schema_naming_its_type(self):
        body = {"tools": [{"type": "computer_20991231", "name": "computer", "display_width_px": 1}]}
        schemas, request, _ = vts.request_from_body("anthropic", body)
        self.assertEqual(schemas, {"computer": {vts.UNREVIEWED_TOOL_KEYWORD: "computer_20991231"}})
        report = vts.validate_envelope({"profile": "anthropic", "tool_schemas": schemas, "request": request,
                                        "events": anthropic_call("computer", {"action": "screenshot"})})
        self.assertEqual(codes(report), ["unsupported_schema"])
        self.assertIn('tool type "computer_20991231"', report["findings"][0]["message"])

    def test_a_wrong_fixed_name_or_no_name_is_an_error(self):
        for tool in ({"type": "bash_20250124", "name": "shell"}, {"type": "memory_20250818"},
                     {"type": "text_editor_20250728", "name": "str_replace_editor"},
                     {"type": "bash_20991231", "name": ""}):
            with self.subTest(tool=tool), self.assertRaises(vts.CaptureError):
                vts.request_from_body("anthropic", {"tools": [tool]})

    def test_other_profiles_and_server_tools_are_unchanged(self):
        self.assertEqual(vts.request_from_body("anthropic", {"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]})[0], {})
        # an OpenAI request has no Anthropic-defined tools: a dated type there is a hosted tool, as before
        self.assertEqual(vts.request_from_body("openai-responses", {"tools": [{"type": "computer_20250124", "name": "c"}]})[0], {})

    def test_capture_through_the_cli(self):
        body = {"model": "claude-sonnet-4-6", "tools": [{"type": "bash_20250124", "name": "bash"}]}
        events = anthropic_call("bash", {"command": "ls"})
        sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
        with tempfile.TemporaryDirectory() as folder:
            request_path, body_path = os.path.join(folder, "request.json"), os.path.join(folder, "body.sse")
            with open(request_path, "w", encoding="utf-8") as handle:
                json.dump(body, handle)
            with open(body_path, "wb") as handle:
                handle.write(sse)
            code, out, err = run_cli("capture", "--profile", "anthropic", "--request", request_path, body_path)
        self.assertEqual(code, 0, err)
        envelope = json.loads(out)
        self.assertEqual(envelope["request"], {"tools": ["bash"]})
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")


class StrictBase64OnEveryPython(unittest.TestCase):
    """The invoke body's fast paths decode base64 in strict mode, which Python 3.10 lacks; its stand-in takes
    canonical base64 only (whole quads, padding only to end the last): all that the SDKs' encoders write, and
    never more than strict mode or base64.b64decode(validate=True) (the exact path) take, to the same bytes.
    What it declines goes the exact way (on 3.11 and later both run here)."""

    def test_the_310_stand_in_takes_a_subset_of_strict_mode(self):
        import base64
        import binascii
        import random

        rng = random.Random(33)
        alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \n-_\x80"
        cases = [b"", b"QUJD", b"QUI=", b"QQ==", b"Q===", b"=QUJ", b"=", b"3TXD=", b"QU=D", b"QUJ", "QUJD", "QUI\u00e9"]
        cases += [bytes(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(3000)]
        encoded = [base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.randrange(20)))) for _ in range(500)]
        for data in cases + encoded:
            try:
                got = vts._a2b_base64_strict_310(data)
            except (binascii.Error, ValueError):
                self.assertNotIn(data, encoded)   # every canonical encoding is taken
                continue
            self.assertEqual(got, base64.b64decode(data, validate=True), data)
            if vts._a2b_base64_strict is not vts._a2b_base64_strict_310:
                self.assertEqual(got, vts._a2b_base64_strict(data), data)


if __name__ == "__main__":
    unittest.main()
