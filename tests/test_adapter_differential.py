"""Adapter differential: reading an adapter's final calls and comparing them with ours."""

import json
import os
import unittest
from unittest import mock

from support import FIXTURES, vts


def ours(*calls):
    """Report-shaped calls: (id, name, arguments[, choice, index])."""
    out = []
    for number, call in enumerate(calls):
        call_id, name, arguments = call[:3]
        choice, index = call[3:] if len(call) > 3 else (0, number)
        out.append({"choice": choice, "index": index, "id": call_id, "name": name, "arguments": arguments,
                    "state": "validated", "findings": []})
    return out


def plain(*calls):
    return [{"id": i, "name": n, "arguments": a, "compare_parsed": False} for i, n, a in calls]


class AdapterFormats(unittest.TestCase):
    def test_plain_list(self):
        doc = [{"id": "c1", "name": "f", "arguments": '{"a":1}'}, {"id": None, "name": "g", "arguments": ""}]
        self.assertEqual(vts.adapter_calls_from_doc(doc), plain(("c1", "f", '{"a":1}'), (None, "g", "")))

    def test_plain_list_with_object_arguments_is_compared_parsed(self):
        [call] = vts.adapter_calls_from_doc([{"id": "c1", "name": "f", "arguments": {"a": "é", "b": [1]}}])
        self.assertTrue(call["compare_parsed"])
        self.assertEqual(call["input"], {"a": "é", "b": [1]})
        self.assertEqual(call["arguments"], '{"a":"é","b":[1]}')

    def test_plain_list_refusals(self):
        for doc in ([{"id": "c1", "name": "f"}], [{"id": "c1", "name": "f", "arguments": "{}", "args": {}}],
                    [{"id": 1, "name": "f", "arguments": "{}"}], [{"id": "c", "name": "f", "arguments": [1]}], ["x"]):
            with self.subTest(doc=doc), self.assertRaises(vts.CaptureError):
                vts.adapter_calls_from_doc(doc)

    def test_openai_completion(self):
        doc = {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
            {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}}]}
        self.assertEqual(vts.adapter_calls_from_doc(doc), plain(("c1", "f", '{"a": 1}'), ("c2", "g", "{}")))

    def test_openai_completion_uses_the_one_choice_with_calls(self):
        doc = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "text only"}},
                           {"index": 1, "message": {"role": "assistant", "tool_calls": [
                               {"id": "c1", "function": {"name": "f", "arguments": "{}"}}]}}]}
        self.assertEqual(vts.adapter_calls_from_doc(doc), plain(("c1", "f", "{}")))

    def test_openai_completion_without_calls(self):
        doc = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "tool_calls": None}}]}
        self.assertEqual(vts.adapter_calls_from_doc(doc), [])

    def test_openai_completion_with_calls_in_two_choices_is_refused(self):
        message = {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]}
        with self.assertRaises(vts.CaptureError):
            vts.adapter_calls_from_doc({"choices": [{"index": 0, "message": message}, {"index": 1, "message": message}]})

    def test_bare_assistant_message(self):
        doc = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x":true}'}}]}
        self.assertEqual(vts.adapter_calls_from_doc(doc), plain(("c1", "f", '{"x":true}')))
        self.assertEqual(vts.adapter_calls_from_doc({"role": "assistant", "content": "hi"}), [])

    def test_openai_refusals(self):
        for doc in ({"choices": "x"}, {"choices": [{"index": 0}]},
                    {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "f"}}]},
                    {"role": "assistant", "tool_calls": [{"id": "c", "function": "f"}]},
                    {"role": "assistant", "tool_calls": {"id": "c"}},
                    {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}):
            with self.subTest(doc=doc), self.assertRaises(vts.CaptureError):
                vts.adapter_calls_from_doc(doc)

    def test_anthropic_message(self):
        doc = {"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use", "content": [
            {"type": "thinking", "thinking": "...", "signature": "..."},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"path": "a b", "n": 1.5, "ok": False}},
            {"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}}]}
        calls = vts.adapter_calls_from_doc(doc)
        self.assertEqual([(c["id"], c["name"], c["arguments"], c["compare_parsed"]) for c in calls], [
            ("toolu_1", "f", '{"path":"a b","n":1.5,"ok":false}', True), ("toolu_2", "g", "{}", True)])
        self.assertEqual(calls[0]["input"], {"path": "a b", "n": 1.5, "ok": False})

    def test_anthropic_refusals(self):
        for doc in ({"content": [{"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}]},
                    {"content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}]},
                    {"content": ["text"]}):
            with self.subTest(doc=doc), self.assertRaises(vts.CaptureError):
                vts.adapter_calls_from_doc(doc)

    def test_other_shapes_refused(self):
        for doc in ("calls", 3, None, {"calls": []}, {"content": "hi"}):
            with self.subTest(doc=doc), self.assertRaises(vts.CaptureError):
                vts.adapter_calls_from_doc(doc)

    def test_an_argument_object_is_written_right_below_the_reader(self):
        # An adapter's argument object is written compact by _adapter_call, in C but against the same
        # recursion limit: each frame above it lowers how deep the object may nest (with a listed call
        # read by a helper from a comprehension, an object nested 988 lists deep under --max-depth
        # 100000 was an internal error; one level more is refused as not strict JSON anyway)
        import sys
        args = {"a": [[1]]}
        docs = {"a list of calls": ([{"id": "c", "name": "f", "arguments": args}], ["_adapter_call"]),
                "a completion": ({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": args}}]}}]},
                    ["_adapter_completion", "_adapter_openai_calls", "_adapter_call"]),
                "a message": ({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {
                    "name": "f", "arguments": args}}]}, ["_adapter_openai_calls", "_adapter_call"]),
                "an anthropic message": ({"role": "assistant", "content": [{"type": "tool_use", "id": "c",
                                                                            "name": "f", "input": args}]},
                                         ["_adapter_anthropic", "_adapter_call"])}
        for label, (doc, expected) in docs.items():
            chains = []

            def watch(frame, event, arg):
                if event == "call" and frame.f_code.co_name == "_adapter_call":
                    chain = []
                    while frame.f_code.co_name != "adapter_calls_from_doc":
                        chain.append(frame.f_code.co_name)
                        frame = frame.f_back
                    chains.append(chain[::-1])

            with self.subTest(doc=label):
                sys.setprofile(watch)
                try:
                    [call] = vts.adapter_calls_from_doc(doc)
                finally:
                    sys.setprofile(None)
                self.assertEqual((call["arguments"], chains), ('{"a":[[1]]}', [expected]))


class Differences(unittest.TestCase):
    def test_parsed_arguments_are_compared_right_below_compare_calls(self):
        # Our argument string is parsed, and compared with the adapter's object, in C as deep as the stack
        # allows: each frame above lowers how deep arguments may nest (under --max-depth) before the
        # comparison runs out of stack, so _parsed_difference runs from compare_calls itself
        import sys
        chains = []

        def watch(frame, event, arg):
            if event == "call" and frame.f_code.co_name == "_parsed_difference":
                chains.append(frame.f_back.f_code.co_name)

        [call] = vts.adapter_calls_from_doc([{"id": "c1", "name": "f", "arguments": {"a": [2]}}])
        sys.setprofile(watch)
        try:
            [(number, message)] = vts.compare_calls(ours(("c1", "f", '{"a":[1]}')), [call])
        finally:
            sys.setprofile(None)
        self.assertEqual((number, chains), (0, ["compare_calls"]))
        self.assertIn("arguments", message)

    def test_identical_calls_have_no_difference(self):
        self.assertEqual(vts.compare_calls(ours(("c1", "f", '{"a":1}')), plain(("c1", "f", '{"a":1}'))), [])
        self.assertEqual(vts.compare_calls([], []), [])

    def test_count_mismatch(self):
        diffs = vts.compare_calls(ours(("c1", "f", '{"p":"a"}'), ("c2", "f", '{"p":"b"}')),
                                  plain(("c1c2", "f", '{"p":"a"}{"p":"b"}')))
        self.assertEqual(diffs[0][0], None)
        self.assertIn("2 call(s)", diffs[0][1])
        self.assertIn("produced 1", diffs[0][1])
        self.assertEqual([number for number, _ in diffs], [None, 0, 0])

    def test_id_difference_shows_both_values(self):
        [(number, message)] = vts.compare_calls(ours(("call_1", "f", "{}")), plain(("call_1call_1", "f", "{}")))
        self.assertEqual(number, 0)
        self.assertIn('"call_1"', message)
        self.assertIn('"call_1call_1"', message)
        self.assertIn("id", message)

    def test_null_id_against_invented_id(self):
        [(_, message)] = vts.compare_calls(ours((None, "f", "{}")), plain(("null", "f", "{}")))
        self.assertIn("null", message)
        self.assertIn('"null"', message)

    def test_name_difference(self):
        [(number, message)] = vts.compare_calls(ours(("c", "get_weather", "{}")), plain(("c", "get_weatherget_weather", "{}")))
        self.assertEqual(number, 0)
        self.assertIn("name differs", message)

    def test_arguments_byte_for_byte(self):
        [(number, message)] = vts.compare_calls(ours(("c", "f", '{"a": 1}')), plain(("c", "f", '{"a":1}')))
        self.assertEqual(number, 0)
        self.assertIn("character 5", message)
        [(_, message)] = vts.compare_calls(ours(("c", "f", '{"a":1.0}')), plain(("c", "f", '{"a":1}')))
        self.assertIn("arguments differ", message)

    def test_second_call_is_numbered(self):
        diffs = vts.compare_calls(ours(("a", "f", "{}"), ("b", "f", "{}")), plain(("a", "f", "{}"), ("b", "g", "{}")))
        self.assertEqual([number for number, _ in diffs], [1])

    def test_long_values_are_clipped_around_the_difference(self):
        long = '{"s":"' + "x" * 5000 + '"}'
        other = '{"s":"' + "x" * 3000 + "y" + "x" * 1999 + '"}'
        [(_, message)] = vts.compare_calls(ours(("c", "f", long)), plain(("c", "f", other)))
        self.assertLess(len(message), 600)
        self.assertIn("character 3006", message)
        self.assertIn("y", message)

    def test_parsed_equal_ignores_spacing_order_and_number_form(self):
        adapter = vts.adapter_calls_from_doc([{"id": "c", "name": "f", "arguments": {"b": [1, 2.0], "a": "é"}}])
        self.assertEqual(vts.compare_calls(ours(("c", "f", '{ "a" : "\\u00e9", "b": [1.0, 2] }')), adapter), [])

    def test_parsed_bool_is_not_int(self):
        adapter = vts.adapter_calls_from_doc([{"id": "c", "name": "f", "arguments": {"a": True}}])
        [(number, message)] = vts.compare_calls(ours(("c", "f", '{"a":1}')), adapter)
        self.assertEqual(number, 0)
        self.assertIn("differ as JSON", message)

    def test_parsed_against_unparseable_arguments(self):
        adapter = vts.adapter_calls_from_doc({"content": [{"type": "tool_use", "id": "t", "name": "f",
                                                           "input": {"a": 1}}]})
        for text in ('{"a":1', "", '{"a":1}{"a":2}'):
            with self.subTest(text=text):
                [(_, message)] = vts.compare_calls(ours(("t", "f", text)), adapter)
                self.assertIn("not JSON", message)

    def test_parsed_duplicate_key_last_wins_like_the_adapter(self):
        adapter = vts.adapter_calls_from_doc([{"id": "c", "name": "f", "arguments": {"a": 2}}])
        self.assertEqual(vts.compare_calls(ours(("c", "f", '{"a":1,"a":2}')), adapter), [])

    def test_every_difference_kind_at_once(self):
        diffs = vts.compare_calls(ours(("a", "f", "{}"), ("b", "g", '{"x":1}')),
                                  plain(("A", "F", "{ }"), ("b", "g", '{"x":1}'), ("c", "h", "{}")))
        self.assertEqual([number for number, _ in diffs], [None, 0, 0, 0])

    def test_findings_carry_the_new_code_and_slot(self):
        calls = ours(("a", "f", "{}", 1, 0))
        findings = vts.adapter_findings(calls, vts.compare_calls(calls, plain(("b", "f", "{}"))))
        self.assertEqual([(f.code, f.choice, f.index, f.position) for f in findings],
                         [("adapter_mismatch", 1, 0, None)])
        count = vts.adapter_findings(calls, vts.compare_calls(calls, []))
        self.assertEqual([(f.code, f.choice, f.index) for f in count], [("adapter_mismatch", None, None)])


class SameArguments(unittest.TestCase):
    """The verdict's comparison (adapter harness and `conform`): JSON values, duplicates detected."""

    def test_a_duplicate_key_is_never_the_same_arguments(self):
        # issue 30: json.loads kept the last value, so a string that also carries "rm -rf /" agreed
        clean = '{"city":"Paris"}'
        for theirs, ours_ in (('{"city":"rm -rf /","city":"Paris"}', clean),
                              (clean, '{"city":"rm -rf /","city":"Paris"}'),
                              ('{"city":"Paris","city":"Paris"}', '{"city":"Paris","city":"Paris"}'),
                              ('{"a":{"city":"x","city":"Paris"}}', '{"a":{"city":"Paris"}}')):
            with self.subTest(theirs=theirs, ours=ours_):
                self.assertFalse(vts.same_arguments(theirs, ours_))
        self.assertFalse(vts.same_arguments({"city": "Paris"}, '{"city":"rm -rf /","city":"Paris"}'))
        self.assertEqual(vts.call_differences([{"name": "f", "arguments": '{"a":1,"a":2}'}],
                                              [{"name": "f", "arguments": '{"a":2}'}]), ["call 0: arguments"])

    def test_json_values_in_the_adapter_dialect(self):
        self.assertTrue(vts.same_arguments('{ "b": [1.0, 2], "a": "\\u00e9" }', '{"a":"é","b":[1,2.0]}'))
        self.assertTrue(vts.same_arguments({"n": 10 ** 30}, '{"n":1000000000000000000000000000000}'))
        self.assertFalse(vts.same_arguments({"n": float("nan")}, '{"n":NaN}'))      # NaN equals nothing
        self.assertFalse(vts.same_arguments('{"n":1e400}', '{"n":Infinity}'))       # 1e400 keeps its value
        self.assertFalse(vts.same_arguments({"a": True}, '{"a":1}'))
        self.assertTrue(vts.same_arguments("not json", "not json"))                # text where neither is JSON
        self.assertTrue(vts.same_arguments('"free text"', "free text", custom=True))

    def test_an_argument_string_that_cannot_hold_ours_is_not_parsed(self):
        # found by review (issue 30): what is inside an adapter's argument string was never counted, and
        # a 10 MB "[[[[..." or a 30-million-digit number there cost gigabytes; such a string is told
        # apart from ours by its commas, brackets and braces and its number tokens, without parsing it
        ours = '{"city":"Paris"}'
        parsed = []
        real = vts.adapter_json

        def counting(text, *args, **kwargs):
            parsed.append(text)
            return real(text, *args, **kwargs)

        with mock.patch.object(vts, "adapter_json", side_effect=counting):
            for theirs in ("[" * 100 + "]" * 100,                  # deeper than ours (other counts)
                           '{"city":' + "9" * 1001 + "}",          # a number token no passing turn holds
                           '{"city":"Paris","x":[1]}'):             # more values than ours
                with self.subTest(theirs=theirs[:20]):
                    self.assertFalse(vts.same_arguments(theirs, ours))
                    self.assertFalse(vts.same_arguments(theirs, "free text", custom=True))
                    self.assertEqual(vts.call_differences([{"name": "f", "arguments": theirs}],
                                                          [{"name": "f", "arguments": ours}]), ["call 0: arguments"])
            self.assertEqual(parsed, [])
            # what could be ours is still parsed and compared as JSON: spacing, a 1000-digit number
            self.assertTrue(vts.same_arguments('{ "city" : "Paris" }', ours))
            self.assertFalse(vts.same_arguments('{"city":' + "9" * 1000 + "}", ours))
            self.assertTrue(vts.same_arguments('"free text"', "free text", custom=True))
            self.assertEqual(len(parsed), 5)
            self.assertTrue(vts.same_arguments("[" * 100 + "]" * 100, "[" * 100 + "]" * 100))   # the same text

    def test_a_call_none_of_ours_could_match_is_not_parsed_to_look_for_another_order(self):
        # found with the fix above: looking for the same calls in another order parsed each adapter
        # argument string (json.loads), and 12 million floats in one took 1.9 GB and 29 s
        ours = [{"name": "f", "arguments": '{"a":1}'}, {"name": "f", "arguments": '{"b":[2]}'}]
        with mock.patch.object(vts, "_got_keys", side_effect=AssertionError("parsed")):
            self.assertEqual(vts.call_differences([{"name": "f", "arguments": "[" + "1.5," * 50 + "1]"},
                                                   {"name": "f", "arguments": '{"a":1}'}], ours),
                             ["call 0: arguments", "call 1: arguments"])
        self.assertEqual(vts.call_differences(ours[::-1], ours), ["same calls in another order"])

    def test_calls_in_another_order_compare_their_arguments_right_below_the_search(self):
        # same_arguments compares deep arguments as JSON until the stack runs out, then as text: each frame
        # above it lowers that depth, so the search for another order calls _call_problems itself
        import sys
        callers = []

        def watch(frame, event, arg):
            if event == "call" and frame.f_code.co_name == "_call_problems":
                callers.append(frame.f_back.f_code.co_name)

        ours = [{"name": "f", "arguments": '{"a":[1]}'}, {"name": "f", "arguments": '{"b":[2]}'}]
        sys.setprofile(watch)
        try:
            found = vts.call_differences(ours[::-1], ours)
        finally:
            sys.setprofile(None)
        self.assertEqual(found, ["same calls in another order"])
        self.assertEqual(set(callers), {"call_differences", "_same_calls_reordered"})


class AgainstFixtures(unittest.TestCase):
    def report(self, folder, name):
        with open(os.path.join(FIXTURES, folder, name), "rb") as handle:
            return vts.validate_envelope(json.loads(handle.read()))

    def test_faithful_openai_adapter_matches(self):
        report = self.report("openai", "valid-fragmented-single-call.json")
        adapter = vts.adapter_calls_from_doc({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
            {"id": "call_Wq8rT2mZkP4vN6xY1bC3dE5f", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris","unit":"celsius"}'}}]}}]})
        self.assertEqual(vts.compare_calls(report["calls"], adapter), [])

    def test_faithful_anthropic_adapter_matches_parsed(self):
        report = self.report("anthropic", "pass-thinking-then-tool-use.json")
        adapter = vts.adapter_calls_from_doc({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "tool_use", "id": "toolu_01pYiz3sjH8997M9mjcI2qZ7", "name": "read_file",
             "input": {"max_lines": 120, "path": "config/app.toml"}}]})
        self.assertEqual(vts.compare_calls(report["calls"], adapter), [])

    def test_merging_adapter_is_caught(self):
        report = self.report("openai", "valid-interleaved-parallel-two-tools-usage-chunk.json")
        self.assertEqual(len(report["calls"]), 2)
        calls = report["calls"]
        merged = [{"id": calls[0]["id"], "name": calls[0]["name"],
                   "arguments": calls[0]["arguments"] + calls[1]["arguments"]}]
        diffs = vts.compare_calls(calls, vts.adapter_calls_from_doc(merged))
        self.assertEqual([number for number, _ in diffs], [None, 0])


if __name__ == "__main__":
    unittest.main()
