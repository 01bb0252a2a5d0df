"""The OpenAI chat and Mistral profiles: slots, whole Mistral calls, restated finishes, Groq's executed tools."""

import json
import unittest

from support import (
    chat, chat_call, chat_chunk, codes, envelope, INT_SCHEMAS, judge, orc, positions, SCHEMAS, vts,
)


# ---------------------------------------------------------------------------------------------------
# OpenAI chat and Mistral slots (was test_stream_rules.py).
# ---------------------------------------------------------------------------------------------------


class OpenAISlots(unittest.TestCase):
    def test_delayed_identity_and_empty_fragments(self):
        report = judge("openai", [
            chat_chunk(chat_call(0, args='{"a"')),
            chat_chunk(chat_call(0, args="")),
            chat_chunk(chat_call(0, id="c1", args=":1")),
            chat_chunk(chat_call(0, name="f", id="", args="}")),
            chat_chunk(finish="tool_calls"),
        ])
        self.assertEqual(report["status"], "pass", report["findings"])
        self.assertEqual(report["calls"][0]["arguments"], '{"a":1}')

    def test_delta_applies_before_finish_in_the_same_chunk(self):
        report = judge("openai", [chat_chunk(chat_call(0, "c1", "f", "{}"), finish="tool_calls")])
        self.assertEqual(report["status"], "pass")

    def test_identity_collision_position_and_merged_arguments(self):
        report = judge("openai", [
            chat_chunk(chat_call(0, "c1", "f", '{"p":"a"}')),
            chat_chunk(chat_call(0, "c2", None, '{"p":"b"}')),
            chat_chunk(finish="tool_calls"),
        ])
        self.assertEqual(positions(report), [("identity_collision", 1), ("trailing_data", 2)])
        self.assertEqual(report["calls"][0]["arguments"], '{"p":"a"}{"p":"b"}')
        self.assertEqual(report["calls"][0]["id"], "c1")
        self.assertFalse(report["executable"])

    def test_name_in_pieces_is_a_collision_not_a_concatenation(self):
        report = judge("openai", [chat_chunk(chat_call(0, "c1", "ge", "{}")), chat_chunk(chat_call(0, name="t")),
                                chat_chunk(finish="tool_calls")])
        self.assertEqual(codes(report), ["identity_collision", "unknown_tool"])
        self.assertEqual(report["calls"][0]["name"], "ge")

    def test_same_id_on_two_slots(self):
        report = judge("openai", [chat_chunk(chat_call(0, "c1", "f", "{}"), chat_call(1, "c1", "g", "{}")), chat_chunk(finish="tool_calls")])
        self.assertEqual(positions(report), [("identity_collision", 0)])
        self.assertEqual(report["findings"][0]["index"], 1)

    def test_parseable_prefix_is_not_terminal_evidence(self):
        report = judge("openai", [chat_chunk(chat_call(0, "c1", "f", '{"q":"test"}'))])
        self.assertEqual(positions(report), [("missing_terminal", None)])
        self.assertEqual(report["calls"][0]["state"], "blocked")

    def test_indices_must_be_non_negative_integers(self):
        for bad in (True, 0.0, "0", -1, None):
            with self.subTest(index=bad):
                entry = chat_call(0, "c1", "f", "{}")
                entry["index"] = bad
                report = judge("openai", [chat_chunk(entry, finish="tool_calls")])
                self.assertIn("missing_index", codes(report))
                self.assertEqual(report["status"], "blocked")

    def test_huge_index_is_a_gap_not_a_crash(self):
        report = judge("openai", [chat_chunk(chat_call(10 ** 18, "c1", "f", "{}"), finish="tool_calls")])
        self.assertEqual(report["status"], "blocked")
        self.assertIn("missing_slot", codes(report))

    def test_gap_reports_the_missing_index(self):
        report = judge("openai", [chat_chunk(chat_call(0, "c1", "f", "{}"), chat_call(2, "c3", "f", "{}"), finish="tool_calls")])
        self.assertEqual([(f["code"], f["index"]) for f in report["findings"]], [("missing_slot", 1)])

    def test_choice_level_findings_block_that_choices_calls(self):
        report = judge("openai", [chat_chunk(chat_call(0, "c1", "f", "{}"), finish="length")])
        self.assertEqual(codes(report), ["wrong_terminal_reason"])
        self.assertEqual([f["code"] for f in report["calls"][0]["findings"]], ["wrong_terminal_reason"])

    def test_second_finish_on_text_only_choice_is_harmless(self):
        report = judge("openai", [chat_chunk(content="hi", finish="stop"), chat_chunk(finish="stop")])
        self.assertEqual(report["status"], "not_applicable")

    def test_ambiguous_choice_is_reported_once(self):
        report = judge("openai", [chat_chunk(chat_call(0, "a", "f", "{}"), choice=0), chat_chunk(chat_call(0, "b", "f", "{}"), choice=1),
                                chat_chunk(chat_call(0, "c", "f", "{}"), choice=2),
                                chat_chunk(finish="tool_calls", choice=0), chat_chunk(finish="tool_calls", choice=1),
                                chat_chunk(finish="tool_calls", choice=2)])
        self.assertEqual(positions(report), [("ambiguous_choice", 1)])

    def test_too_many_calls_is_a_limit(self):
        entries = [chat_call(i, f"c{i}", "f", "{}") for i in range(5)]
        doc = envelope("openai", [chat_chunk(*entries, finish="tool_calls")], SCHEMAS)
        report = vts.validate_envelope(doc, vts.Limits(max_calls=4))
        self.assertEqual(codes(report), ["limit_exceeded"])

    def test_argument_size_limit(self):
        doc = envelope("openai", [chat_chunk(chat_call(0, "c1", "f", '{"a":"' + "x" * 100 + '"}'), finish="tool_calls")],
                       SCHEMAS)
        self.assertEqual(codes(vts.validate_envelope(doc, vts.Limits(max_argument_bytes=50))), ["limit_exceeded"])

    def test_no_text_content_reaches_the_report(self):
        secret = "SECRET-CONTENT-7f3a"
        report = judge("openai", [chat_chunk(content=secret, reasoning_content=secret),
                                chat_chunk(chat_call(0, "c1", "f", "{}"), refusal=secret), chat_chunk(finish="tool_calls")])
        self.assertEqual(report["status"], "pass")
        self.assertNotIn(secret, json.dumps(report))


class MistralWholeCalls(unittest.TestCase):
    def test_index_less_whole_calls_take_the_next_slots_in_order(self):
        whole = [{"id": "a1", "function": {"name": "f", "arguments": "{}"}},
                 {"id": "b2", "function": {"name": "g", "arguments": '{"x":1}'}}]
        report = judge("mistral", [chat_chunk(*whole, finish="tool_calls")])
        self.assertEqual(report["status"], "pass", report["findings"])
        self.assertEqual([(c["index"], c["id"]) for c in report["calls"]], [(0, "a1"), (1, "b2")])

    def test_index_less_fragment_is_missing_index_on_both_profiles(self):
        fragment = {"function": {"arguments": "{}"}}
        for profile in ("openai", "mistral"):
            with self.subTest(profile=profile):
                self.assertEqual(codes(judge(profile, [chat_chunk(fragment, finish="stop")])), ["missing_index"])

    def test_whole_call_without_index_is_missing_index_on_openai(self):
        whole = {"id": "a1", "function": {"name": "f", "arguments": "{}"}}
        self.assertIn("missing_index", codes(judge("openai", [chat_chunk(whole, finish="tool_calls")])))

# ---------------------------------------------------------------------------------------------------
# Provider fidelity, issue 21 (was test_fidelity.py): chat finishes restated, Groq executed tools.
# ---------------------------------------------------------------------------------------------------


USAGE = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}


R = {"role": "assistant", "content": ""}


CALL = [orc({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]}),
        orc({"role": "assistant", "content": None, "tool_calls": [{"index": 0, "function": {"arguments": '{"a":1}'}}]})]


F1 = orc(R, "tool_calls", "tool_use")


F2 = orc(R, "tool_calls", "tool_use", usage=USAGE)


def gq(delta, finish=None):
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "groq/compound",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


SEARCH = {"index": 0, "type": "search", "arguments": '{"query": "q"}'}


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
        gate = vts.StreamGate("openai", INT_SCHEMAS)
        for item in CALL + [F1, F2]:
            gate.feed(item)
        report = gate.finish()
        self.assertEqual(report, chat(CALL + [F1, F2]) | {"meta": None})
        text = vts.render_text(report)
        self.assertIn('note: choice 0 restated its finish_reason "tool_calls" at position 3', text)
        self.assertNotIn("restated_finishes", vts.render_json(chat(CALL + [F1])))


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


if __name__ == "__main__":
    unittest.main()
