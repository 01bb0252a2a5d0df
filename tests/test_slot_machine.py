"""The slot machine (TurnRules) every profile feeds: regressions found in review."""

import json
import unittest

from support import chat_call, chat_chunk, codes, envelope, judge, positions, SCHEMAS, vts


# ---------------------------------------------------------------------------------------------------
# Review findings on the slot machine (was test_stream_rules.py).
# ---------------------------------------------------------------------------------------------------


class SecondReviewFindings(unittest.TestCase):
    def test_legacy_function_call_finish_alone_is_not_an_empty_turn(self):
        report = judge("openai", [chat_chunk(finish="function_call")])
        self.assertEqual((report["status"], codes(report)), ("blocked", ["unsupported_event"]))

    def test_unknown_tool_shaped_delta_member_is_not_ignored(self):
        entry = {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}
        report = judge("openai", [chat_chunk(finish="stop", tool_call=entry)])
        self.assertEqual((report["status"], codes(report)), ("blocked", ["unsupported_event"]))
        self.assertEqual(judge("openai", [chat_chunk(content="x", finish="stop", tool_call_id=None)])["status"],
                         "not_applicable")

    def test_message_start_must_hold_a_message(self):
        for start in ({"type": "message_start", "message": "x"},
                      {"type": "message_start", "message": {"content": "x"}}):
            with self.subTest(start=start):
                self.assertEqual(codes(judge("anthropic", [start])), ["unsupported_event"])
        # a stop_reason already in message_start is the turn's stop_reason (no call: not applicable)
        start = {"type": "message_start", "message": {"content": [], "stop_reason": "end_turn"}}
        self.assertEqual(judge("anthropic", [start, {"type": "message_stop"}])["status"], "not_applicable")


class ReviewFindings(unittest.TestCase):
    """Cases found by adversarial review; each once crashed, hung or read the spec loosely."""

    START = {"type": "message_start", "message": {"id": "msg_1", "content": []}}
    END = [{"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}]

    def anthropic(self, block, *middle, end=True):
        return [self.START, {"type": "content_block_start", "index": 0, "content_block": block}, *middle,
                {"type": "content_block_stop", "index": 0}] + (self.END if end else [])

    def test_lone_surrogate_in_start_input_is_invalid_unicode_not_a_crash(self):
        block = {"type": "tool_use", "id": "t1", "name": "f", "input": {"city": "\ud83d"}}
        self.assertEqual(codes(judge("anthropic", self.anthropic(block))), ["invalid_unicode"])

    def test_lone_surrogate_in_an_id_is_invalid_unicode(self):
        report = judge("openai", [chat_chunk(chat_call(0, "c\ud83d", "f", "{}"), finish="tool_calls")])
        self.assertEqual(codes(report), ["invalid_unicode"])

    def test_tool_use_start_without_input_is_not_guessed(self):
        block = {"type": "tool_use", "id": "t1", "name": "f"}
        self.assertIn("unsupported_event", codes(judge("anthropic", self.anthropic(block))))

    def test_a_pattern_that_needs_much_work_is_stopped_by_the_budget(self):
        # issue 11 item 4: the simulator's steps count against --max-evaluations (any thread) ...
        schemas = {"f": {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(\\w+\\s?){1,1000}$"}}}}
        doc = envelope("openai", [chat_chunk(chat_call(0, "c1", "f", json.dumps({"x": "a" * 999 + "!"})), finish="tool_calls")],
                       schemas)
        report = vts.validate_envelope(doc)
        self.assertEqual(codes(report), ["limit_exceeded"])
        self.assertIn("max_evaluations", report["findings"][0]["message"])
        # ... and the wall-clock budget still stops it on the main thread when that budget is raised
        report = vts.validate_envelope(doc, vts.Limits(max_evaluations=10 ** 9, max_schema_seconds=0.2))
        self.assertEqual(codes(report), ["limit_exceeded"])
        self.assertIn("longer than 0.2 s", report["findings"][0]["message"])

    def test_the_time_budget_leaves_the_callers_alarm_alone(self):
        # issue 11 item 5: the budget once cancelled the caller's ITIMER_REAL timer and could leave
        # its own handler installed
        import signal

        schemas = {"f": {"type": "object", "properties": {"x": {"type": "string", "pattern": "^x$"}}}}
        doc = envelope("openai", [chat_chunk(chat_call(0, "c1", "f", '{"x":"x"}'), finish="tool_calls")], schemas)
        fired = []

        def mine(*_):
            fired.append(True)

        previous = signal.signal(signal.SIGALRM, mine)
        try:
            self.assertEqual(vts.validate_envelope(doc)["status"], "pass")
            self.assertIs(signal.getsignal(signal.SIGALRM), mine)       # handler put back
            signal.setitimer(signal.ITIMER_REAL, 30)
            self.assertEqual(vts.validate_envelope(doc)["status"], "pass")
            remaining = signal.getitimer(signal.ITIMER_REAL)[0]
            self.assertGreater(remaining, 25)                            # the caller's timer still runs
            self.assertIs(signal.getsignal(signal.SIGALRM), mine)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        self.assertEqual(fired, [])

    def test_calls_only_in_a_message_snapshot_are_not_an_empty_turn(self):
        snapshot = {"choices": [{"index": 0, "message": {"tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "stop"}]}
        report = judge("openai", [snapshot])
        self.assertEqual((report["status"], codes(report)), ("blocked", ["unsupported_event"]))

    def test_snapshot_beside_streamed_deltas_is_ignored(self):
        first = chat_chunk(chat_call(0, "c1", "f", "{}"))
        first["choices"][0]["message"] = {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]}
        self.assertEqual(judge("openai", [first, chat_chunk(finish="tool_calls")])["status"], "pass")

    def test_message_start_with_content_is_read_block_by_block(self):
        # a call hidden in message_start never makes the turn look empty: it is read (here:
        # without input, untranslatable) and the turn is blocked
        start = {"type": "message_start", "message": {"content": [{"type": "tool_use", "id": "t", "name": "f"}]}}
        report = judge("anthropic", [start] + self.END)
        self.assertIn("unsupported_event", codes(report))
        self.assertEqual(report["status"], "blocked")
        # a whole call with its stop_reason in message_start, then message_stop (programmatic tool calling)
        whole = {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1},
                 "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}}
        start = {"type": "message_start", "message": {"content": [whole], "stop_reason": "tool_use"}}
        report = judge("anthropic", [start, {"type": "message_stop"}])
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", '{"a":1}'))
        late = [start, {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}]
        self.assertEqual(codes(judge("anthropic", late)), ["duplicate_terminal"])

    def test_one_choice_twice_in_a_chunk(self):
        first = chat_chunk(chat_call(0, "c1", "f", "{}"))
        first["choices"].append({"index": 0, "delta": {}, "finish_reason": "tool_calls"})
        self.assertEqual(positions(judge("openai", [first])), [("unexpected_event", 0)])
        two = chat_chunk(chat_call(0, "c1", "f", "{}"), finish="tool_calls")
        two["choices"].append({"index": 1, "delta": {"content": "x"}, "finish_reason": "stop"})
        self.assertEqual(judge("openai", [two])["status"], "pass")

    def test_custom_tool_calls_are_an_openai_shape_only(self):
        custom = {"index": 0, "id": "c1", "type": "custom", "custom": {"name": "note", "input": "hi"}}
        schemas = {"note": {"type": "string"}}
        report = judge("openai", [chat_chunk(custom, finish="tool_calls")], schemas)
        self.assertEqual((report["status"], report["calls"][0]["kind"]), ("pass", "custom"))
        self.assertEqual(codes(judge("mistral", [chat_chunk(custom, finish="tool_calls")], schemas)),
                         ["unsupported_event", "missing_slot"])
        both = dict(custom, function={"name": "note", "arguments": "{}"})
        self.assertIn("unsupported_event", codes(judge("openai", [chat_chunk(both, finish="tool_calls")], schemas)))

    def test_mistral_whole_call_takes_no_later_fragments(self):
        whole = {"id": "c1", "function": {"name": "f", "arguments": '{"city":'}}
        report = judge("mistral", [chat_chunk(whole), chat_chunk(chat_call(0, args='"x"}'), finish="tool_calls")])
        self.assertIn("unexpected_event", codes(report))
        self.assertEqual(report["status"], "blocked")

    def test_error_after_message_stop_is_still_a_stream_error(self):
        block = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
        report = judge("anthropic", self.anthropic(block) + [{"type": "error", "error": {"type": "overloaded_error"}}])
        self.assertEqual(set(codes(report)), {"stream_error", "delta_after_terminal"})

    def test_type_must_be_function_when_present_and_error_member_is_an_error(self):
        entry = chat_call(0, "c1", "f", "{}", type="")
        self.assertIn("unsupported_event", codes(judge("openai", [chat_chunk(entry, finish="tool_calls")])))
        errored = chat_chunk(chat_call(0, "c1", "f", "{}"), finish="tool_calls")
        errored["error"] = None
        self.assertIn("stream_error", codes(judge("openai", [errored])))

    def test_stream_text_never_reaches_messages(self):
        secret = "my secret 123"
        report = judge("openai", [{"choices": [{"index": 0, "delta": secret}]}, secret,
                                chat_chunk(chat_call(0, "c1", "f", "{}"), finish=secret)])
        self.assertEqual(report["status"], "blocked")
        self.assertNotIn(secret, json.dumps(report))
        events = [self.START, {"type": secret}, {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": secret}}]
        self.assertNotIn(secret, json.dumps(judge("anthropic", events)))

    def test_calls_past_the_limit_are_not_tracked(self):
        entries = [chat_call(i, f"c{i}", "f", "{}") for i in range(50)]
        doc = envelope("openai", [chat_chunk(*entries, finish="tool_calls")], SCHEMAS)
        report = vts.validate_envelope(doc, vts.Limits(max_calls=10))
        self.assertEqual(len(report["calls"]), 10)
        self.assertEqual(codes(report), ["limit_exceeded"])


if __name__ == "__main__":
    unittest.main()
