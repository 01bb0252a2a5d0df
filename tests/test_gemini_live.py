"""The gemini-live profile (the Live API's server messages, BidiGenerateContent over a WebSocket): each rule
with exact codes and positions, the turns of a message log, the setup message as the request, redaction,
the socket rules `serve` plays, and google-genai's own receive path (skipped without the package).

The fixtures in fixtures/gemini-live/ pin one outcome per rule; this module checks what they cannot.
"""

import asyncio
import json
import os
import sys
import unittest

from support import FIXTURES, ServedFixtures, code_set, codes, importable, load_fixture, positions, run_cli, vts

SCHEMAS = {"f": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
           "g": {"type": "object"}}
LIVE = vts.PROFILES["gemini-live"]


def call(call_id="fc_1", name="f", args=None, **extra):
    out = {"id": call_id, "name": name, "args": {"a": 1} if args is None else args, **extra}
    return {key: value for key, value in out.items() if value is not None}


def tool_call(*calls):
    return {"toolCall": {"functionCalls": list(calls)}}


def part(*calls, text=None):
    parts = [{"functionCall": c} for c in calls] + ([{"text": text}] if text is not None else [])
    return {"serverContent": {"modelTurn": {"role": "model", "parts": parts}}}


def content(**members):
    return {"serverContent": members}


def judge(events, schemas=SCHEMAS, **extra):
    return vts.validate_envelope({"profile": "gemini-live", "tool_schemas": schemas, "events": events, **extra})


def calls_of(report):
    return [(c["index"], c["id"], c["name"], c["arguments"]) for c in report["calls"]]


class Turns(unittest.TestCase):
    def test_the_toolcall_is_whole_and_ends_the_turn(self):
        report = judge([{"setupComplete": {}}, content(inputTranscription={"text": "x"}), part(text="ok"),
                        tool_call(call(), call("fc_2", "g", {}))])
        self.assertEqual((report["status"], codes(report)), ("pass", []))
        self.assertEqual(calls_of(report), [(0, "fc_1", "f", '{"a":1}'), (1, "fc_2", "g", "{}")])

    def test_absent_args_are_an_empty_object(self):
        report = judge([tool_call({"id": "fc_1", "name": "g"})])
        self.assertEqual((report["status"], calls_of(report)), ("pass", [(0, "fc_1", "g", "{}")]))

    def test_a_text_turn_is_not_applicable(self):
        for events in ([part(text="hi"), content(turnComplete=True)], [part(text="hi")],
                       [content(interrupted=True), content(turnComplete=True)],
                       [content(turnComplete=True, turnCompleteReason="NEED_MORE_INPUT", waitingForInput=True)]):
            with self.subTest(events=events):
                self.assertEqual(judge(events)["status"], "not_applicable")

    def test_the_tail_of_a_toolcall(self):
        tail = [{"usageMetadata": {"totalTokenCount": 3}}, {"goAway": {"timeLeft": "5s"}},
                {"sessionResumptionUpdate": {"newHandle": "h", "resumable": True}}, content(interrupted=True),
                content(generationComplete=True), content(outputTranscription={"text": "late"}),
                content(turnComplete=True), {"voiceActivity": {"type": "ACTIVITY_END"}}]
        self.assertEqual(positions(judge([tool_call(call())] + tail)), [])

    def test_what_comes_after_the_terminal(self):
        self.assertEqual(positions(judge([tool_call(call()), part(text="more")])), [("delta_after_terminal", 1)])
        self.assertEqual(positions(judge([tool_call(call()), tool_call(call("fc_2"))])),
                         [("delta_after_terminal", 1)])
        self.assertEqual(positions(judge([content(turnComplete=True), tool_call(call())])),
                         [("delta_after_terminal", 1)])
        self.assertEqual(positions(judge([tool_call(call()), content(turnComplete=True),
                                          content(turnComplete=True)])), [("duplicate_terminal", 2)])
        self.assertEqual(positions(judge([content(turnComplete=True), content(turnComplete=True)])),
                         [("duplicate_terminal", 1)])

    def test_a_toolcall_beside_turncomplete_comes_first(self):
        together = dict(tool_call(call()), serverContent={"turnComplete": True})
        self.assertEqual(positions(judge([together])), [])
        self.assertEqual(positions(judge([together, content(turnComplete=True)])), [("duplicate_terminal", 1)])
        self.assertEqual(LIVE.capture.socket_turns([together, part(text="next")]), [(0, 1), (1, 2)])

    def test_an_empty_toolcall_and_a_failed_call(self):
        self.assertEqual(positions(judge([tool_call()])), [("missing_slot", 0)])
        report = judge([content(turnComplete=True, turnCompleteReason="MALFORMED_FUNCTION_CALL")])
        self.assertEqual((report["status"], positions(report)), ("blocked", [("wrong_terminal_reason", 0)]))
        # after the toolCall too, beside it or later in its tail; another reason there is not a failed call
        failed = content(turnComplete=True, turnCompleteReason="MALFORMED_FUNCTION_CALL")
        self.assertEqual(positions(judge([tool_call(call()), failed])), [("wrong_terminal_reason", 1)])
        self.assertEqual(positions(judge([dict(tool_call(call()), **failed)])), [("wrong_terminal_reason", 0)])
        self.assertEqual(judge([tool_call(call()), content(turnComplete=True, turnCompleteReason="NEED_MORE_INPUT")]
                               )["status"], "pass")

    def test_a_turn_complete_reason_after_the_toolcall(self):
        # only no reason, the default and NEED_MORE_INPUT leave its calls standing
        for reason in ("TURN_COMPLETE_REASON_UNSPECIFIED", "NEED_MORE_INPUT"):
            with self.subTest(reason=reason):
                report = judge([tool_call(call()), content(turnComplete=True, turnCompleteReason=reason)])
                self.assertEqual((report["status"], codes(report)), ("pass", []))
        for reason in ("RESPONSE_REJECTED", "GENERATED_AUDIO_SAFETY", "MAX_REGENERATION_REACHED", "SOMETHING_NEW", 5,
                       ["x"], {"a": 1}):
            with self.subTest(reason=reason):
                self.assertEqual(positions(judge([tool_call(call()), content(turnComplete=True,
                                                                             turnCompleteReason=reason)])),
                                 [("wrong_terminal_reason", 1)])
        # a reason that ends no turn (no turnComplete) is not a reviewed shape, before the toolCall or after it
        self.assertEqual(positions(judge([content(turnCompleteReason="MALFORMED_FUNCTION_CALL"), tool_call(call())])),
                         [("unsupported_event", 0)])
        self.assertEqual(positions(judge([tool_call(call()), content(turnComplete=False,
                                                                     turnCompleteReason="RESPONSE_REJECTED")])),
                         [("unsupported_event", 1)])
        self.assertEqual(judge([content(turnCompleteReason="NEED_MORE_INPUT"), tool_call(call())])["status"], "pass")

    def test_shapes_no_reader_runs(self):
        for entry, code in (("x", "unsupported_event"), ({"id": "a", "name": "f", "args": "{}"}, "unsupported_event"),
                            ({"id": "a", "name": "f", "args": {}, "partialArgs": []}, "unsupported_event"),
                            ({"id": 7, "name": "f"}, "unsupported_event")):
            with self.subTest(entry=entry):
                self.assertEqual(positions(judge([tool_call(entry)])), [(code, 0), ("missing_slot", 0)])
        self.assertEqual(positions(judge([{"toolCall": {"functionCalls": {}}}])), [("unsupported_event", 0)])
        self.assertEqual(positions(judge([{"toolCall": {"functionCalls": [], "more": 1}}])),
                         [("unsupported_event", 0)])
        self.assertEqual(positions(judge(["x"])), [("unsupported_event", 0)])
        self.assertEqual(positions(judge([{"somethingNew": {}}])), [("unsupported_event", 0)])
        self.assertEqual(positions(judge([{"serverContent": {}, "toolResponse": {}}])), [("unsupported_event", 0)])
        self.assertEqual(positions(judge([{"serverContent": {"functionCalls": []}}])), [("unsupported_event", 0)])
        self.assertEqual(positions(judge([{"serverContent": {"modelTurn": "x"}}])), [("unsupported_event", 0)])
        self.assertEqual(positions(judge([{"error": {"code": 500}}, tool_call(call())])), [("stream_error", 0)])
        self.assertEqual(positions(judge([tool_call(call()), {"setupComplete": {}}])), [("unexpected_event", 1)])
        # members google-genai reads and a reader ignores: a session notice beside the content is fine
        self.assertEqual(judge([dict(tool_call(call()), usageMetadata={}, somethingNew=1)])["status"], "pass")

    def test_snake_case_spellings_google_genai_reads(self):
        # google-genai passes serverContent to models that take either spelling; the wire and js-genai do not
        for events, at in (([content(model_turn={"parts": [{"functionCall": call()}]}), tool_call(call())], 0),
                           ([tool_call(call()), content(turn_complete=True)], 1),
                           ([{"serverContent": {"modelTurn": {"parts": [{"function_call": call(args={"a": 2})}]}}},
                             tool_call(call())], 0)):
            with self.subTest(events=events):
                self.assertEqual(positions(judge(events)), [("unsupported_event", at)])
        # a top-level snake_case member: google-genai's converter reads none of them (it raises)
        self.assertEqual(positions(judge([{"tool_call": {"function_calls": [call()]}}])), [("unsupported_event", 0)])

    def test_a_call_without_an_id_is_vertex_s(self):
        report = judge([tool_call({"name": "f", "args": {"a": 1}})])
        self.assertEqual((report["status"], calls_of(report)), ("pass", [(0, None, "f", '{"a":1}')]))
        # it cannot be matched with a repeat: a second toolCall is the next turn's
        self.assertEqual(positions(judge([tool_call({"name": "f"}), tool_call({"name": "f"})])),
                         [("delta_after_terminal", 1)])


class SameCallTwice(unittest.TestCase):
    def test_an_identical_repeat_is_read_once(self):
        for events in ([tool_call(call()), tool_call(call())], [part(call()), tool_call(call())],
                       [tool_call(call()), part(call())], [part(call()), part(call()), tool_call(call())],
                       [tool_call(call(args={"b": [1, {"c": 2}], "a": 1})),
                        tool_call(call(args={"a": 1, "b": [1, {"c": 2}]}))]):
            with self.subTest(events=events):
                report = judge(events, {"f": {"type": "object"}})
                self.assertEqual((report["status"], codes(report)), ("pass", []))
                self.assertEqual(len(report["calls"]), 1)

    def test_a_conflicting_repeat_blocks(self):
        self.assertEqual(positions(judge([tool_call(call()), tool_call(call(args={"a": 2}))])),
                         [("unexpected_event", 1)])
        self.assertEqual(positions(judge([tool_call(call()), tool_call(call(args={"a": 1.0}))])),
                         [("unexpected_event", 1)])
        self.assertEqual(positions(judge([tool_call(call()), tool_call(call(name="g"))])),
                         [("identity_collision", 1)])
        self.assertEqual(positions(judge([part(call(args={"a": 2})), tool_call(call())])),
                         [("unexpected_event", 1)])
        self.assertEqual(positions(judge([part(call()), part(call(args={"a": 2})), tool_call(call())])),
                         [("unexpected_event", 1)])
        self.assertEqual(positions(judge([tool_call(call(), call())])), [("identity_collision", 0)])

    def test_a_part_no_toolcall_requests(self):
        self.assertEqual(positions(judge([part(call("fc_9")), tool_call(call())])), [("unexpected_event", 0)])
        self.assertEqual(positions(judge([part(call("fc_9")), content(turnComplete=True)])),
                         [("unexpected_event", 0)])
        self.assertEqual(positions(judge([part(call("fc_9"))])), [("missing_terminal", None)])
        self.assertEqual(positions(judge([part({"name": "f", "args": {}}), tool_call(call())])),
                         [("unsupported_event", 0)])

    def test_a_repeat_too_deep_to_compare(self):
        deep = {"a": 1}
        for _ in range(70):
            deep = {"n": deep}
        report = judge([tool_call(call(args=deep)), tool_call(call(args=deep))], {"f": {"type": "object"}})
        self.assertIn("limit_exceeded", codes(report))


class Bounds(unittest.TestCase):
    def test_parts_and_cancelled_ids_kept_are_bounded(self):
        limits = vts.Limits(max_calls=1)   # four of each are kept
        for events in ([part(call(f"p{n}")) for n in range(6)] + [tool_call(call("p0"))],
                       [{"toolCallCancellation": {"ids": [f"x{n}" for n in range(6)]}}, tool_call(call())]):
            with self.subTest(first=events[0]):
                gate = vts.StreamGate("gemini-live", SCHEMAS, limits=limits)
                for event in events:
                    gate.feed(event)
                report = gate.finish()
                self.assertEqual(report["status"], "blocked")
                self.assertEqual([code for code in codes(report) if code == "limit_exceeded"], ["limit_exceeded"])


class Cancellation(unittest.TestCase):
    def test_a_call_cancelled_before_the_answer_blocks(self):
        report = judge([tool_call(call(), call("fc_2", "g", {})), content(interrupted=True),
                        {"toolCallCancellation": {"ids": ["fc_2"]}}])
        self.assertEqual(positions(report), [("wrong_terminal_reason", 2)])
        self.assertEqual([(c["id"], c["state"]) for c in report["calls"]], [("fc_1", "validated"), ("fc_2", "blocked")])

    def test_a_cancellation_before_the_toolcall(self):
        self.assertEqual(positions(judge([part(call()), {"toolCallCancellation": {"ids": ["fc_1"]}},
                                          tool_call(call())])), [("wrong_terminal_reason", 2)])
        # an id this turn never requests before its toolCall says nothing of its calls
        self.assertEqual(positions(judge([{"toolCallCancellation": {"ids": ["old"]}}, tool_call(call())])), [])

    def test_an_id_no_call_has_and_a_malformed_cancellation(self):
        self.assertEqual(positions(judge([tool_call(call()), {"toolCallCancellation": {"ids": ["fc_9"]}}])),
                         [("unexpected_event", 1)])
        for body in ({"ids": "fc_1"}, {"ids": [1]}, {"ids": [""]}, [], {"ids": [], "why": "x"}):
            with self.subTest(body=body):
                self.assertEqual(positions(judge([tool_call(call()), {"toolCallCancellation": body}])),
                                 [("unsupported_event", 1)])


class SocketTurns(unittest.TestCase):
    turns = staticmethod(LIVE.capture.socket_turns)

    def test_a_recorded_two_turn_log(self):
        # the shape of vercel/ai packages/google/src/realtime/__fixtures__/issue-21545-server-events.json
        log = [{"setupComplete": {}}, content(inputTranscription={"text": "a"}),
               content(outputTranscription={"text": "b"}), part(text="c"), content(turnComplete=True),
               content(inputTranscription={"text": "d"}), part(text="e"),
               content(outputTranscription={"text": "f"}), content(turnComplete=True)]
        self.assertEqual(self.turns(log), [(1, 5), (5, 9)])

    def test_a_tool_turn_keeps_its_tail(self):
        log = [{"setupComplete": {}}, part(text="a"), tool_call(call()), content(interrupted=True),
               {"toolCallCancellation": {"ids": ["fc_1"]}}, content(turnComplete=True), tool_call(call()),
               part(call()), {"usageMetadata": {}}, part(text="next"), content(turnComplete=True),
               {"goAway": {"timeLeft": "1s"}}]
        self.assertEqual(self.turns(log), [(1, 9), (9, 11)])
        self.assertEqual(judge(log[1:9])["status"], "blocked")   # its call was cancelled
        self.assertEqual(judge(log[9:11])["status"], "not_applicable")

    def test_a_new_call_starts_the_next_turn(self):
        log = [tool_call(call()), tool_call(call("fc_2")), part(call("fc_3")), tool_call(call("fc_3"))]
        self.assertEqual(self.turns(log), [(0, 1), (1, 2), (2, 4)])
        self.assertEqual([judge(log[a:b])["status"] for a, b in self.turns(log)], ["pass"] * 3)

    def test_a_cancellation_of_no_call_of_the_turn_starts_the_next(self):
        # it names a call still to come: that call's turn holds the cancellation, and blocks
        cancel = {"toolCallCancellation": {"ids": ["fc_2"]}}
        log = [tool_call(call()), cancel, tool_call(call("fc_2"))]
        self.assertEqual(self.turns(log), [(0, 1), (1, 3)])
        self.assertEqual([judge(log[a:b])["status"] for a, b in self.turns(log)], ["pass", "blocked"])
        self.assertEqual(positions(judge(log[1:3])), [("wrong_terminal_reason", 1)])
        # one that names a call of the turn stays in its tail, the other ids with it
        both = {"toolCallCancellation": {"ids": ["fc_2", "fc_1"]}}
        self.assertEqual(self.turns([tool_call(call()), {"usageMetadata": {}}, both]), [(0, 3)])

    def test_a_call_requested_again_after_model_output_joins_its_turn(self):
        # a client that keeps the ids it ran skips the second toolCall, another runs the call again
        log = [{"setupComplete": {}}, tool_call(call()), part(text="a"), content(turnComplete=True), part(text="b"),
               tool_call(call("fc_2")), part(text="c"), tool_call(call(args={"a": 2})), part(text="d"),
               content(turnComplete=True)]
        self.assertEqual(self.turns(log), [(1, 8), (8, 10)])
        self.assertEqual(code_set(judge(log[1:8])), {"delta_after_terminal", "unexpected_event"})
        # the same call restated in its own tail stays one turn that passes
        self.assertEqual(self.turns([tool_call(call()), content(turnComplete=True), tool_call(call())]), [(0, 3)])

    def test_a_late_cancellation_of_an_earlier_turn_s_call_joins_its_turn(self):
        # a NON_BLOCKING call runs while the model talks; the user interrupts and the server cancels it: the call
        # "should have been not executed" (the client may try to undo it), so its turn blocks
        log = [{"setupComplete": {}}, tool_call(call()), part(text="a"), {"toolCallCancellation": {"ids": ["fc_1"]}},
               content(turnComplete=True), part(text="b"), content(turnComplete=True)]
        self.assertEqual(self.turns(log), [(1, 5), (5, 7)])
        self.assertEqual(code_set(judge(log[1:5])), {"delta_after_terminal", "wrong_terminal_reason"})
        # after a turn in between too: every turn since joins
        log = [tool_call(call()), part(text="a"), content(turnComplete=True), part(text="b"),
               content(turnComplete=True), {"toolCallCancellation": {"ids": ["fc_1"]}}, {"usageMetadata": {}}]
        self.assertEqual(self.turns(log), [(0, 7)])
        self.assertIn("wrong_terminal_reason", code_set(judge(log)))

    def test_a_log_cut_mid_turn_and_session_messages_alone(self):
        self.assertEqual(self.turns([{"setupComplete": {}}, part(text="a")]), [(1, 2)])
        self.assertEqual(self.turns([{"setupComplete": {}}, {"usageMetadata": {}}]), [])
        self.assertEqual(self.turns(["x", part(text="a")]), [(0, 2)])

    def test_a_cancellation_between_turns_starts_the_next(self):
        # the call it names comes in that turn (which blocks), or it names an earlier turn's call (not this turn's)
        cancel = {"toolCallCancellation": {"ids": ["fc_1"]}}
        log = [part(text="a"), content(turnComplete=True), cancel, tool_call(call())]
        self.assertEqual(self.turns(log), [(0, 2), (2, 4)])
        self.assertEqual(positions(judge(log[2:4])), [("wrong_terminal_reason", 1)])
        log = [part(text="a"), content(turnComplete=True), cancel, part(text="b"), content(turnComplete=True)]
        self.assertEqual(self.turns(log), [(0, 2), (2, 5)])
        self.assertEqual(judge(log[2:5])["status"], "not_applicable")


class BoundedWork(unittest.TestCase):
    """The split of a message log into turns (capture, feed_bytes) does work that grows with the log: an id is
    looked up where the message that names it is read, not in every earlier turn, and turns that join are not
    copied.  Counted, never timed: the validator's executed lines (sys.settrace) and the members of the sets it
    builds or extends through the name `set` (a counting stand-in while the split runs).  A log 4 times longer
    costs about 4 times the work (a scan of every earlier turn cost 9 times at these sizes, 13 times at
    16,000 turns; a copy of the turn's ids per message 30 times)."""

    @staticmethod
    def work(messages):
        count, here = [0], vts.__file__

        class Counted(set):
            def __init__(self, *iterables):
                super().__init__(*iterables)
                count[0] += len(self)

            def update(self, *iterables):
                for members in iterables:
                    members = list(members)
                    count[0] += len(members)
                    super().update(members)

        def local(frame, event, arg):
            count[0] += event == "line"
            return local

        vts.set, previous = Counted, sys.gettrace()
        sys.settrace(lambda frame, event, arg: local if frame.f_code.co_filename == here else None)
        try:
            turns = LIVE.capture.socket_turns(messages)
        finally:
            sys.settrace(previous)
            del vts.set
        return count[0], turns

    def growth(self, build, n):
        (small, turns), (large, _) = self.work(build(n)), self.work(build(4 * n))
        self.assertLess(large, 5 * small)
        return turns

    def test_many_tool_turns(self):
        # toolCall, text, turnComplete, again and again (each toolCall looked at every earlier turn)
        def build(n):
            return [{"setupComplete": {}}] + [m for i in range(n) for m in (
                tool_call(call(f"fc_{i}")), part(text="a"), content(turnComplete=True))]
        self.assertEqual(self.growth(build, 60)[:3], [(1, 2), (2, 4), (4, 5)])

    def test_a_call_requested_again_after_every_output(self):
        # every toolCall joins all the turns since the first (they were copied into the turn's ids each time)
        def build(n):
            return [tool_call(*(call(f"fc_{i}") for i in range(n)))] + [m for _ in range(n) for m in (
                part(text="a"), tool_call(call("fc_0")))]
        self.assertEqual(self.growth(build, 60), [(0, 121)])

    def test_a_long_tail_after_many_calls(self):
        # each message of the tail copied the turn's ids
        def build(n):
            return [tool_call(*(call(f"fc_{i}") for i in range(n)))] + [{"usageMetadata": {}}] * n
        self.assertEqual(self.growth(build, 60), [(0, 61)])


class Request(unittest.TestCase):
    def test_the_setup_message_in_either_spelling(self):
        camel = {"setup": {"model": "models/gemini-live-2.5-flash-preview", "generationConfig": {},
                           "tools": [{"functionDeclarations": [
                               {"name": "f", "behavior": "NON_BLOCKING",
                                "parameters": {"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}}}}]},
                               {"googleSearch": {}}]}}
        snake = {"setup": {"model": "m", "tools": [{"function_declarations": [
                    {"name": "f", "parameters_json_schema": {"type": "object"}}]}, {"code_execution": {}}]}}
        self.assertEqual(vts.request_from_body("gemini-live", camel)[:2],
                         ({"f": {"type": "object", "properties": {"a": {"type": "integer"}}}}, {"tools": ["f"]}))
        self.assertEqual(vts.request_from_body("gemini-live", snake)[0], {"f": {"type": "object"}})
        self.assertEqual(vts.request_from_body("gemini-live", camel["setup"])[1], {"tools": ["f"]})

    def test_a_setup_has_no_tool_choice(self):
        with self.assertRaises(vts.CaptureError):
            vts.request_from_body("gemini-live", {"setup": {"tools": [], "toolConfig": {}}})
        report = judge([tool_call(call())], request={"tool_choice": {"mode": "ANY"}})
        self.assertEqual(codes(report), ["invalid_fixture"])

    def test_the_request_conform_hands_an_adapter_reads_back(self):
        body = LIVE.http.request_body(SCHEMAS, {})
        self.assertEqual(set(body), {"setup"})
        self.assertEqual(vts.request_from_body("gemini-live", body)[0], SCHEMAS)


class CaptureAndServe(unittest.TestCase):
    def test_capture_redacts_audio_and_text_and_keeps_the_calls(self):
        events = [{"setupComplete": {"sessionId": "s-1"}},
                  {"serverContent": {"modelTurn": {"role": "model", "parts": [
                      {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "AAAA"}}, {"text": "secret words"},
                      {"functionCall": call()}]}, "outputTranscription": {"text": "secret words"}}},
                  tool_call(call()), {"toolCallCancellation": {"ids": ["fc_1"]}},
                  {"sessionResumptionUpdate": {"newHandle": "handle-1", "resumable": True}},
                  {"serverContent": {"turnComplete": True, "turnCompleteReason": "NEED_MORE_INPUT"}}]
        body = "".join(json.dumps(m) + "\n" for m in events)
        code, out, err = run_cli("capture", "--profile", "gemini-live", "-", stdin=body.encode())
        self.assertEqual(code, 0, err)
        got = json.loads(out)["events"]   # the log's one turn: setupComplete is the session's own
        self.assertNotIn("secret", out)
        self.assertNotIn("handle-1", out)
        self.assertEqual(len(got), 5)
        self.assertEqual(got[0]["serverContent"]["modelTurn"]["parts"],
                         [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": vts.REDACTED_BASE64}},
                          {"text": vts.REDACTED_TEXT}, {"functionCall": call()}])
        self.assertEqual(got[0]["serverContent"]["modelTurn"]["role"], "model")
        self.assertEqual(got[1:3], events[2:4])
        self.assertEqual(got[4]["serverContent"]["turnCompleteReason"], "NEED_MORE_INPUT")

    def test_capture_picks_a_turn_of_a_log(self):
        log = [{"setupComplete": {}}, part(text="a"), content(turnComplete=True), part(text="b"),
               tool_call(call()), {"toolCallCancellation": {"ids": ["fc_1"]}}, part(text="c")]
        body = "".join(json.dumps(m) + "\n" for m in log).encode()
        code, _, err = run_cli("capture", "--profile", "gemini-live", "-", stdin=body)
        self.assertEqual(code, 3)
        self.assertIn("3", err)
        code, out, err = run_cli("capture", "--profile", "gemini-live", "--turn", "1", "-", stdin=body)
        self.assertEqual(code, 0, err)
        self.assertEqual(len(json.loads(out)["events"]), 3)

    def test_a_har_entry_s_websocket_messages_and_the_setup_as_the_request(self):
        import tempfile

        setup = {"setup": {"model": "models/gemini-3.1-flash-live-preview", "tools": [{"functionDeclarations": [
            {"name": "f", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}}}}]}]}}
        sent = [setup, {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "x"}]}], "turnComplete": True}}]
        received = [{"setupComplete": {}}, part(text="secret words"), tool_call(call())]
        messages = [{"type": "send", "time": 1.0, "opcode": 1, "data": json.dumps(sent[0])},
                    {"type": "receive", "time": 1.1, "opcode": 1, "data": json.dumps(received[0])},
                    {"type": "send", "time": 1.2, "opcode": 1, "data": json.dumps(sent[1])}]
        messages += [{"type": "receive", "time": 1.3, "opcode": 1, "data": json.dumps(m)} for m in received[1:]]
        har = {"log": {"version": "1.2", "entries": [{
            "request": {"method": "GET", "url": "wss://generativelanguage.googleapis.com" + LIVE.http.socket.example,
                        "headers": []},
            "response": {"status": 101, "content": {"size": 0, "text": ""}}, "_resourceType": "websocket",
            "_webSocketMessages": messages}]}}
        with tempfile.NamedTemporaryFile("w", suffix=".har", delete=False) as handle:
            json.dump(har, handle)
        self.addCleanup(os.unlink, handle.name)
        code, out, err = run_cli("capture", "--profile", "gemini-live", "--entry", "0", handle.name)
        self.assertEqual(code, 0, err)
        envelope = json.loads(out)
        self.assertEqual((envelope["tool_schemas"], envelope["request"]),
                         ({"f": {"type": "object", "properties": {"a": {"type": "integer"}}}}, {"tools": ["f"]}))
        self.assertEqual(envelope["events"][1:], received[2:])
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")

    def test_claims_are_its_own(self):
        self.assertEqual(vts._families_of(tool_call(call())), ["gemini-live"])
        self.assertEqual(vts._families_of({"candidates": [], "usageMetadata": {}}), ["gemini"])
        self.assertEqual(vts._families_of({"usageMetadata": {}}), [])
        body = (json.dumps(tool_call(call())) + "\n").encode()
        code, _, err = run_cli("capture", "--profile", "gemini", "-", stdin=body)
        self.assertEqual(code, 3)
        self.assertIn("--profile gemini-live", err)

    def test_the_served_socket(self):
        socket = LIVE.http.socket
        self.assertTrue(socket.only)
        for path in ("/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
                     "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained",
                     "/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent", socket.example):
            with self.subTest(path=path):
                self.assertRegex(path, f"^(?:{socket.path})$")
        stream = [part(text="a"), tool_call(call())]
        self.assertEqual(socket.opening(stream), [])
        for log in (stream, [{"setupComplete": {}}] + stream):
            self.assertEqual(socket.reply({"setup": {"model": "m"}}, log), ([{"setupComplete": {}}], True))
        for message in ({"clientContent": {"turnComplete": True}}, {"client_content": {"turnComplete": True}},
                        {"realtimeInput": {"text": "x"}}, {"toolResponse": {"functionResponses": []}}, "x"):
            self.assertEqual(socket.reply(message, stream), ([], False))
        kind, body = LIVE.http.frame(stream, "")
        self.assertEqual(kind, "application/x-ndjson")
        self.assertEqual([json.loads(line) for line in body.decode().splitlines()], stream)

    def test_every_fixture_is_one_turn_of_its_own_log(self):
        for name in sorted(os.listdir(os.path.join(FIXTURES, "gemini-live"))):
            events = load_fixture(f"gemini-live/{name}")[1]["events"]
            with self.subTest(fixture=name):
                turns = LIVE.capture.socket_turns(events)
                if name.startswith("delta-after-terminal"):
                    self.assertEqual(len(turns), 2)
                else:
                    self.assertLessEqual(len(turns), 1)


class ServedSocket(ServedFixtures, unittest.TestCase):
    """`serve` plays each fixture over its WebSocket as google-genai's session asks for it (the standard-library
    client of tests/wsclient.py): setup answered with setupComplete, then the turn after the client's content."""

    SERVE = os.path.join(FIXTURES, "gemini-live")
    SCHEME = "ws"

    def test_every_fixture_after_setup_and_content(self):
        import wsclient

        for prefix, fixture in sorted(self.served.items()):
            events = fixture.stream
            with self.subTest(prefix), wsclient.connect(self.url + prefix + LIVE.http.socket.example) as ws:
                ws.send_text(json.dumps(LIVE.http.request_body(SCHEMAS, {})))
                first = json.loads(ws.receive()[1])
                self.assertEqual(first, {"setupComplete": {}})
                if not fixture.fault.get("cut"):   # a cut socket may be gone by now
                    ws.send_text(json.dumps({"client_content": {"turnComplete": True}}))
                self.assertEqual([json.loads(ws.receive()[1]) for _ in events], events)
                if fixture.fault.get("cut"):
                    self.assertEqual(list(ws.texts()), [])
                    self.assertEqual((ws.ended, ws.closed), (True, False))
                else:
                    ws.close()
                    self.assertEqual(ws.close_code, 1000)

    def test_a_post_is_not_the_stream(self):
        import urllib.error
        import urllib.request

        prefix = "pass-call-without-args"
        url = self.url.replace("ws://", "http://") + prefix + LIVE.http.socket.example
        with self.assertRaises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(urllib.request.Request(url, data=b"{}"), timeout=10)
        self.assertEqual(caught.exception.code, 426)


class _Socket:
    """What google-genai's AsyncSession reads a message from: recv(decode=False) gives each frame's bytes."""

    def __init__(self, messages):
        self.frames = [json.dumps(m).encode() for m in messages]

    async def recv(self, decode=True):
        return self.frames.pop(0)


class _ApiClient:
    vertexai = False


@unittest.skipUnless(importable("google.genai"), "google-genai not importable (tests/adapters/requirements.txt)")
class GoogleGenaiReceive(unittest.TestCase):
    """Each fixture's messages through google-genai's own AsyncSession._receive (binary frames, as the server sends
    them): its LiveServerMessage objects fed to StreamGate give the wire's verdict, or the SDK refuses the message
    (it raises, handing over nothing after it)."""

    REFUSED = {"stream-error-error-message.json": "a message without a known member raises (APIError)",
               "unsupported-event-message-without-a-live-member.json": "the same",
               "unsupported-event-args-as-a-string.json": "its FunctionCall model refuses args that are not an object"}
    # Fixtures google-genai reads otherwise than the wire (its models take snake_case names too): the verdict of
    # what it read.  A function_call part becomes a functionCall part whose arguments differ from the toolCall's.
    SDK_READS = {"unsupported-event-function-call-part-in-snake-case.json": ("blocked", ["unexpected_event"])}

    def items(self, messages):
        from google.genai import live

        async def read():
            session = live.AsyncSession(api_client=_ApiClient(), websocket=_Socket(messages))
            return [await session._receive() for _ in messages]
        return asyncio.run(read())

    def test_every_fixture(self):
        for name in sorted(os.listdir(os.path.join(FIXTURES, "gemini-live"))):
            doc = load_fixture(f"gemini-live/{name}")[1]
            with self.subTest(fixture=name):
                if name in self.REFUSED:
                    with self.assertRaises(Exception):
                        self.items(doc["events"])
                    continue
                assert_sdk_verdict(self, name, doc, self.items(doc["events"]))


def assert_sdk_verdict(test, name, doc, items):
    """google-genai's LiveServerMessage objects fed to the gate give the wire's status, codes and calls, but where
    GoogleGenaiReceive.SDK_READS says what the SDK changes."""
    gate = vts.StreamGate("gemini-live", doc["tool_schemas"], request=doc.get("request"))
    for item in items:
        gate.feed(item)
    report, raw = gate.finish(), vts.validate_envelope(doc)
    status, found = GoogleGenaiReceive.SDK_READS.get(name, (raw["status"], sorted(codes(raw))))
    test.assertEqual((report["status"], sorted(codes(report)), calls_of(report)), (status, found, calls_of(raw)))


@unittest.skipUnless(importable("google.genai") and importable("websockets"),
                     "google-genai or websockets not importable (tests/adapters/requirements.txt)")
class GoogleGenaiOverTheServedSocket(ServedFixtures, unittest.TestCase):
    """Each fixture played by `serve` over a WebSocket and read by google-genai's AsyncSession on a websockets
    connection (its own client library): the setup message, send_client_content (which google-genai spells
    {"client_content": ...}), then _receive for each message of the turn.  google-genai's connect() always asks for
    TLS (its ssl context), so the session is opened on the socket here rather than by connect()."""

    SERVE = os.path.join(FIXTURES, "gemini-live")
    SCHEME = "ws"

    def read(self, prefix, events):
        import websockets
        from google.genai import live

        async def read():
            async with websockets.connect(self.url + prefix + LIVE.http.socket.example) as ws:
                await ws.send(json.dumps(LIVE.http.request_body(SCHEMAS, {})))
                first = json.loads(await ws.recv())
                session = live.AsyncSession(api_client=_ApiClient(), websocket=ws)
                await session.send_client_content(turns={"role": "user", "parts": [{"text": "x"}]}, turn_complete=True)
                return first, [await session._receive() for _ in events]
        return asyncio.run(asyncio.wait_for(read(), 30))

    def test_every_fixture(self):
        for name in sorted(os.listdir(os.path.join(FIXTURES, "gemini-live"))):
            doc = load_fixture(f"gemini-live/{name}")[1]
            with self.subTest(fixture=name):
                if name in GoogleGenaiReceive.REFUSED:
                    with self.assertRaises(Exception):
                        self.read(name[:-5], doc["events"])
                    continue
                first, items = self.read(name[:-5], doc["events"])
                self.assertEqual(first, {"setupComplete": {}})
                assert_sdk_verdict(self, name, doc, items)   # what the session reads after setupComplete


if __name__ == "__main__":
    unittest.main()
