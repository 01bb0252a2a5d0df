"""Gateway and provider-defined-tool fidelity: each rule read from a public recording or reference.

Restated finishes (OpenRouter), Groq's executed tools, argument integers beyond JavaScript's
safe range on every profile, Anthropic-defined client tools, Responses namespaces, Bedrock
system tools named like client tools, Gemini enums sent as proto numbers, and capture's refusal
of bodies no profile reads.  Every case asserts exact codes (and calls where there are any).
"""

import copy
import json
import os
import tempfile
import unittest

from support import codes, run_cli, vts
from test_capture import eventstream

# --- OpenRouter: a finish restated on a usage chunk ------------------------------------------

USAGE = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}


def orc(delta, finish=None, native=None, choice=0, **top):
    body = {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "provider": "P",
            "choices": [{"index": choice, "delta": delta, "finish_reason": finish, "native_finish_reason": native}]}
    body.update(top)
    return body


R = {"role": "assistant", "content": ""}
CALL = [orc({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]}),
        orc({"role": "assistant", "content": None, "tool_calls": [{"index": 0, "function": {"arguments": '{"a":1}'}}]})]
F1 = orc(R, "tool_calls", "tool_use")
F2 = orc(R, "tool_calls", "tool_use", usage=USAGE)
SCHEMAS = {"f": {"type": "object", "properties": {"a": {"type": "integer"}}}}


def chat(stream, profile="openai", schemas=SCHEMAS, **extra):
    return vts.validate_envelope({"profile": profile, "tool_schemas": schemas, "chunks": stream, **extra})


class RestatedFinish(unittest.TestCase):
    def assertOutcome(self, stream, status, found, restated=None, profile="openai"):
        report = chat(stream, profile)
        self.assertEqual((report["status"], sorted(set(codes(report)))), (status, found), report["findings"])
        self.assertEqual(report.get("restated_finishes"), restated)
        return report

    def test_the_openrouter_ending_passes_and_is_reported(self):
        for profile in ("openai", "mistral"):
            with self.subTest(profile=profile):
                report = self.assertOutcome(CALL + [F1, F2], "pass", [],
                                            [{"choice": 0, "reason": "tool_calls", "position": 3}], profile)
                self.assertEqual([(c["id"], c["arguments"]) for c in report["calls"]], [("call_1", '{"a":1}')])
        # usage chunks with choices [] (or an empty delta and no finish) may follow
        self.assertOutcome(CALL + [F1, F2, orc({}, usage=USAGE), {**orc({}), "choices": []}], "pass", [],
                           [{"choice": 0, "reason": "tool_calls", "position": 3}])

    def test_what_the_restating_choice_may_hold(self):
        for delta in ({}, {"role": "assistant"}, {"content": None, "reasoning": None, "reasoning_details": []},
                      {"content": "", "role": "assistant", "tool_calls": []}, None):
            with self.subTest(delta=delta):
                self.assertOutcome(CALL + [F1, orc(delta, "tool_calls", "completed", usage=USAGE)], "pass", [],
                                   [{"choice": 0, "reason": "tool_calls", "position": 3}])
        restate = orc(R, "tool_calls", usage=USAGE)
        restate["choices"][0]["logprobs"] = None
        del restate["choices"][0]["native_finish_reason"]
        self.assertOutcome(CALL + [F1, restate], "pass", [], [{"choice": 0, "reason": "tool_calls", "position": 3}])

    def test_every_other_repetition_stays_a_finding(self):
        content = orc({"role": "assistant", "content": "x"}, "tool_calls", usage=USAGE)
        logprobs = orc(R, "tool_calls", usage=USAGE)
        logprobs["choices"][0]["logprobs"] = {"content": []}
        message = orc(R, "tool_calls", usage=USAGE)
        message["choices"][0]["message"] = {"role": "assistant"}
        two = orc(R, "tool_calls", usage=USAGE)
        two["choices"].append({"index": 1, "delta": {}, "finish_reason": None})
        tool_data = orc({"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}, "tool_calls", usage=USAGE)
        cases = [
            ([F1, orc(R, "stop", "end_turn", usage=USAGE)], ["duplicate_terminal"]),          # another reason
            ([F1, orc(R, "tool_calls", "tool_use")], ["duplicate_terminal"]),                 # no usage
            ([F1, orc(R, "tool_calls", usage=[])], ["duplicate_terminal"]),                   # usage not an object
            ([F1, content], ["duplicate_terminal"]),                                          # content inside
            ([F1, logprobs], ["duplicate_terminal"]),
            ([F1, message], ["duplicate_terminal"]),
            ([F1, two], ["duplicate_terminal"]),                                              # a second choice
            ([F1, orc({"content": "x"}), F2], ["duplicate_terminal"]),                         # content between
            ([F1, F2, F2], ["duplicate_terminal"]),                                           # restated twice
            ([F1, tool_data], ["delta_after_terminal", "duplicate_terminal"]),
            ([F1, F2, orc({"content": "late"})], ["delta_after_terminal"]),                    # content after
            ([F1, F2, orc({"tool_calls": [{"index": 0, "function": {"arguments": "1"}}]})], ["delta_after_terminal"]),
        ]
        for tail, found in cases:
            with self.subTest(tail=json.dumps(tail)[-160:]):
                report = chat(CALL + tail)
                self.assertEqual((report["status"], sorted(set(codes(report)))), ("blocked", found))

    def test_a_restatement_of_another_choice_or_before_any_finish_is_not_one(self):
        # the repeat must address the finished choice; a first finish on a usage chunk is just a finish
        self.assertOutcome(CALL + [F2], "pass", [], None)
        other = orc(R, "tool_calls", choice=1, usage=USAGE)
        self.assertOutcome(CALL + [F1, other], "blocked", ["missing_slot"], None)

    def test_text_only_turns_list_it_and_stay_not_applicable(self):
        self.assertOutcome([orc({"content": "hi"}), orc(R, "stop", "stop"), orc(R, "stop", "stop", usage=USAGE)],
                           "not_applicable", [], [{"choice": 0, "reason": "stop", "position": 2}])

    def test_fed_item_by_item_and_in_the_text_report(self):
        gate = vts.StreamGate("openai", SCHEMAS)
        for item in CALL + [F1, F2]:
            gate.feed(item)
        report = gate.finish()
        self.assertEqual(report, chat(CALL + [F1, F2]) | {"meta": None})
        text = vts.render_text(report)
        self.assertIn('note: choice 0 restated its finish_reason "tool_calls" at position 3', text)
        self.assertNotIn("restated_finishes", vts.render_json(chat(CALL + [F1])))


# --- Groq: tools Groq ran itself ----------------------------------------------------------------

def gq(delta, finish=None):
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "groq/compound",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


SEARCH = {"index": 0, "type": "search", "arguments": '{"query": "q"}'}


class GroqExecutedTools(unittest.TestCase):
    def test_a_search_sent_twice_is_one_hosted_use(self):
        stream = [gq({"reasoning": "r"}), gq({"executed_tools": [dict(SEARCH, search_results={"results": []})]}),
                  gq({"executed_tools": [dict(SEARCH, output="o", search_results={"results": [{"title": "t"}]})]}),
                  gq({"content": "answer"}), gq({}, "stop")]
        report = chat(stream, schemas={})
        self.assertEqual((report["status"], report["hosted_tools"], codes(report)), ("not_applicable", {"web_search": 1}, []))
        two = stream[:2] + [gq({"executed_tools": [dict(SEARCH, index=1)]})] + stream[3:]
        self.assertEqual(chat(two, schemas={})["hosted_tools"], {"web_search": 2})

    def test_beside_a_client_call_the_call_is_gated_as_usual(self):
        stream = [gq({"executed_tools": [SEARCH]})] + [dict(c, model="groq/compound") for c in CALL] + [
            gq({}, "tool_calls")]
        report = chat(stream)
        self.assertEqual((report["status"], report["hosted_tools"]), ("pass", {"web_search": 1}))

    def test_unreviewed_shapes(self):
        for entries in ("x", [1], [dict(SEARCH, type="python")], [dict(SEARCH, index=-1)], [dict(SEARCH, index=True)],
                        [dict(SEARCH, output=7)], [dict(SEARCH, arguments={})], [dict(SEARCH, extra=1)],
                        [dict(SEARCH, type=None)], [dict(SEARCH, search_results=[])]):
            with self.subTest(entries=entries):
                report = chat([gq({"executed_tools": entries}), gq({}, "stop")], schemas={})
                self.assertEqual((report["status"], codes(report), report["hosted_tools"]),
                                 ("blocked", ["unsupported_event"], {}))
        self.assertEqual(chat([gq({"executed_tools": None}), gq({}, "stop")], schemas={})["status"], "not_applicable")

    def test_messages_say_what_is_wrong_and_a_name_member_is_read(self):
        for entry, words in ((dict(SEARCH, extra=1), 'the member "extra"'), (dict(SEARCH, type="python"), 'type "python"'),
                             (dict(SEARCH, output=7), "output 7, not str"), (dict(SEARCH, index=-1), "index -1")):
            with self.subTest(entry=entry):
                report = chat([gq({"executed_tools": [entry]}), gq({}, "stop")], schemas={})
                self.assertIn(words, report["findings"][0]["message"])
        report = chat([gq({"executed_tools": [dict(SEARCH, name="search")]}), gq({}, "stop")], schemas={})
        self.assertEqual((report["status"], report["hosted_tools"]), ("not_applicable", {"web_search": 1}))

    def test_one_index_two_types(self):
        report = chat([gq({"executed_tools": [SEARCH]}), gq({"executed_tools": [dict(SEARCH, type="search")]}),
                       gq({}, "stop")], schemas={})
        self.assertEqual(report["status"], "not_applicable")
        old = vts._GROQ_EXECUTED_TOOLS
        try:   # a second reviewed type, to reach the rule
            vts._GROQ_EXECUTED_TOOLS = {"search": "web_search", "python": "code_execution"}
            report = chat([gq({"executed_tools": [SEARCH]}), gq({"executed_tools": [dict(SEARCH, type="python")]}),
                           gq({}, "stop")], schemas={})
        finally:
            vts._GROQ_EXECUTED_TOOLS = old
        self.assertEqual(codes(report), ["unexpected_event"])


# --- integers beyond +/-(2^53 - 1), on every profile -------------------------------------------

def anthropic_turn(pieces=(), start_input=None):
    events = [{"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
              {"type": "content_block_start", "index": 0, "content_block": {
                  "type": "tool_use", "id": "toolu_1", "name": "f", "input": start_input or {}}}]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}
               for p in pieces]
    return events + [{"type": "content_block_stop", "index": 0},
                     {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}]


def responses_turn(arguments):
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""}
    return [{"type": "response.created", "response": {"output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": arguments},
            {"type": "response.output_item.done", "output_index": 0, "item": dict(item, arguments=arguments)},
            {"type": "response.completed", "response": {"output": None}}]


def bedrock_turn(arguments):
    return [{"messageStart": {"role": "assistant"}},
            {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}},
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": arguments}}}},
            {"contentBlockStop": {"contentBlockIndex": 0}}, {"messageStop": {"stopReason": "tool_use"}}]


def gemini_turn(value):
    return [{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": value}}}]},
                             "finishReason": "STOP"}]}]


def chat_turn(arguments):
    return [orc({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f",
                                                                                              "arguments": arguments}}]}),
            orc({}, "tool_calls")]


class UnsafeIntegers(unittest.TestCase):
    TURNS = {
        "openai": lambda n: ("chunks", chat_turn('{"a":%d}' % n)),
        "mistral": lambda n: ("chunks", chat_turn('{"a":%d}' % n)),
        "anthropic": lambda n: ("events", anthropic_turn(['{"a":', str(n), "}"])),
        "anthropic start input": lambda n: ("events", anthropic_turn(start_input={"a": n})),
        "openai-responses": lambda n: ("events", responses_turn('{"a":%d}' % n)),
        "bedrock": lambda n: ("events", bedrock_turn('{"a":[%d]}' % n)),
        "gemini": lambda n: ("chunks", gemini_turn(n)),
    }

    def run_turn(self, name, value):
        key, stream = self.TURNS[name](value)
        profile = name.split()[0]
        return vts.validate_envelope({"profile": profile, "tool_schemas": {"f": {"type": "object"}}, key: stream})

    def test_the_safe_range_ends_pass_and_beyond_is_limit_exceeded_with_one_message(self):
        safe = 2 ** 53 - 1
        messages = set()
        for name in self.TURNS:
            for value in (safe, -safe, 0, 2 ** 52 + 1):
                with self.subTest(profile=name, value=value):
                    self.assertEqual(self.run_turn(name, value)["status"], "pass")
            for value in (safe + 1, -safe - 1, 2 ** 60, -(10 ** 300)):
                with self.subTest(profile=name, value=value):
                    report = self.run_turn(name, value)
                    self.assertEqual((report["status"], codes(report)), ("blocked", ["limit_exceeded"]))
                    messages.add(report["findings"][0]["message"])
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("+/-(2^53 - 1)", messages.pop())

    def test_doubles_are_not_limited(self):
        for text in ('{"a":9007199254740993.0}', '{"a":1e300}', '{"a":-9.3e18}', '{"a":12345678901234567890.5}'):
            with self.subTest(text=text):
                self.assertEqual(chat(chat_turn(text))["status"], "pass")

    def test_a_gemini_number_piece_says_the_same(self):
        piece = {"jsonPath": "$.a", "numberValue": 2 ** 53}
        stream = [{"candidates": [{"content": {"role": "model", "parts": [
                      {"functionCall": {"name": "f", "willContinue": True}}]}}]},
                  {"candidates": [{"content": {"role": "model", "parts": [
                      {"functionCall": {"partialArgs": [piece], "willContinue": True}}]}}]},
                  {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {}}]}, "finishReason": "STOP"}]}]
        report = vts.validate_envelope({"profile": "gemini", "tool_schemas": {"f": {"type": "object"}}, "chunks": stream})
        self.assertEqual(codes(report), ["limit_exceeded"])
        self.assertIn(vts.UNSAFE_INTEGER_MESSAGE, report["findings"][0]["message"])


# --- Anthropic-defined client tools ---------------------------------------------------------------

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


# --- Responses namespaces -----------------------------------------------------------------------

NS_SCHEMAS = {"crm.weather": {"type": "object", "properties": {"c": {"type": "string"}}, "required": ["c"],
                              "additionalProperties": False},
              "billing.weather": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                                  "additionalProperties": False},
              "weather": {"type": "object", "properties": {"x": {"type": "boolean"}}, "additionalProperties": False}}


def ns_item(index, namespace, arguments, **extra):
    item = {"id": f"fc_{index}", "type": "function_call", "call_id": f"call_{index}", "name": "weather",
            "arguments": arguments}
    if namespace is not None:
        item["namespace"] = namespace
    return dict(item, **extra)


def ns_turn(calls, final="same", done=None, snapshot=None):
    """calls: [(namespace, arguments)]; final: output namespaces for response.completed (or 'same')."""
    events = [{"type": "response.created", "response": {"output": snapshot or []}}]
    for index, (namespace, arguments) in enumerate(calls):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": ns_item(index, namespace, "")})
        events.append({"type": "response.function_call_arguments.delta", "output_index": index,
                       "item_id": f"fc_{index}", "delta": arguments})
        done_namespace = namespace if done is None else done[index]
        events.append({"type": "response.output_item.done", "output_index": index,
                       "item": ns_item(index, done_namespace, arguments)})
    spaces = [c[0] for c in calls] if final == "same" else final
    output = [ns_item(i, spaces[i], c[1]) for i, c in enumerate(calls)]
    return events + [{"type": "response.completed", "response": {"output": output}}]


def responses(events, schemas=NS_SCHEMAS, **extra):
    return vts.validate_envelope({"profile": "openai-responses", "tool_schemas": schemas, "events": events, **extra})


class Namespaces(unittest.TestCase):
    def test_one_name_in_two_namespaces_is_two_tools(self):
        report = responses(ns_turn([("crm", '{"c":"x"}'), ("billing", '{"n":1}'), (None, '{"x":true}')]))
        self.assertEqual((report["status"], codes(report)), ("pass", []))
        self.assertEqual([c.get("namespace") for c in report["calls"]], ["crm", "billing", None])
        self.assertNotIn("namespace", report["calls"][2])
        swapped = responses(ns_turn([("crm", '{"n":1}'), ("billing", '{"c":"x"}')]))
        self.assertEqual({(f["index"], f["code"]) for f in swapped["findings"]},
                         {(0, "schema_violation"), (1, "schema_violation")})

    def test_a_namespace_equal_to_the_name_is_the_deferred_top_level_function(self):
        report = responses(ns_turn([("weather", '{"x":true}')]))
        self.assertEqual((report["status"], report["calls"][0]["namespace"]), ("pass", "weather"))

    def test_a_namespaced_call_never_takes_a_bare_schema(self):
        report = responses(ns_turn([("crm", '{"x":true}')]), schemas={"weather": NS_SCHEMAS["weather"]})
        self.assertEqual(codes(report), ["unknown_tool"])
        self.assertIn('"crm.weather"', report["findings"][0]["message"])

    def test_restatements_must_agree(self):
        cases = [
            (dict(final=["billing"]), ["identity_collision"]),      # the final output moves it
            (dict(final=[None]), ["identity_collision"]),           # the final output drops it
            (dict(done=[None]), ["identity_collision"]),            # the done item drops it
            (dict(done=["billing"]), ["identity_collision"]),
        ]
        for change, found in cases:
            with self.subTest(change=change):
                self.assertEqual(sorted(set(codes(responses(ns_turn([("crm", '{"c":"x"}')], **change))))), found)
        # a namespace that only the final output names
        self.assertEqual(codes(responses(ns_turn([(None, '{"x":true}')], final=["crm"]))), ["identity_collision"])
        # a snapshot that restates the streamed call in another namespace
        events = ns_turn([("crm", '{"c":"x"}')])
        events.insert(2, {"type": "response.in_progress", "response": {"output": [ns_item(0, "billing", "")]}})
        self.assertEqual(codes(responses(events)), ["identity_collision"])
        # null and absent both mean none
        events = ns_turn([(None, '{"x":true}')])
        events[-1]["response"]["output"][0]["namespace"] = None
        self.assertEqual(responses(events)["status"], "pass")

    def test_namespace_shapes(self):
        for bad in ("", 7, ["crm"], {"n": 1}, True):
            with self.subTest(namespace=bad):
                self.assertIn("unsupported_event", codes(responses(ns_turn([(bad, '{"c":"x"}')]))))

    def test_request_tools_and_tool_choice_use_the_qualified_name(self):
        turn = ns_turn([("crm", '{"c":"x"}')])
        self.assertEqual(responses(turn, request={"tools": ["crm.weather"]})["status"], "pass")
        self.assertEqual(codes(responses(turn, request={"tools": ["weather"]})), ["request_violation"])
        forced = {"tool_choice": {"type": "function", "name": "crm.weather"}}
        self.assertEqual(responses(turn, request=forced)["status"], "pass")
        forced = {"tool_choice": {"type": "function", "name": "billing.weather"}}
        self.assertEqual(codes(responses(turn, request=forced)), ["request_violation"])

    def test_capture_request_reads_namespace_tools(self):
        body = {"model": "gpt-5.4", "tool_choice": {"type": "function", "name": "crm.weather"}, "tools": [
            {"type": "namespace", "name": "crm", "description": "d", "tools": [
                {"type": "function", "name": "weather", "parameters": NS_SCHEMAS["crm.weather"]},
                {"type": "custom", "name": "note", "format": {"type": "text"}}]},
            {"type": "function", "name": "weather", "parameters": NS_SCHEMAS["weather"], "defer_loading": True},
            {"type": "web_search"}]}
        schemas, request, _ = vts.request_from_body("openai-responses", body)
        self.assertEqual(schemas, {"crm.weather": NS_SCHEMAS["crm.weather"], "crm.note": {"type": "string"},
                                   "weather": NS_SCHEMAS["weather"]})
        self.assertEqual(request["tools"], ["crm.note", "crm.weather", "weather"])
        for bad in ({"type": "namespace", "name": "crm", "tools": [{"type": "function", "name": "crm"}]},
                    {"type": "namespace", "name": "a.b", "tools": []}, {"type": "namespace", "name": "", "tools": []},
                    {"type": "namespace", "name": "crm", "tools": {}},
                    {"type": "namespace", "name": "a", "tools": [{"type": "function", "name": "b.get"}]},
                    {"type": "namespace", "name": "crm", "tools": [{"type": "web_search"}]}):
            with self.subTest(tool=bad), self.assertRaises(vts.CaptureError):
                vts.request_from_body("openai-responses", {"tools": [bad]})

    def test_a_dot_in_a_streamed_name_or_namespace_is_refused(self):
        schemas = dict(NS_SCHEMAS, **{"crm.get": {"type": "object"}, "a.b.weather": {"type": "object"}})
        dotted = ns_turn([(None, '{"x":true}')])
        for event in dotted:
            for holder in [event.get("item")] + list((event.get("response") or {}).get("output") or []):
                if isinstance(holder, dict) and holder.get("type") == "function_call":
                    holder["name"] = "crm.get"
        self.assertEqual(codes(responses(dotted, schemas=schemas)), ["unsupported_event"])
        self.assertEqual(codes(responses(ns_turn([("a.b", '{"x":true}')]), schemas=schemas)), ["unsupported_event"])

    def test_a_lone_surrogate_in_a_namespace_is_invalid_unicode(self):
        report = responses(ns_turn([("crm\ud800", '{"c":"x"}')]), schemas={"crm\ud800.weather": NS_SCHEMAS["crm.weather"]})
        self.assertEqual(codes(report), ["invalid_unicode"])

    def test_a_namespaced_custom_call_beside_a_bare_custom_tool_of_its_name(self):
        def custom_turn(namespace):
            events = ns_turn([(namespace, "")])
            for event in events:
                for holder in [event.get("item")] + list((event.get("response") or {}).get("output") or []):
                    if isinstance(holder, dict) and holder.get("type") == "function_call":
                        holder.update(type="custom_tool_call", input="abc")
                        holder.pop("arguments")
            events[2] = {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "fc_0",
                         "delta": "abc"}
            return events
        string = {"type": "string"}
        self.assertEqual(responses(custom_turn("crm"), schemas={"crm.weather": string})["status"], "pass")
        # openai-agents finds custom tools by name alone: with a bare "weather" declared it would run that one
        report = responses(custom_turn("crm"), schemas={"crm.weather": string, "weather": string})
        self.assertEqual(codes(report), ["identity_collision"])
        self.assertEqual(responses(custom_turn(None), schemas={"crm.weather": string, "weather": string})["status"],
                         "pass")

    def test_pin_expect_and_adapter_output_bind_the_namespace(self):
        doc = {"profile": "openai-responses", "tool_schemas": NS_SCHEMAS, "events": ns_turn([("crm", '{"c":"x"}')])}
        report = vts.validate_envelope(doc)
        expect = vts.pinned_expect(report, None)
        self.assertEqual(expect["calls"], [{"id": "call_0", "name": "weather", "namespace": "crm",
                                            "arguments": '{"c":"x"}'}])
        self.assertEqual(vts.check_expect(report, expect), [])
        moved = vts.validate_envelope(dict(doc, events=ns_turn([("billing", '{"c":"x"}')]),
                                           tool_schemas=dict(NS_SCHEMAS, **{"billing.weather": NS_SCHEMAS["crm.weather"]})))
        self.assertEqual(vts.check_expect(moved, expect), ['calls[0].namespace: expected "crm", got "billing"'])
        bare = {"status": "pass", "calls": [{"id": "call_0", "name": "weather", "arguments": '{"c":"x"}'}]}
        self.assertEqual(vts.check_expect(report, bare), ['calls[0].namespace: expected null, got "crm"'])
        theirs = vts.adapter_calls_from_doc([{"id": "call_0", "name": "weather", "namespace": "billing",
                                               "arguments": '{"c":"x"}'}])
        self.assertEqual([n for n, _ in vts.compare_calls(report["calls"], theirs)], [0])
        theirs = vts.adapter_calls_from_doc([{"id": "call_0", "name": "weather", "namespace": "crm",
                                               "arguments": '{"c":"x"}'}])
        self.assertEqual(vts.compare_calls(report["calls"], theirs), [])
        with self.assertRaises(vts.CaptureError):
            vts.adapter_calls_from_doc([{"id": "c", "name": "f", "namespace": 1, "arguments": "{}"}])

    def test_tool_key(self):
        slot = vts.Slot((None, 0))
        self.assertIsNone(slot.tool_key)
        slot.name = "f"
        self.assertEqual(slot.tool_key, "f")
        slot.namespace = "ns"
        self.assertEqual(slot.tool_key, "ns.f")
        slot.namespace = "f"
        self.assertEqual(slot.tool_key, "f")


# --- Bedrock: a system tool named like a declared client tool ----------------------------------

def nova(name="nova_grounding"):
    return [{"messageStart": {"role": "assistant"}},
            {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {
                "name": name, "toolUseId": "tooluse_s", "type": "server_tool_use"}}}},
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolResult": {
                "toolUseId": "tooluse_s", "type": name + "_result", "status": "success"}}}},
            {"contentBlockStop": {"contentBlockIndex": 1}},
            {"contentBlockStart": {"contentBlockIndex": 2, "start": {"toolUse": {"name": "f", "toolUseId": "t1"}}}},
            {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{}"}}}},
            {"contentBlockStop": {"contentBlockIndex": 2}}, {"messageStop": {"stopReason": "tool_use"}}]


class BedrockSystemToolNames(unittest.TestCase):
    def run_turn(self, schemas, **extra):
        return vts.validate_envelope({"profile": "bedrock", "tool_schemas": schemas, "events": nova(), **extra})

    def test_a_declared_tool_of_that_name_blocks(self):
        self.assertEqual(self.run_turn({"f": {}})["status"], "pass")
        report = self.run_turn({"f": {}, "nova_grounding": {}})
        self.assertEqual((codes(report), report["findings"][0]["position"]), (["identity_collision"], 1))
        report = self.run_turn({"f": {}}, request={"tools": ["f", "nova_grounding"]})
        self.assertIn("identity_collision", codes(report))

    def test_hosted_uses_read_by_their_type_do_not(self):
        # an Anthropic server tool is a block type of its own: no reader takes it for a client call
        events = [{"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
                  {"type": "content_block_start", "index": 0, "content_block": {
                      "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}},
                  {"type": "content_block_stop", "index": 0},
                  {"type": "content_block_start", "index": 1, "content_block": {
                      "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}},
                  {"type": "content_block_stop", "index": 1},
                  {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]
        report = vts.validate_envelope({"profile": "anthropic", "tool_schemas": {"web_search": {}}, "events": events})
        self.assertEqual((report["status"], codes(report)), ("not_applicable", []))


# --- Gemini enums as proto numbers ----------------------------------------------------------------

def gem(parts, finish=None, **candidate):
    body = {"content": {"role": "model", "parts": parts}, **candidate}
    if finish is not None:
        body["finishReason"] = finish
    return {"candidates": [body]}


WHOLE = {"functionCall": {"name": "f", "args": {"a": 1}}}


def gemini(chunks, schemas=None):
    return vts.validate_envelope({"profile": "gemini", "tool_schemas": schemas or {"f": {"type": "object"}},
                                  "chunks": chunks})


class GeminiEnumNumbers(unittest.TestCase):
    def test_finish_reason_numbers_with_a_call(self):
        self.assertEqual(gemini([gem([WHOLE], 1)])["status"], "pass")
        for number in (0, 2, 3, 4, 5, 6, 9, 10, 11, 15, 2 ** 40, -1):
            with self.subTest(number=number):
                self.assertEqual(codes(gemini([gem([WHOLE], number)])), ["wrong_terminal_reason"])
        self.assertIn('"MAX_TOKENS"', gemini([gem([WHOLE], 2)])["findings"][0]["message"])
        self.assertIn('"FINISH_REASON_9"', gemini([gem([WHOLE], 9)])["findings"][0]["message"])

    def test_finish_reason_numbers_on_a_text_turn(self):
        for number in (0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 17, 99):
            with self.subTest(number=number):
                self.assertEqual(gemini([gem([{"text": "t"}], number)])["status"], "not_applicable")
        # a failed function call in one API or the other: the Gemini API's MALFORMED_FUNCTION_CALL (10),
        # UNEXPECTED_TOOL_CALL (12), TOO_MANY_TOOL_CALLS (13); Vertex AI's MALFORMED_FUNCTION_CALL (9) and
        # UNEXPECTED_TOOL_CALL (15 in the current protos, 14 in the older @google-cloud/vertexai enum)
        for number in (9, 10, 12, 13, 14, 15):
            with self.subTest(number=number):
                report = gemini([gem([{"text": "t"}], number)])
                self.assertEqual(codes(report), ["wrong_terminal_reason"])
                self.assertIn("which number their reasons differently", report["findings"][0]["message"])
        for bad in (True, 1.0, [1]):
            with self.subTest(bad=bad):
                self.assertEqual(codes(gemini([gem([{"text": "t"}], bad)])), ["unsupported_event"])

    def test_other_enum_members_as_numbers(self):
        usage = {"usageMetadata": {"promptTokensDetails": [{"modality": 1, "tokenCount": 5}], "trafficType": 1,
                                   "serviceTier": 2}}
        ratings = [{"category": 3, "probability": 1, "severity": 1, "probabilityScore": 0.1, "blocked": False}]
        chunk = dict(gem([WHOLE], 1, safetyRatings=ratings,
                         urlContextMetadata={"urlMetadata": [{"retrievedUrl": "u", "urlRetrievalStatus": 1}]}), **usage)
        self.assertEqual((gemini([chunk])["status"], codes(gemini([chunk]))), ("pass", []))
        code = gem([{"executableCode": {"language": 1, "code": "print(1)"}},
                    {"codeExecutionResult": {"outcome": 1, "output": "1"}}, WHOLE], 1)
        report = gemini([code])
        self.assertEqual((report["status"], report["hosted_tools"]), ("pass", {"code_execution": 1}))
        for outcome in (4, -1, True, 1.5):
            with self.subTest(outcome=outcome):
                bad = gem([{"executableCode": {"language": 1, "code": "x"}},
                           {"codeExecutionResult": {"outcome": outcome}}, WHOLE], 1)
                self.assertEqual(codes(gemini([bad])), ["unsupported_event"])
        for bad_usage in ({"promptTokensDetails": [{"modality": True, "tokenCount": 5}]}, {"trafficType": 1.5}):
            with self.subTest(usage=bad_usage):
                self.assertNotEqual(gemini([dict(gem([WHOLE], 1), usageMetadata=bad_usage)])["status"], "pass")

    def test_a_numbered_tool_type_is_refused_and_named(self):
        stream = [gem([{"toolCall": {"toolType": 1, "id": "t1"}}, WHOLE], 1)]
        report = gemini(stream)
        self.assertEqual(codes(report), ["unsupported_event"])
        self.assertIn("toolType 1)", report["findings"][0]["message"])

    def test_null_value_zero(self):
        stream = [gem([{"functionCall": {"name": "f", "willContinue": True}}]),
                  gem([{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "nullValue": 0}], "willContinue": True}}]),
                  gem([{"functionCall": {}}], 1)]
        report = gemini(stream)
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", '{"a":null}'))


# --- capture: bodies no profile reads --------------------------------------------------------------

class CaptureRefusesForeignBodies(unittest.TestCase):
    def refused(self, raw, profile, *words):
        with self.assertRaises(vts.CaptureError) as caught:
            vts.sse_to_envelope(raw, profile, None)
        for word in words:
            self.assertIn(word, str(caught.exception))

    def test_cohere_streams(self):
        events = [{"id": "c1", "type": "message-start", "delta": {"message": {"role": "assistant"}}},
                  {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
                      "id": "t", "type": "function", "function": {"name": "f", "arguments": ""}}}}},
                  {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}]
        sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        for profile in ("openai", "anthropic", "openai-responses", "mistral"):
            with self.subTest(profile=profile):
                self.refused(sse.encode(), profile, "Cohere v2 chat stream", "no profile reads it")
        lines = "\n".join(json.dumps(e) for e in ({"is_finished": False, "event_type": "stream-start"},
                                                  {"is_finished": True, "event_type": "stream-end"}))
        self.refused(lines.encode(), "openai", "Cohere v1")

    def test_bedrock_invoke_model_body(self):
        frames = eventstream([{"chunk": {"bytes": "eyJ0eXBlIjoibWVzc2FnZV9zdGFydCJ9", "p": "abcd"}}])
        self.refused(frames, "bedrock", "InvokeModelWithResponseStream", "not ConverseStream")
        self.refused(b'{"chunk": {"bytes": "eyJ9"}}\n', "anthropic", "InvokeModelWithResponseStream")

    def test_ollama_native_lines(self):
        lines = b'{"model":"llama3.2","created_at":"t","message":{"role":"assistant","content":""},"done":false}\n'
        self.refused(lines, "openai", "Ollama native stream")

    def test_one_json_object_that_is_no_stream(self):
        cases = [({"object": "chat.completion", "choices": [{"message": {"role": "assistant"}}]}, "openai",
                  "non-streaming chat completion"),
                 ({"id": "msg_1", "type": "message", "role": "assistant", "content": []}, "anthropic",
                  "non-streaming Anthropic message"),
                 ({"id": "resp_1", "object": "response", "output": []}, "openai-responses", "non-streaming Responses"),
                 ({"output": {"message": {}}, "stopReason": "end_turn"}, "bedrock", "non-streaming Bedrock Converse"),
                 ({"status": "ok", "received": 3}, "openai", "members: \"status\", \"received\""),
                 ({"data": {"status": "ok"}}, "mistral", "members: \"status\""),
                 ({"ok": True, "sk-proj-AbCdEf0123456789XyZ0123456789abcd": 1}, "gemini", "members: \"ok\", a member")]
        for doc, profile, words in cases:
            with self.subTest(doc=doc):
                self.refused(json.dumps(doc).encode(), profile, words)
        with self.assertRaises(vts.CaptureError) as caught:
            vts.sse_to_envelope(json.dumps(cases[-1][0]).encode(), "gemini", None)
        self.assertNotIn("sk-proj", str(caught.exception))

    def test_an_error_object_still_imports_as_a_stream_error(self):
        for doc, profile in (({"error": {"message": "x", "type": "invalid_request_error"}}, "openai"),
                             ({"object": "error", "message": "x", "code": 400}, "openai"),
                             ({"type": "error", "error": {"type": "overloaded_error"}}, "anthropic"),
                             ({"internalServerException": {"message": "x"}}, "bedrock"),
                             ({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}, "gemini")):
            with self.subTest(doc=doc):
                envelope, _ = vts.sse_to_envelope(json.dumps(doc).encode(), profile, None)
                report = vts.validate_envelope(envelope)
                self.assertEqual((report["status"], codes(report)), ("blocked", ["stream_error"]))

    def test_stream_bodies_of_one_payload_still_import(self):
        chunk = {"id": "c", "object": "chat.completion.chunk", "choices": []}
        self.assertEqual(vts.sse_to_envelope(json.dumps(chunk).encode(), "openai", None)[0]["chunks"], [chunk])
        wrapped = json.dumps({"data": chunk}).encode()   # mistralai's CompletionEvent, one line
        self.assertEqual(vts.sse_to_envelope(wrapped, "mistral", None)[0]["chunks"], [chunk])
        gemini_chunk = gem([{"text": "t"}], "STOP")
        self.assertEqual(vts.sse_to_envelope(json.dumps(gemini_chunk).encode(), "gemini", None, redact=False)[0]["chunks"],
                         [gemini_chunk])
        frames = eventstream([{"messageStart": {"role": "assistant"}}, {"messageStop": {"stopReason": "end_turn"}}])
        self.assertEqual(len(vts.sse_to_envelope(frames, "bedrock", None)[0]["events"]), 2)

    def test_through_the_cli(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "body.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump({"acknowledged": True}, handle)
            code, out, err = run_cli("capture", "--profile", "openai", path)
        self.assertEqual((code, out), (3, ""))
        self.assertIn("no streaming API this tool reads", err)


if __name__ == "__main__":
    unittest.main()
