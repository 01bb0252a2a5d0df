"""The cohere profile (Cohere v2 chat stream events): each rule with exact codes and positions,
capture of the raw SSE body, redaction and the request body.

The fixtures in fixtures/cohere/ pin one outcome per rule; this module checks what they cannot:
positions and messages, the shapes a start or a delta may have, capture and the request.
"""

import json
import unittest
from unittest import mock

from support import code_set, codes, positions, room_fast_paths_agree, room_runs_agree, vts

SCHEMAS = {"f": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
           "g": {"type": "object"}}
START = {"id": "c0ffee00-1", "type": "message-start", "delta": {"message": {
    "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}}


def start(index=0, call_id="f_abc123def456", name="f", args="", **extra):
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
    call.update(extra)
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def delta(index, text):
    return {"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": {
        "function": {"arguments": text}}}}}


def end(index=0):
    return {"type": "tool-call-end", "index": index}


def message_end(reason="TOOL_CALL", **extra):
    return {"type": "message-end", "delta": dict({"finish_reason": reason, "usage": {}}, **extra)}


def call(index=0, pieces=("{\"a\":", "1}"), **kw):
    return [start(index, **kw)] + [delta(index, p) for p in pieces] + [end(index)]


def judge(events, schemas=SCHEMAS, **extra):
    return vts.validate_envelope({"profile": "cohere", "tool_schemas": schemas, "events": events, **extra})


def sse(events, done=True):
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


class Turns(unittest.TestCase):
    def test_a_turn_passes_with_the_joined_fragments(self):
        report = judge([START] + call(0) + call(1, call_id="g_1", name="g", pieces=("{}",)) + [message_end()])
        self.assertEqual((report["status"], codes(report)), ("pass", []))
        self.assertEqual([(c["index"], c["id"], c["name"], c["arguments"]) for c in report["calls"]],
                         [(0, "f_abc123def456", "f", "{\"a\":1}"), (1, "g_1", "g", "{}")])
        self.assertEqual({c["choice"] for c in report["calls"]}, {None})

    def test_quiet_events_carry_no_call(self):
        quiet = [{"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "x"}}},
                 {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text"}}}},
                 {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "x"}}}},
                 {"type": "content-end", "index": 0},
                 {"type": "citation-start", "index": 0, "delta": {"message": {"citations": {}}}},
                 {"type": "citation-end", "index": 0}, {"type": "debug", "prompt": "x"}]
        self.assertEqual(judge([START] + quiet + call(0) + [message_end()])["status"], "pass")
        self.assertEqual(judge([START] + quiet + [message_end("COMPLETE")])["status"], "not_applicable")

    def test_an_empty_start_then_end_is_an_empty_object(self):
        report = judge([START, start(0, name="g"), end(0), message_end()])
        self.assertEqual([c["arguments"] for c in report["calls"]], ["{}"])
        report = judge([START, start(0, name="g"), delta(0, ""), end(0), message_end()])
        self.assertEqual([c["arguments"] for c in report["calls"]], ["{}"])

    def test_a_non_empty_start_is_the_first_fragment(self):
        report = judge([START, start(0, args="{\"a\""), delta(0, ":2}"), end(0), message_end()])
        self.assertEqual(([c["arguments"] for c in report["calls"]], report["status"]), (["{\"a\":2}"], "pass"))

    def test_positions_of_the_turn_findings(self):
        self.assertEqual(positions(judge([START] + call(0) + [message_end("MAX_TOKENS")])),
                         [("wrong_terminal_reason", 5)])
        self.assertEqual(positions(judge([START] + call(0) + [message_end("TIMEOUT")])),
                         [("wrong_terminal_reason", 5)])
        self.assertEqual(positions(judge([START] + call(0))), [("missing_terminal", None)])
        self.assertEqual(positions(judge([START] + call(0) + [message_end(), message_end()])),
                         [("duplicate_terminal", 6)])
        self.assertEqual(positions(judge([START] + call(0) + [message_end(), {"type": "tool-plan-delta"}])),
                         [("delta_after_terminal", 6)])

    def test_errors_in_message_end(self):
        for extra in ({"error": "x"}, {"error": "x", "error_type": "INVALID_TOOL_GENERATION"}):
            with self.subTest(extra=extra):
                report = judge([START] + call(0) + [message_end("TOOL_CALL", **extra)])
                self.assertEqual(positions(report), [("stream_error", 5)])
        report = judge([START, message_end("ERROR", error="e", error_type="INVALID_TOOL_GENERATION")])
        self.assertEqual(positions(report), [("stream_error", 1)])
        self.assertIn("\"INVALID_TOOL_GENERATION\"", report["findings"][0]["message"])
        # a finish reason that is no string is not read, so the turn has no terminal either
        for bad in (message_end(None), message_end(["TOOL_CALL"]), {"type": "message-end"}):
            self.assertEqual(positions(judge([START] + call(0) + [bad])),
                             [("unsupported_event", 5), ("missing_terminal", None)])


class Shapes(unittest.TestCase):
    def blocked(self, events, expected):
        report = judge(events)
        self.assertEqual((report["status"], code_set(report)), ("blocked", expected), report["findings"])
        return report

    def test_events_that_are_not_reviewed(self):
        for event in ([], "x", {"type": ["tool-call-start"]}, {"type": "stream-start"}, {"delta": {}}):
            with self.subTest(event=event):
                self.blocked([START, event] + call(0) + [message_end()], {"unsupported_event"})

    def test_start_shapes(self):
        bad = [start(call_id=7), start(name=["f"]), start(args=None) | {"delta": {"message": {"tool_calls": {
            "id": "x", "type": "function", "function": {"name": "f", "arguments": 1}}}}},
               start(type="code"), start(extra=1), {"type": "tool-call-start", "index": 0, "delta": {}}]
        for event in bad:
            with self.subTest(event=event):
                self.blocked([START, event, delta(0, "{}"), end(0), message_end()],
                             {"unsupported_event", "missing_slot"})

    def test_a_function_member_that_is_no_object(self):
        # found by fuzzing: these ended in a TypeError before they were refused
        for function in (None, True, [], "f"):
            with self.subTest(function=function):
                bad_start = {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
                    "id": "x", "type": "function", "function": function}}}}
                self.blocked([START, bad_start, end(0), message_end()], {"unsupported_event", "missing_slot"})
                bad_delta = {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {
                    "function": function}}}}
                self.blocked([START, start(), bad_delta, end(0), message_end()], {"unsupported_event"})

    def test_a_start_the_vercel_ai_sdk_drops(self):
        # its schema wants type "function" and string arguments; it drops another start and the call with it
        for drop in ("type", "arguments"):
            with self.subTest(without=drop):
                event = start()
                call = event["delta"]["message"]["tool_calls"]
                (call if drop == "type" else call["function"]).pop(drop)
                self.blocked([START, event, delta(0, "{}"), end(0), message_end()],
                             {"unsupported_event", "missing_slot"})

    def test_delta_and_end_shapes(self):
        for event in ({"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {
                          "id": "x", "function": {"arguments": "{}"}}}}},
                      {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {
                          "function": {"arguments": 5}}}}},
                      {"type": "tool-call-end", "index": 0, "delta": {}}):
            with self.subTest(event=event):
                self.blocked([START, start(), event, end(0), message_end()]
                             if event["type"] != "tool-call-end" else [START, start(), event, message_end()],
                             {"unsupported_event"} if event["type"] != "tool-call-end"
                             else {"unsupported_event", "missing_terminal"})

    def test_indices(self):
        for index in (None, -1, True, 1.0, "0"):
            with self.subTest(index=index):
                report = self.blocked([START, start(), dict(delta(0, "{}"), index=index), end(0), message_end()],
                                      {"missing_index"})
                self.assertEqual(positions(report), [("missing_index", 2)])

    def test_an_event_the_vercel_ai_sdk_drops(self):
        for member in ({"__proto__": {}}, {"constructor": {"prototype": 1}}):
            with self.subTest(member=member):
                bad = json.loads(json.dumps(delta(0, ",\"b\":2")))
                bad["delta"].update(member)
                report = self.blocked([START, start(name="g"), delta(0, "{\"a\":1"), bad, delta(0, "}"), end(0),
                                       message_end()], {"unexpected_event"})
                self.assertEqual(positions(report), [("unexpected_event", 3)])
                # the report shows what was sent, as the readers that keep the event read it
                self.assertEqual(report["calls"][0]["arguments"], "{\"a\":1,\"b\":2}")
        self.assertEqual(judge([START] + call(0) + [dict(message_end(), constructor={"x": 1})])["status"], "pass")

    def test_message_start_with_calls_is_not_read(self):
        bad = json.loads(json.dumps(START))
        bad["delta"]["message"]["tool_calls"] = [{"id": "x"}]
        self.blocked([bad] + call(0) + [message_end()], {"unsupported_event"})

    def test_calls_come_one_after_another(self):
        report = self.blocked([START, start(0), start(1, call_id="g1", name="g"), delta(0, "{}"), delta(1, "{}"),
                               end(0), end(1), message_end()], {"unexpected_event"})
        self.assertEqual(positions(report), [("unexpected_event", 2), ("unexpected_event", 3)])
        report = self.blocked([START] + call(0) + call(2, call_id="g1", name="g", pieces=("{}",)) + [message_end()],
                              {"missing_slot"})
        self.assertIn("call 2 starts, but call 1 comes next", report["findings"][0]["message"])


class Capture(unittest.TestCase):
    TURN = [START, {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will call f."}}}] + call(0) + [
        message_end("TOOL_CALL", usage={"billed_units": {"input_tokens": 3}})]

    def test_a_raw_body_becomes_the_envelope_and_passes(self):
        envelope, warnings = vts.sse_to_envelope(sse(self.TURN), "cohere", SCHEMAS)
        self.assertEqual(warnings, [])
        self.assertEqual(len(envelope["events"]), len(self.TURN))
        self.assertEqual(envelope["events"][2:6], self.TURN[2:6])   # the call, byte for byte
        self.assertEqual(envelope["events"][1]["delta"]["message"]["tool_plan"], "[redacted]")
        self.assertEqual(envelope["events"][0]["delta"]["message"]["role"], "assistant")
        self.assertEqual(envelope["events"][-1], self.TURN[-1])
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")

    def test_sdk_dumps_with_null_members_read_as_the_wire(self):
        # model_dump_json() of the SDK's typed events writes unset members as null
        dumped = [dict(START, delta={"message": {"role": "assistant", "content": None, "tool_calls": None}}),
                  start(), dict(delta(0, "{\"a\":1}")), dict(end(0), delta=None),
                  dict(message_end(), id=None)]
        dumped[2]["delta"]["message"]["tool_calls"]["id"] = None
        body = "".join(json.dumps(e) + "\n" for e in dumped).encode()
        envelope, _ = vts.sse_to_envelope(body, "cohere", SCHEMAS)
        self.assertEqual(envelope["meta"]["capture_point"], "JSON Lines")
        report = vts.validate_envelope(envelope)
        self.assertEqual((report["status"], [c["arguments"] for c in report["calls"]]), ("pass", ["{\"a\":1}"]))

    def test_without_done_a_warning(self):
        _, warnings = vts.sse_to_envelope(sse(self.TURN, done=False), "cohere", SCHEMAS)
        self.assertEqual(warnings, ["no data: [DONE] sentinel: the capture may be cut short"])

    def test_the_error_message_is_redacted_and_still_a_stream_error(self):
        turn = [START, message_end("ERROR", error="secret prompt text", error_type="INVALID_TOOL_GENERATION")]
        envelope, _ = vts.sse_to_envelope(sse(turn), "cohere", SCHEMAS)
        self.assertEqual(envelope["events"][1]["delta"], {"finish_reason": "ERROR", "usage": {},
                                                         "error": "[redacted]",
                                                         "error_type": "INVALID_TOOL_GENERATION"})
        self.assertEqual(codes(vts.validate_envelope(envelope)), ["stream_error"])

    def test_framing_cohere_python_reads_otherwise(self):
        with self.assertRaises(vts.CaptureError) as caught:
            vts.sse_to_envelope(sse(self.TURN).replace(b"\n", b"\r"), "cohere", SCHEMAS)
        self.assertIn("bare CR", str(caught.exception))
        self.assertEqual(vts.validate_envelope(vts.sse_to_envelope(sse(self.TURN).replace(b"\n", b"\r\n"),
                                                                   "cohere", SCHEMAS)[0])["status"], "pass")
        for mark in ("\u2028", "\u0085", "\u2029"):
            with self.subTest(mark=mark), self.assertRaises(vts.CaptureError) as caught:
                turn = [START] + call(0, pieces=("{\"a\":", "1}", "")) + [message_end()]
                turn[3] = delta(0, "1" + mark + "}")
                vts.sse_to_envelope(sse(turn).replace(json.dumps(mark).strip('"').encode(), mark.encode()), "cohere",
                                    SCHEMAS)
            self.assertIn("async reader", str(caught.exception))

    def test_line_breaks_only_one_reader_sees(self):
        # found by review: a \x1c in a comment line hid a whole call from every reader but the async one
        hidden = json.dumps(start(1, call_id="g_1", name="g"))
        for mark in ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e"):
            with self.subTest(mark=mark), self.assertRaises(vts.CaptureError):
                vts.sse_to_envelope(b": keepalive" + mark.encode() + b"data: " + hidden.encode() + b"\n\n"
                                    + sse(self.TURN), "cohere", SCHEMAS)
        # CR CR LF: one CR too many for the sync reader, which strips them all and joins two events
        body = sse(self.TURN).replace(b"\n\nevent: tool-call-end", b"\r\r\n\nevent: tool-call-end")
        with self.assertRaises(vts.CaptureError) as caught:
            vts.sse_to_envelope(body, "cohere", SCHEMAS)
        self.assertIn("bare CR", str(caught.exception))

    def test_a_type_of_another_json_type_is_no_crash(self):
        # capture's redaction looked the type up in a table: a list or object there raised TypeError
        for kind in ({"a": 1}, ["tool-call-start"], None, 5):
            with self.subTest(kind=kind):
                body = ("data: " + json.dumps({"type": kind, "delta": {}}) + "\n\ndata: [DONE]\n\n").encode()
                envelope, _ = vts.sse_to_envelope(body, "cohere", SCHEMAS)
                self.assertEqual(codes(vts.validate_envelope(envelope)), ["unsupported_event"])

    def test_text_beside_a_call_is_redacted(self):
        event = start()
        event["delta"]["message"]["tool_plan"] = "SECRET PLAN"
        event["delta"]["other"] = "SECRET"
        envelope, _ = vts.sse_to_envelope(sse([START, event, end(0), message_end()]), "cohere", SCHEMAS)
        self.assertNotIn("SECRET", json.dumps(envelope))
        self.assertEqual(envelope["events"][1]["delta"]["message"]["tool_calls"],
                         event["delta"]["message"]["tool_calls"])

    def test_an_event_name_must_match_the_type(self):
        body = sse(self.TURN).replace(b"event: tool-call-end", b"event: tool-call-delta")
        with self.assertRaises(vts.CaptureError):
            vts.sse_to_envelope(body, "cohere", SCHEMAS)

    def test_another_profile_body_is_pointed_elsewhere(self):
        chat = b'data: {"choices": [{"index": 0, "delta": {"content": "x"}}]}\n\ndata: [DONE]\n\n'
        with self.assertRaises(vts.CaptureError) as caught:
            vts.sse_to_envelope(chat, "cohere", SCHEMAS)
        self.assertIn("use --profile openai", str(caught.exception))

    def test_the_request_body(self):
        body = {"model": "command-a-03-2025", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                "tool_choice": "REQUIRED", "strict_tools": True,
                "tools": [{"type": "function", "function": {"name": "f", "description": "", "parameters": {
                    "type": "object", "properties": {"a": {"type": "integer"}}}}}]}
        schemas, request, warnings = vts.request_from_body("cohere", body)
        self.assertEqual((schemas, request, warnings),
                         ({"f": {"type": "object", "properties": {"a": {"type": "integer"}}}},
                          {"tools": ["f"], "tool_choice": "REQUIRED"}, []))
        with self.assertRaises(vts.CaptureError):
            vts.request_from_body("cohere", dict(body, tool_choice="required"))
        untyped = dict(body, tools=[{"function": {"name": "f", "parameters": {"type": "object"}}}])
        self.assertEqual(vts.request_from_body("cohere", untyped)[0], {"f": {"type": "object"}})
        v1 = dict(body, tools=[{"name": "f", "description": "", "parameter_definitions": {"a": {"type": "int"}}}])
        with self.assertRaises(vts.CaptureError) as caught:
            vts.request_from_body("cohere", v1)
        self.assertIn("Cohere v1 tool", str(caught.exception))


class Request(unittest.TestCase):
    def test_none_blocks_a_call_and_required_does_not_force_one(self):
        self.assertEqual(codes(judge([START] + call(0) + [message_end()], request={"tool_choice": "NONE"})),
                         ["request_violation"])
        self.assertEqual(judge([START] + call(0) + [message_end()], request={"tool_choice": "REQUIRED"})["status"],
                         "pass")
        self.assertEqual(judge([START, message_end("COMPLETE")], request={"tool_choice": "REQUIRED"})["status"],
                         "not_applicable")

    def test_shapes_the_api_does_not_have_are_invalid(self):
        for request in ({"tool_choice": "required"}, {"tool_choice": {"type": "tool", "name": "f"}},
                        {"tool_choice": "auto"}, {"parallel_tool_calls": False}):
            with self.subTest(request=request):
                report = judge([START] + call(0) + [message_end()], request=request)
                self.assertEqual(codes(report), ["invalid_fixture"])
        report = judge([START] + call(0) + [message_end()], request={"parallel_tool_calls": False})
        self.assertIn("Cohere's API has no such control", report["findings"][0]["message"])


class Gate(unittest.TestCase):
    def test_item_by_item_is_the_same_verdict(self):
        events = [START] + call(0) + call(1, call_id="g1", name="g", pieces=("{", "}")) + [message_end()]
        gate = vts.StreamGate("cohere", SCHEMAS)
        for event in events:
            gate.feed(event)
        self.assertEqual(gate.finish()["calls"], judge(events)["calls"])


def content_delta(text, **top):
    return {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": text}}}, **top}


class FastPaths(unittest.TestCase):
    """plain_fragment() and translate()'s quiet content-delta answer only for the wire's exact shape (so the
    screen has nothing to refuse) while the message is open; anywhere else the general path decides."""

    def test_plain_fragment_answers_for_the_plain_delta_only(self):
        normalizer = vts.CohereNormalizer()
        plain = delta(0, "{")
        self.assertIsNone(normalizer.plain_fragment(plain))   # no message-start yet
        for pos, event in enumerate([START, start(0)]):
            list(normalizer.translate(pos, event))
        self.assertEqual(normalizer.plain_fragment(plain), ((None, 0), "{"))
        function = {"arguments": "{"}
        for name, other in {
                "index true": {**plain, "index": True}, "another call": delta(1, "{"),
                "arguments not text": delta(0, 5), "an id too": {**plain, "id": "x"},
                "a null id in the call": {**plain, "delta": {"message": {"tool_calls": {"id": None,
                                                                                         "function": function}}}},
                "__proto__ in the function": {**plain, "delta": {"message": {"tool_calls": {"function": {
                    "arguments": "{", "__proto__": {}}}}}},
                "a list of calls": {**plain, "delta": {"message": {"tool_calls": [{"function": function}]}}},
                "a content delta": content_delta("x"), "a list": [plain], "nothing": None}.items():
            with self.subTest(event=name):
                self.assertIsNone(normalizer.plain_fragment(other))

    def probes(self):
        plain, function = delta(0, " "), {"arguments": " "}

        def call_body(body):
            return {**plain, "delta": {"message": {"tool_calls": body}}}

        yield "plain", plain
        yield "another call", delta(1, " ")
        for name, index in (("true", True), ("0.0", 0.0), ("-1", -1), ("absent", None)):
            yield f"index {name}", {**plain, "index": index} if index is not None else \
                {key: value for key, value in plain.items() if key != "index"}
            yield f"content, index {name}", content_delta("x", index=index)
        yield "an id on top", {**plain, "id": "x"}
        yield "__proto__ on top", {"type": "tool-call-delta", "__proto__": {}, "delta": plain["delta"]}
        yield "constructor.prototype on top", {"type": "tool-call-delta", "constructor": {"prototype": {}},
                                               "delta": plain["delta"]}
        yield "a null id", call_body({"id": None, "function": function})
        yield "an id", call_body({"id": "x", "function": function})
        yield "a null name", call_body({"function": {**function, "name": None}})
        yield "__proto__ in the function", call_body({"function": {**function, "__proto__": {}}})
        yield "constructor in the call", call_body({"function": function, "constructor": {"prototype": 1}})
        yield "a list of calls", call_body([{"function": function}])
        yield "__proto__ in the message", {**plain, "delta": {"message": {"tool_calls": {"function": function},
                                                                          "__proto__": {}}}}
        yield "a second member of delta", {**plain, "delta": {**plain["delta"], "constructor": {"prototype": 0}}}
        for name, value in (("5", 5), ("null", None), ("an object", {})):
            yield f"arguments {name}", delta(0, value)
            yield f"text {name}", content_delta(value)
        yield "content plain", content_delta("x")
        yield "content with __proto__ in the message", {**content_delta("x"), "delta": {"message": {
            "content": {"text": "x"}, "__proto__": {}}}}
        yield "content with constructor.prototype on top", {"type": "content-delta", "constructor": {"prototype": {}},
                                                            "delta": content_delta("x")["delta"]}
        yield "content with a type too", content_delta("x") | {"delta": {"message": {"content": {
            "type": "text", "text": "x"}}}}
        yield "content as a list", {**content_delta("x"), "delta": {"message": {"content": [{"text": "x"}]}}}
        yield "tool-plan-delta", {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "x"}}}

    def test_every_probe_in_every_place_gets_the_general_report(self):
        text = [{"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
                content_delta("hi"), {"type": "content-end", "index": 0}]
        turn = [START] + text + call(0) + [message_end()]
        places = {"before message-start": 0, "in the text": 2, "in the call": 6, "after the call": 8,
                  "after message-end": len(turn)}
        streams = [(f"{name} {where}", turn[:at] + [probe] + turn[at:])
                   for name, probe in self.probes() for where, at in places.items()]
        streams.append(("the turn", turn))
        answered, declined = room_fast_paths_agree(self, "cohere", streams, SCHEMAS)
        self.assertTrue(answered and declined, "the fast answers were given somewhere, not everywhere")


def cohere_run_probes(kind, index, path, string):
    """Events written as text at the edge of a run of `kind` events (path: the members down to the string)."""
    def event(top="", inner="", number=str(index), name=kind, last=path[-1]):
        nested = string + inner
        for member in reversed(path[:-1] + (last,)):
            nested = '{"%s": %s}' % (member, nested) if member != last else '{"%s": %s}' % (member, nested)
        return '{"type": "%s", "index": %s, "delta": %s%s}' % (name, number, nested, top)

    yield "plain", event()
    for number in ("%s.0", "%se0", "-%s", "0%s", "%s "):
        yield f"index {number % 'N'}", event(number=number % index)
    yield "index -0", event(number="-0")
    yield "compact", event().replace(": ", ":").replace(", ", ",")
    yield "newlines", event().replace(": ", ":\n ").replace(", ", "\r\n,\t")
    yield "reordered", event().replace('"type": "%s", "index": %s' % (kind, index), '"index": %s, "type": "%s"'
                                       % (index, kind))
    yield "type twice", event(top=', "type": "%s"' % kind)
    yield "a member beside the string", event(inner=', "x": 1')
    yield "__proto__ escaped beside the string", event(inner=', "\\u005f_proto__": {}')
    yield "__proto__ escaped on top", event(top=', "\\u005f_proto__": {}')
    yield "constructor.prototype on top", event(top=', "constructor": {"prototype": {}}')
    yield "escaped string name", event(last="\\u00%x" % ord(path[-1][0]) + path[-1][1:])
    yield "escaped type", event(name="\\u00%x" % ord(kind[0]) + kind[1:])
    yield "an id of null", event().replace('{"function"', '{"id": null, "function"')


class Runs(unittest.TestCase):
    """Runs of tool-call-delta and content-delta events read from text give the report of the whole document's
    parse, whatever sits at their edge."""

    def test_probes_at_the_edges_of_runs(self):
        text = ([{"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}]
                + [content_delta(f"w{k} ") for k in range(40)] + [{"type": "content-end", "index": 0}])
        turn = [START] + text + call(0, ['{"a": 1'] + [" "] * 40 + ["}"]) + [message_end()]
        text_places = [("a text run's start", 2), ("in a text run", 20), ("a text run's end", 42)]
        tool_places = [("a fragment run's start", 44), ("in a fragment run", 64), ("a fragment run's end", 86)]
        strings = [("escapes", '"\\" \\\\ \\u00e9 \\ud83d\\ude00 \\n"'), ("a lone surrogate", '"\\ud800"'),
                   ("not a string", "5"), ("null", "null"), ("raw é", '"é"')]
        for kind, index, path, places in (
                ("tool-call-delta", 0, ("message", "tool_calls", "function", "arguments"), tool_places),
                ("content-delta", 0, ("message", "content", "text"), text_places)):
            probes = list(cohere_run_probes(kind, index, path, '" "'))
            probes += [(name, next(cohere_run_probes(kind, index, path, string))[1]) for name, string in strings]
            self.assertTrue(room_runs_agree(self, "cohere", turn, probes, places, SCHEMAS), "runs were read")

    def test_a_window_boundary_inside_a_run(self):
        turn = ([START] + [content_delta(f"w{k} é") for k in range(300)]
                + call(0, ['{"a": 1'] + [" "] * 300 + ["}"]) + [message_end()])
        for batch in (1 << 10, 5000):
            with self.subTest(batch=batch), mock.patch.object(vts, "_BATCH_CHARS", batch):
                self.assertTrue(room_runs_agree(self, "cohere", turn, [("as it is", None)], [("", 0)], SCHEMAS))

    def test_whole_runs_in_every_state(self):
        text = [content_delta(f"w{k} ") for k in range(30)]
        pieces = [delta(0, " ") for _ in range(30)]
        turns = {"before message-start": text + pieces + [START] + call(0) + [message_end()],
                 "for a call never started": [START] + text + pieces + [message_end()],
                 "for a call that ended": [START] + call(0) + pieces + text + [message_end()],
                 "for another call while one streams": [START, start(0)] + [delta(1, " ") for _ in range(30)]
                 + [end(0), message_end()],
                 "for a call begun before the one streaming": [START, start(0), start(1)] + pieces
                 + [end(0), end(1), message_end()],
                 "after message-end": [START] + call(0) + [message_end()] + text + pieces}
        for name, turn in turns.items():
            with self.subTest(turn=name):
                room_runs_agree(self, "cohere", turn, [("as it is", None)], [("", 0)], SCHEMAS)


if __name__ == "__main__":
    unittest.main()
