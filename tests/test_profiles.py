"""The openai-responses and bedrock profiles, end to end through the real script.

Run: cd /tmp/vts_profiles && PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -v test_profiles
"""

import contextlib
import io
import json
import os
import unittest

from support import FIXTURES, vts


SCHEMAS = {"f": {"type": "object"}, "g": {"type": "object"}}
NEW_PROFILES = ("openai-responses", "bedrock")


def new_profile_fixtures():
    found = []
    for profile in NEW_PROFILES:
        folder = os.path.join(FIXTURES, profile)
        found += [f"{profile}/{name}" for name in sorted(os.listdir(folder)) if name.endswith(".json")]
    return found


def run(profile, events, schemas=SCHEMAS):
    return vts.validate_envelope({"profile": profile, "tool_schemas": schemas, "events": events})


def code_set(report):
    return {f["code"] for f in report["findings"]}


def positions(report):
    return [(f["code"], f["position"]) for f in report["findings"]]


# Each fixture's exact outcome is checked by test_fixtures.py, which walks every profile folder.


class FixtureSet(unittest.TestCase):
    def test_each_profile_has_every_kind_and_enough_fixtures(self):
        for profile in NEW_PROFILES:
            paths = [p for p in new_profile_fixtures() if p.startswith(profile + "/")]
            self.assertGreaterEqual(len(paths), 15, profile)
            docs = []
            for path in paths:
                with open(os.path.join(FIXTURES, path), encoding="utf-8") as handle:
                    docs.append(json.load(handle))
            self.assertEqual({d["expect"]["status"] for d in docs}, {"pass", "blocked", "not_applicable"})
            pinned = set().union(*(d["expect"]["codes"] for d in docs))
            self.assertLessEqual(pinned, set(vts.FINDING_CODES))
            for code in ("missing_terminal", "wrong_terminal_reason", "duplicate_terminal", "delta_after_terminal",
                         "identity_collision", "missing_slot", "unexpected_event", "stream_error",
                         "unsupported_event", "malformed_json", "schema_violation"):
                self.assertIn(code, pinned, profile)
            for d in docs:
                self.assertEqual(d["profile"], profile)
                self.assertEqual(d["meta"]["adapter"], "synthetic")

    def test_cli_in_process_with_expect(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = vts.main([os.path.join(FIXTURES, p) for p in NEW_PROFILES] + ["--expect"])
        self.assertEqual(code, 0, err.getvalue())
        summary = json.loads(out.getvalue().splitlines()[-1])["summary"]
        self.assertEqual(summary["fixtures"], len(new_profile_fixtures()))
        self.assertEqual(summary.get("expect_mismatches", 0), 0)


class Envelope(unittest.TestCase):
    def test_chunks_key_is_invalid_on_new_profiles(self):
        for profile in NEW_PROFILES:
            report = vts.validate_envelope({"profile": profile, "tool_schemas": {}, "chunks": []})
            self.assertEqual(code_set(report), {"invalid_fixture"})

    def test_events_must_be_a_list(self):
        report = vts.validate_envelope({"profile": "bedrock", "tool_schemas": {}, "events": {}})
        self.assertEqual(code_set(report), {"invalid_fixture"})

    def test_empty_streams_are_not_applicable(self):
        for profile in NEW_PROFILES:
            self.assertEqual(run(profile, [])["status"], "not_applicable")

    def test_stream_gate_library_api(self):
        gate = vts.StreamGate("bedrock", SCHEMAS)
        for event in bedrock_call():
            gate.feed(event)
        self.assertEqual(gate.finish()["status"], "pass")


# --- openai-responses in memory ------------------------------------------------

def created():
    return {"type": "response.created", "response": {"id": "resp_x", "status": "in_progress"}}


def added(oi=0, fc="fc_1", call_id="call_1", name="f", arguments="", kind="function_call"):
    item = {"type": kind, "id": fc, "status": "in_progress"}
    if kind == "function_call":
        item.update({"arguments": arguments, "call_id": call_id, "name": name})
        if call_id is None:
            del item["call_id"]
    return {"type": "response.output_item.added", "output_index": oi, "item": item}


def delta(piece, oi=0, fc="fc_1"):
    return {"type": "response.function_call_arguments.delta", "item_id": fc, "output_index": oi, "delta": piece}


def done(args, oi=0, fc="fc_1", name=None):
    event = {"type": "response.function_call_arguments.done", "item_id": fc, "output_index": oi, "arguments": args}
    if name is not None:
        event["name"] = name
    return event


def item_done(args, oi=0, fc="fc_1", call_id="call_1", name="f", status="completed"):
    return {"type": "response.output_item.done", "output_index": oi,
            "item": {"type": "function_call", "id": fc, "call_id": call_id, "name": name, "arguments": args,
                     "status": status}}


COMPLETED = {"type": "response.completed", "response": {"status": "completed"}}


def responses_call(args='{"a":1}', **kw):
    return [created(), added(**kw), delta(args), done(args), item_done(args, call_id=kw.get("call_id", "call_1")),
            COMPLETED]


class ResponsesEdges(unittest.TestCase):
    def test_minimal_pass(self):
        report = run("openai-responses", responses_call())
        self.assertEqual(report["status"], "pass", report["findings"])
        self.assertEqual(report["calls"][0]["id"], "call_1")

    def test_done_name_differs_is_identity_collision(self):
        stream = [created(), added(), delta("{}"), done("{}", name="g"), item_done("{}"), COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("identity_collision", 3)])

    def test_output_item_done_arguments_differ(self):
        stream = [created(), added(), delta("{}"), done("{}"), item_done('{"b":2}'), COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("unexpected_event", 4)])

    def test_output_item_done_call_id_differs(self):
        stream = [created(), added(), delta("{}"), done("{}"), item_done("{}", call_id="call_9"), COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("identity_collision", 4)])

    def test_non_empty_initial_arguments(self):
        # the added item states arguments that the deltas (and everything after) contradict
        stream = [created(), added(arguments='{"a":1}'), delta("{}"), done("{}"), item_done("{}"), COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("unexpected_event", 4)])

    def test_absent_call_id_is_missing_id(self):
        report = run("openai-responses", responses_call(call_id=None))
        self.assertEqual(positions(report), [("missing_id", 4)])

    def test_call_id_arriving_only_in_output_item_done(self):
        stream = responses_call(call_id=None)
        stream[4] = item_done('{"a":1}', call_id="call_late")
        self.assertEqual(positions(run("openai-responses", stream)), [("identity_collision", 4), ("missing_id", 4)])

    def test_second_response_completed_is_duplicate_terminal(self):
        report = run("openai-responses", responses_call() + [COMPLETED])
        self.assertEqual(positions(report), [("duplicate_terminal", 6)])

    def test_error_after_completed_is_stream_error(self):
        report = run("openai-responses", responses_call() + [{"type": "error", "error": {"code": "x"}}])
        self.assertEqual(positions(report), [("stream_error", 6)])

    def test_second_response_created(self):
        report = run("openai-responses", [created()] + responses_call())
        self.assertEqual(positions(report), [("unexpected_event", 1)])

    def test_unknown_event(self):
        stream = responses_call()[:-1] + [{"type": "response.audio.delta", "delta": "AAAA"}, COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("unsupported_event", 5)])

    def test_custom_tool_call_is_checked_against_a_string_schema(self):
        def stream(text):
            return [created(), {"type": "response.output_item.added", "output_index": 0, "item": {
                        "type": "custom_tool_call", "id": "ctc_1", "call_id": "call_2", "name": "note", "input": ""}},
                    {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_1",
                     "delta": text},
                    {"type": "response.custom_tool_call_input.done", "output_index": 0, "item_id": "ctc_1",
                     "input": text},
                    {"type": "response.output_item.done", "output_index": 0, "item": {
                        "type": "custom_tool_call", "id": "ctc_1", "call_id": "call_2", "name": "note", "input": text}},
                    COMPLETED]
        schemas = {"note": {"type": "string", "maxLength": 5}, "f": {"type": "object"}}
        report = run("openai-responses", stream("hello"), schemas)
        self.assertEqual((report["status"], report["calls"][0]["kind"], report["calls"][0]["arguments"]),
                         ("pass", "custom", "hello"))
        self.assertEqual(positions(run("openai-responses", stream("hello!"), schemas)), [("schema_violation", 4)])
        self.assertEqual(positions(run("openai-responses", stream("hi"), {"note": {"type": "object"}})),
                         [("unsupported_schema", 4)])
        self.assertEqual(positions(run("openai-responses", stream("hi"), {})), [("unknown_tool", 4)])

    def test_text_delta_on_function_call_item(self):
        stream = responses_call()[:2] + [
            {"type": "response.output_text.delta", "item_id": "fc_1", "output_index": 0, "delta": "x"}
        ] + responses_call()[2:]
        self.assertEqual(positions(run("openai-responses", stream)), [("unexpected_event", 2)])

    def test_argument_delta_on_message_item(self):
        stream = [created(), added(kind="message", fc="msg_1"), delta("{}", fc="msg_1"), COMPLETED]
        report = run("openai-responses", stream)
        self.assertEqual(positions(report), [("unexpected_event", 2)])
        self.assertEqual(report["calls"], [])

    def test_missing_output_index(self):
        stream = responses_call()
        del stream[2]["output_index"]
        # the unreadable delta is a finding; the call itself takes the .done restatement
        self.assertEqual(code_set(run("openai-responses", stream)), {"missing_index"})

    def test_done_only_arguments_are_one_complete_call(self):
        # LM Studio / Codex: no delta; the .done event and the done item state the arguments
        stream = [created(), added(), done('{"a":1}'), item_done('{"a":1}'), COMPLETED]
        report = run("openai-responses", stream)
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", '{"a":1}'))
        stream = [created(), added(), done('{"a":1}'), item_done("{}"), COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("unexpected_event", 3)])

    def test_whole_call_in_the_added_item(self):
        # xAI: the item arrives complete, with no argument events
        stream = [created(), added(arguments='{"a":1}'), item_done('{"a":1}'), COMPLETED]
        report = run("openai-responses", stream)
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", '{"a":1}'))

    def test_a_call_needs_its_output_item_done(self):
        stream = [created(), added(), delta('{"a":1}'), done('{"a":1}'), COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("missing_terminal", None)])

    def test_final_output_must_hold_exactly_the_streamed_calls(self):
        call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"a":1}'}
        for output, expected in (([call], []), (None, []),
                                 ([], [("unexpected_event", 5)]),
                                 ([call, dict(call, call_id="call_2")], [("unexpected_event", 5)]),
                                 ([dict(call, arguments='{"a":2}')], [("unexpected_event", 5)]),
                                 ([dict(call, name="g")], [("identity_collision", 5)])):
            with self.subTest(output=output):
                stream = responses_call()[:-1] + [{"type": "response.completed", "response": {"output": output}}]
                self.assertEqual(positions(run("openai-responses", stream)), expected)
        text_only = [created(), added(kind="message", fc="msg_1"),
                     {"type": "response.completed", "response": {"output": [call]}}]
        report = run("openai-responses", text_only)
        self.assertEqual((report["status"], positions(report)), ("blocked", [("unexpected_event", 2)]))

    def test_empty_arguments_everywhere_is_malformed_json(self):
        stream = [created(), added(), done(""), item_done(""), COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("malformed_json", 3)])

    def test_item_id_reused_across_items(self):
        stream = [created(), added(), delta("{}"), done("{}"), item_done("{}"),
                  added(1, fc="fc_1", call_id="call_2"), delta("{}", 1), done("{}", 1), item_done("{}", 1, call_id="call_2"),
                  COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("identity_collision", 5)])

    def test_output_item_done_twice(self):
        stream = responses_call()[:-1] + [item_done('{"a":1}'), COMPLETED]
        self.assertEqual(positions(run("openai-responses", stream)), [("duplicate_terminal", 5)])

    def test_delta_after_output_item_done(self):
        stream = [created(), added(), delta("{}"), item_done("{}"), delta(" "), done("{} "), COMPLETED]
        self.assertEqual(code_set(run("openai-responses", stream)), {"delta_after_terminal"})

    def test_text_only_incomplete_and_completed_are_not_applicable(self):
        for end in ("response.incomplete", "response.completed"):
            stream = [created(), added(kind="message", fc="msg_1"),
                      {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "x"},
                      {"type": end, "response": {}}]
            self.assertEqual(run("openai-responses", stream)["status"], "not_applicable", end)

    def test_response_failed_without_calls_is_blocked(self):
        report = run("openai-responses", [created(), {"type": "response.failed", "response": {}}])
        self.assertEqual(positions(report), [("stream_error", 1)])

    def test_non_object_event(self):
        self.assertEqual(code_set(run("openai-responses", [created(), "data"])), {"unsupported_event"})

    def test_report_never_echoes_text_content(self):
        stream = [created(), added(kind="message", fc="msg_1"),
                  {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "SECRET-TEXT"},
                  {"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "delta": "SECRET-TEXT"},
                  {"type": "response.output_text.delta", "item_id": "fc_9", "output_index": 5, "delta": "SECRET-TEXT"}]
        self.assertNotIn("SECRET-TEXT", json.dumps(run("openai-responses", stream)))


# --- bedrock in memory ------------------------------------------------------------

def b_start(index=0, tool_id="tooluse_1", name="f", **extra):
    tool = {"toolUseId": tool_id, "name": name, **extra}
    if tool_id is None:
        del tool["toolUseId"]
    return {"contentBlockStart": {"contentBlockIndex": index, "start": {"toolUse": tool}}}


def b_delta(index, **member):
    return {"contentBlockDelta": {"contentBlockIndex": index, "delta": member}}


def b_stop(index=0):
    return {"contentBlockStop": {"contentBlockIndex": index}}


MSG_START = {"messageStart": {"role": "assistant"}}
MSG_STOP = {"messageStop": {"stopReason": "tool_use"}}
END_TURN = {"messageStop": {"stopReason": "end_turn"}}
META = {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}}


def bedrock_call(args='{"a":1}', **kw):
    return [MSG_START, b_start(**kw), b_delta(0, toolUse={"input": args}), b_stop(), MSG_STOP, META]


class BedrockEdges(unittest.TestCase):
    def test_minimal_pass_and_no_delta_tool(self):
        self.assertEqual(run("bedrock", bedrock_call())["status"], "pass")
        report = run("bedrock", [MSG_START, b_start(), b_stop(), MSG_STOP])
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", "{}"))

    def test_zero_or_several_members(self):
        for bad in ({}, {"contentBlockStop": {"contentBlockIndex": 0}, "metadata": {}}, ["messageStart"]):
            stream = bedrock_call()
            stream.insert(4, bad)
            self.assertEqual(positions(run("bedrock", stream)), [("unsupported_event", 4)], bad)

    def test_delta_with_several_members(self):
        stream = [MSG_START, b_delta(0, text="a", citation={}), MSG_STOP]
        self.assertEqual(code_set(run("bedrock", stream)), {"unsupported_event", "missing_slot"})

    def test_second_message_stop_is_duplicate_terminal(self):
        self.assertEqual(positions(run("bedrock", bedrock_call() + [MSG_STOP])), [("duplicate_terminal", 6)])

    def test_metadata_after_stop_fine_other_events_late(self):
        self.assertEqual(run("bedrock", bedrock_call() + [META])["status"], "pass")
        late = run("bedrock", bedrock_call() + [b_delta(1, text="x")])
        self.assertEqual(positions(late), [("delta_after_terminal", 6)])

    def test_exception_after_stop_is_stream_error(self):
        stream = bedrock_call() + [{"throttlingException": {"message": "x"}}]
        self.assertEqual(positions(run("bedrock", stream)), [("stream_error", 6)])

    def test_tool_delta_on_text_block(self):
        stream = [MSG_START, b_delta(0, text="x"), b_delta(0, toolUse={"input": "{}"}), b_stop(0),
                  b_start(1), b_stop(1), MSG_STOP]
        self.assertEqual(positions(run("bedrock", stream)), [("unexpected_event", 2)])

    def test_text_block_stopped_twice_and_late_text(self):
        stream = [MSG_START, b_delta(0, text="x"), b_stop(0), b_stop(0), b_delta(0, text="y"),
                  b_start(1), b_stop(1), MSG_STOP]
        self.assertEqual(positions(run("bedrock", stream)), [("duplicate_terminal", 3), ("delta_after_terminal", 4)])

    def test_stop_for_unknown_block(self):
        stream = bedrock_call()
        stream.insert(4, b_stop(3))
        self.assertEqual(positions(run("bedrock", stream)), [("missing_slot", 4)])

    def test_absent_tool_use_id_is_missing_id(self):
        self.assertEqual(positions(run("bedrock", bedrock_call(tool_id=None))), [("missing_id", 3)])

    def test_tool_result_start_and_server_tool_use(self):
        # a toolResult answering nothing; a system tool this tool has not reviewed; an image start
        stream = [MSG_START, {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolResult": {}}}},
                  b_stop(0), END_TURN]
        self.assertEqual(positions(run("bedrock", stream)), [("missing_slot", 1)])
        stream = [MSG_START, b_start(type="server_tool_use"), b_delta(0, toolUse={"input": "{}"}), b_stop(), END_TURN]
        self.assertEqual(positions(run("bedrock", stream)), [("unsupported_event", 1)])
        stream = [MSG_START, {"contentBlockStart": {"contentBlockIndex": 0, "start": {"image": {"format": "png"}}}},
                  b_stop(0), END_TURN]
        self.assertEqual(positions(run("bedrock", stream)), [("unsupported_event", 1)])

    def test_system_tool_pairs_with_its_result(self):
        use = b_start(tool_id="tooluse_s", name="nova_code_interpreter", type="server_tool_use")
        result = {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolResult": {
            "toolUseId": "tooluse_s", "type": "nova_code_interpreter_result", "status": "success"}}}}
        stream = [MSG_START, use, b_delta(0, toolUse={"input": "{}"}), b_stop(0), result,
                  b_delta(1, toolResult=[{"json": {"stdOut": "1"}}]), b_stop(1), END_TURN]
        report = run("bedrock", stream)
        self.assertEqual((report["status"], report["hosted_tools"]), ("not_applicable", {"nova_code_interpreter": 1}))
        wrong = stream[:5] + [b_delta(1, text="x")] + stream[6:]
        self.assertEqual(positions(run("bedrock", wrong)), [("unexpected_event", 5)])
        unstopped = stream[:6] + [END_TURN]
        self.assertEqual(positions(run("bedrock", unstopped)), [("missing_terminal", None)])

    def test_unknown_delta_member(self):
        stream = bedrock_call()
        stream.insert(3, b_delta(0, image={"format": "png"}))
        self.assertEqual(positions(run("bedrock", stream)), [("unsupported_event", 3)])

    def test_tool_use_stop_reason_without_tool(self):
        report = run("bedrock", [MSG_START, b_delta(0, text="x"), b_stop(0), MSG_STOP])
        self.assertEqual(positions(report), [("missing_slot", 3)])

    def test_missing_block_index(self):
        stream = bedrock_call()
        stream[2] = {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"a":1}'}}}}
        self.assertEqual(code_set(run("bedrock", stream)), {"missing_index"})

    def test_non_string_input_and_stop_reason(self):
        stream = bedrock_call()
        stream[2] = b_delta(0, toolUse={"input": {"a": 1}})
        self.assertEqual(code_set(run("bedrock", stream)), {"unsupported_event"})
        stream = bedrock_call()
        stream[4] = {"messageStop": {}}
        self.assertEqual(code_set(run("bedrock", stream)), {"unsupported_event", "missing_terminal"})

    def test_citation_belongs_to_text_not_reasoning(self):
        stream = [MSG_START, b_delta(0, reasoningContent={"text": "x"}), b_delta(0, citation={"title": "t"}),
                  b_stop(0), MSG_STOP]
        self.assertEqual(positions(run("bedrock", stream)), [("unexpected_event", 2), ("missing_slot", 4)])

    def test_report_never_echoes_text_content(self):
        stream = [MSG_START, b_delta(0, text="SECRET-TEXT"), b_delta(0, toolUse={"input": "SECRET-TEXT"}),
                  b_delta(1, reasoningContent={"text": "SECRET-TEXT"}), b_stop(0), MSG_STOP]
        self.assertNotIn("SECRET-TEXT", json.dumps(run("bedrock", stream)))


class OldProfilesUnchanged(unittest.TestCase):
    def test_existing_profiles_still_work(self):
        report = vts.validate_envelope({"profile": "openai", "tool_schemas": SCHEMAS, "chunks": [
            {"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                "finish_reason": "tool_calls"}]}]})
        self.assertEqual(report["status"], "pass")
        unknown = vts.validate_envelope({"profile": "cohere", "tool_schemas": {}, "events": []})
        self.assertEqual(code_set(unknown), {"unknown_profile"})


if __name__ == "__main__":
    unittest.main()
