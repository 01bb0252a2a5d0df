"""The Bedrock ConverseStream profile: its edge cases, exception and error frames, system tool names."""

import json
import struct
import unittest
import zlib
from unittest import mock

from support import (
    b_delta, b_start, b_stop, bedrock_call, code_set, codes, judge_events, META, MSG_START,
    MSG_STOP, positions, room_fast_paths_agree, room_runs_agree, vts,
)


# ---------------------------------------------------------------------------------------------------
# Bedrock exception and error frames (was test_ci_safety.py, issue 22).
# ---------------------------------------------------------------------------------------------------


def frame(message_type, type_header, name, payload):
    """One AWS event-stream frame with valid checksums."""
    def header(key, value):
        key, value = key.encode(), value.encode()
        return bytes([len(key)]) + key + bytes([7]) + struct.pack(">H", len(value)) + value

    headers = header(":message-type", message_type) + header(type_header, name)
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


class BedrockExceptionFrames(unittest.TestCase):
    def test_an_exception_frame_named_like_a_data_event_is_a_stream_error(self):
        body = (frame("event", ":event-type", "messageStart", {"role": "assistant"})
                + frame("event", ":event-type", "contentBlockStart", {"contentBlockIndex": 0, "start": {
                    "toolUse": {"toolUseId": "t1", "name": "f"}}})
                + frame("exception", ":exception-type", "contentBlockDelta", {"contentBlockIndex": 0, "delta": {
                    "toolUse": {"input": "{}"}}})
                + frame("event", ":event-type", "contentBlockStop", {"contentBlockIndex": 0})
                + frame("error", ":error-code", "messageStop", {"stopReason": "tool_use"}))
        envelope, _ = vts.sse_to_envelope(body, "bedrock", {"f": {}})
        self.assertEqual([next(iter(e)) for e in envelope["events"]],
                         ["messageStart", "contentBlockStart", "contentBlockDeltaException", "contentBlockStop",
                          "messageStopException"])
        report = vts.validate_envelope(envelope)
        self.assertEqual(report["status"], "blocked")
        self.assertIn("stream_error", codes(report))
        named = frame("exception", ":exception-type", "throttlingException", {"message": "m"})
        self.assertEqual(vts.eventstream_events(named), [{"throttlingException": {"message": "m"}}])

    def test_any_exception_member_is_a_stream_error(self):
        events = [{"messageStart": {"role": "assistant"}}, {"accessDeniedException": {"message": "m"}}]
        report = vts.validate_envelope({"profile": "bedrock", "tool_schemas": {}, "events": events})
        self.assertEqual(codes(report), ["stream_error"])

# ---------------------------------------------------------------------------------------------------
# Bedrock ConverseStream edge cases (was test_profiles.py).
# ---------------------------------------------------------------------------------------------------


END_TURN = {"messageStop": {"stopReason": "end_turn"}}


class BedrockEdges(unittest.TestCase):
    def test_minimal_pass_and_no_delta_tool(self):
        self.assertEqual(judge_events("bedrock", bedrock_call())["status"], "pass")
        report = judge_events("bedrock", [MSG_START, b_start(), b_stop(), MSG_STOP])
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", "{}"))

    def test_zero_or_several_members(self):
        for bad in ({}, {"contentBlockStop": {"contentBlockIndex": 0}, "metadata": {}}, ["messageStart"]):
            stream = bedrock_call()
            stream.insert(4, bad)
            self.assertEqual(positions(judge_events("bedrock", stream)), [("unsupported_event", 4)], bad)

    def test_delta_with_several_members(self):
        stream = [MSG_START, b_delta(0, text="a", citation={}), MSG_STOP]
        self.assertEqual(code_set(judge_events("bedrock", stream)), {"unsupported_event", "missing_slot"})

    def test_second_message_stop_is_duplicate_terminal(self):
        self.assertEqual(positions(judge_events("bedrock", bedrock_call() + [MSG_STOP])), [("duplicate_terminal", 6)])

    def test_metadata_after_stop_fine_other_events_late(self):
        self.assertEqual(judge_events("bedrock", bedrock_call() + [META])["status"], "pass")
        late = judge_events("bedrock", bedrock_call() + [b_delta(1, text="x")])
        self.assertEqual(positions(late), [("delta_after_terminal", 6)])

    def test_exception_after_stop_is_stream_error(self):
        stream = bedrock_call() + [{"throttlingException": {"message": "x"}}]
        self.assertEqual(positions(judge_events("bedrock", stream)), [("stream_error", 6)])

    def test_tool_delta_on_text_block(self):
        stream = [MSG_START, b_delta(0, text="x"), b_delta(0, toolUse={"input": "{}"}), b_stop(0),
                  b_start(1), b_stop(1), MSG_STOP]
        self.assertEqual(positions(judge_events("bedrock", stream)), [("unexpected_event", 2)])

    def test_text_block_stopped_twice_and_late_text(self):
        stream = [MSG_START, b_delta(0, text="x"), b_stop(0), b_stop(0), b_delta(0, text="y"),
                  b_start(1), b_stop(1), MSG_STOP]
        self.assertEqual(positions(judge_events("bedrock", stream)), [("duplicate_terminal", 3), ("delta_after_terminal", 4)])

    def test_stop_for_unknown_block(self):
        stream = bedrock_call()
        stream.insert(4, b_stop(3))
        self.assertEqual(positions(judge_events("bedrock", stream)), [("missing_slot", 4)])

    def test_absent_tool_use_id_is_missing_id(self):
        self.assertEqual(positions(judge_events("bedrock", bedrock_call(tool_id=None))), [("missing_id", 3)])

    def test_tool_result_start_and_server_tool_use(self):
        # a toolResult answering nothing; a system tool this tool has not reviewed; an image start
        stream = [MSG_START, {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolResult": {}}}},
                  b_stop(0), END_TURN]
        self.assertEqual(positions(judge_events("bedrock", stream)), [("missing_slot", 1)])
        stream = [MSG_START, b_start(type="server_tool_use"), b_delta(0, toolUse={"input": "{}"}), b_stop(), END_TURN]
        self.assertEqual(positions(judge_events("bedrock", stream)), [("unsupported_event", 1)])
        stream = [MSG_START, {"contentBlockStart": {"contentBlockIndex": 0, "start": {"image": {"format": "png"}}}},
                  b_stop(0), END_TURN]
        self.assertEqual(positions(judge_events("bedrock", stream)), [("unsupported_event", 1)])

    def test_system_tool_pairs_with_its_result(self):
        use = b_start(tool_id="tooluse_s", name="nova_code_interpreter", type="server_tool_use")
        result = {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolResult": {
            "toolUseId": "tooluse_s", "type": "nova_code_interpreter_result", "status": "success"}}}}
        stream = [MSG_START, use, b_delta(0, toolUse={"input": "{}"}), b_stop(0), result,
                  b_delta(1, toolResult=[{"json": {"stdOut": "1"}}]), b_stop(1), END_TURN]
        report = judge_events("bedrock", stream)
        self.assertEqual((report["status"], report["hosted_tools"]), ("not_applicable", {"nova_code_interpreter": 1}))
        wrong = stream[:5] + [b_delta(1, text="x")] + stream[6:]
        self.assertEqual(positions(judge_events("bedrock", wrong)), [("unexpected_event", 5)])
        unstopped = stream[:6] + [END_TURN]
        self.assertEqual(positions(judge_events("bedrock", unstopped)), [("missing_terminal", None)])

    def test_unknown_delta_member(self):
        stream = bedrock_call()
        stream.insert(3, b_delta(0, image={"format": "png"}))
        self.assertEqual(positions(judge_events("bedrock", stream)), [("unsupported_event", 3)])

    def test_tool_use_stop_reason_without_tool(self):
        report = judge_events("bedrock", [MSG_START, b_delta(0, text="x"), b_stop(0), MSG_STOP])
        self.assertEqual(positions(report), [("missing_slot", 3)])

    def test_missing_block_index(self):
        stream = bedrock_call()
        stream[2] = {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"a":1}'}}}}
        self.assertEqual(code_set(judge_events("bedrock", stream)), {"missing_index"})

    def test_non_string_input_and_stop_reason(self):
        stream = bedrock_call()
        stream[2] = b_delta(0, toolUse={"input": {"a": 1}})
        self.assertEqual(code_set(judge_events("bedrock", stream)), {"unsupported_event"})
        stream = bedrock_call()
        stream[4] = {"messageStop": {}}
        self.assertEqual(code_set(judge_events("bedrock", stream)), {"unsupported_event", "missing_terminal"})

    def test_citation_belongs_to_text_not_reasoning(self):
        stream = [MSG_START, b_delta(0, reasoningContent={"text": "x"}), b_delta(0, citation={"title": "t"}),
                  b_stop(0), MSG_STOP]
        self.assertEqual(positions(judge_events("bedrock", stream)), [("unexpected_event", 2), ("missing_slot", 4)])

    def test_report_never_echoes_text_content(self):
        stream = [MSG_START, b_delta(0, text="SECRET-TEXT"), b_delta(0, toolUse={"input": "SECRET-TEXT"}),
                  b_delta(1, reasoningContent={"text": "SECRET-TEXT"}), b_stop(0), MSG_STOP]
        self.assertNotIn("SECRET-TEXT", json.dumps(judge_events("bedrock", stream)))

# ---------------------------------------------------------------------------------------------------
# Bedrock system tool names, issue 21 (was test_fidelity.py).
# ---------------------------------------------------------------------------------------------------


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


class BedrockFastPaths(unittest.TestCase):
    """plain_fragment() and translate()'s quiet text deltas answer only where the general path would add
    text to a started toolUse block, or say nothing; everywhere else it decides, with the same report."""

    def test_plain_fragment_answers_for_the_plain_delta_only(self):
        normalizer = vts.BedrockNormalizer()
        plain = b_delta(0, toolUse={"input": "{"})
        self.assertIsNone(normalizer.plain_fragment(plain))   # no messageStart yet
        for pos, event in enumerate([MSG_START, b_start()]):
            list(normalizer.translate(pos, event))
        self.assertEqual(normalizer.plain_fragment(plain), ((None, 0), "{"))
        body = plain["contentBlockDelta"]
        for name, other in {
                "index true": b_delta(True, toolUse={"input": "{"}), "index 0.0": b_delta(0.0, toolUse={"input": "{"}),
                "a block not started": b_delta(1, toolUse={"input": "{"}),
                "input not text": b_delta(0, toolUse={"input": 5}), "no input": b_delta(0, toolUse={}),
                "two delta members": b_delta(0, toolUse={"input": "{"}, text="x"),
                "toolUse not an object": b_delta(0, toolUse="{"), "a text delta": b_delta(0, text="x"),
                "a second member": {**plain, "messageStop": {}}, "body not an object": {"contentBlockDelta": [body]},
                "a list": [plain], "nothing": None}.items():
            with self.subTest(event=name):
                self.assertIsNone(normalizer.plain_fragment(other))

    def probes(self):
        tool = {"input": " "}
        yield "plain", b_delta(1, toolUse=tool)
        yield "extra body member", {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": tool},
                                                          "p": "ab"}}
        yield "extra toolUse member", b_delta(1, toolUse={"input": " ", "toolUseId": "x"})
        for name, index in (("true", True), ("0.0", 0.0), ("-1", -1), ("text", "1"), ("unstarted", 3)):
            yield f"index {name}", b_delta(index, toolUse=tool)
            yield f"text, index {name}", b_delta(index, text="x")
        for name, value in (("5", 5), ("null", None), ("a list", [" "])):
            yield f"input {name}", b_delta(1, toolUse={"input": value})
        yield "two members", b_delta(1, toolUse=tool, text="x")
        yield "no member", b_delta(1)
        yield "unknown member", b_delta(0, image={})
        yield "toolUse to a text block", b_delta(0, toolUse=tool)
        for member in ("text", "citation", "reasoningContent", "toolResult"):
            yield f"{member} to the text block", b_delta(0, **{member: "x"})
            yield f"{member} to the toolUse block", b_delta(1, **{member: "x"})
            yield f"{member} to a new block", b_delta(2, **{member: "x"})
        yield "text not text", b_delta(0, text=5)
        yield "two events", {**b_delta(0, text="x"), **MSG_STOP}
        yield "body a list", {"contentBlockDelta": [b_delta(0, text="x")["contentBlockDelta"]]}

    def test_every_probe_in_every_place_gets_the_general_report(self):
        turn = [MSG_START, b_delta(0, text="hi"), b_delta(0, text=" there"), b_start(1),
                b_delta(1, toolUse={"input": '{"a":'}), b_delta(1, toolUse={"input": "1}"}), b_stop(1),
                MSG_STOP, META]
        places = {"before messageStart": 0, "in the text block": 2, "in the toolUse block": 5,
                  "after the toolUse block stops": 7, "after messageStop": 8}
        text_stopped = turn[:3] + [b_stop(0)] + turn[3:]
        streams = [(f"{name} {where}", turn[:at] + [probe] + turn[at:])
                   for name, probe in self.probes() for where, at in places.items()]
        streams += [(f"{name} after the text block stops", text_stopped[:4] + [probe] + text_stopped[4:])
                    for name, probe in self.probes()]
        early = turn[1:6] + turn[:1] + turn[6:]   # the blocks begin before messageStart
        streams += [(f"{name} before a late messageStart", early[:5] + [probe] + early[5:])
                    for name, probe in self.probes()]
        streams.append(("the turn", turn))
        answered, declined = room_fast_paths_agree(self, "bedrock", streams, {"f": {"type": "object"}})
        self.assertTrue(answered and declined, "the fast answers were given somewhere, not everywhere")


def bedrock_run_probes(index, member, inner):
    """Events written as text at the edge of a run of `member` deltas (inner: the member's value's text)."""
    plain = '{"contentBlockDelta": {"contentBlockIndex": %s, "delta": {"%s": %s}}}'
    yield "plain", plain % (index, member, inner)
    for number in ("%s.0", "%se0", "-%s", "0%s", "%s "):
        yield f"index {number % 'N'}", plain % (number % index, member, inner)
    yield "index -0", plain % ("-0", member, inner)
    yield "compact", plain.replace(": ", ":").replace(", ", ",") % (index, member, inner)
    yield "newlines", plain.replace(": ", ":\n ").replace(", ", "\r\n,\t") % (index, member, inner)
    yield "reordered", '{"contentBlockDelta": {"delta": {"%s": %s}, "contentBlockIndex": %s}}' % (member, inner, index)
    yield "index twice", ('{"contentBlockDelta": {"contentBlockIndex": %s, "contentBlockIndex": %s, "delta": {"%s": %s}}}'
                          % (index, index, member, inner))
    yield "delta twice", ('{"contentBlockDelta": {"contentBlockIndex": %s, "delta": {"%s": %s}, "delta": {"%s": %s}}}'
                          % (index, member, inner, member, inner))
    yield "escaped member name", plain % (index, "\\u00%x" % ord(member[0]) + member[1:], inner)
    yield "escaped event name", plain.replace("contentBlockDelta", "\\u0063ontentBlockDelta") % (index, member, inner)
    yield "a second delta member", plain % (index, member, inner + ', "text": "x"')
    yield "a member beside the body", plain[:-1] % (index, member, inner) + ', "p": "ab"}'
    yield "__proto__ escaped", plain[:-1] % (index, member, inner) + ', "\\u005f_proto__": {}}'


class BedrockRuns(unittest.TestCase):
    """Runs of toolUse and text deltas read from text give the report of the whole document's parse, whatever
    sits at their edge."""

    def test_probes_at_the_edges_of_runs(self):
        fragments = ['{"a": 1'] + [" "] * 40 + ["}"]
        turn = ([MSG_START] + [b_delta(0, text=f"w{k} ") for k in range(40)] + [b_stop(0), b_start(1)]
                + [b_delta(1, toolUse={"input": piece}) for piece in fragments] + [b_stop(1), MSG_STOP, META])
        text_places = [("a text run's start", 1), ("in a text run", 20), ("a text run's end", 41)]
        tool_places = [("a fragment run's start", 43), ("in a fragment run", 64), ("a fragment run's end", 85)]
        strings = [("escapes", '"\\" \\\\ \\u00e9 \\ud83d\\ude00 \\n"'), ("a lone surrogate", '"\\ud800"'),
                   ("not a string", "5"), ("null", "null"), ("raw é", '"é"')]
        probes = list(bedrock_run_probes(1, "toolUse", '{"input": " "}'))
        probes.append(("input twice", '{"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": '
                                      '{"input": " ", "input": " "}}}}'))
        probes += [(name, next(bedrock_run_probes(1, "toolUse", '{"input": %s}' % string))[1])
                   for name, string in strings]
        self.assertTrue(room_runs_agree(self, "bedrock", turn, probes, tool_places, {"f": {"type": "object"}}))
        probes = list(bedrock_run_probes(0, "text", '" "'))
        probes += [(name, next(bedrock_run_probes(0, "text", string))[1]) for name, string in strings]
        self.assertTrue(room_runs_agree(self, "bedrock", turn, probes, text_places, {"f": {"type": "object"}}))

    def test_a_window_boundary_inside_a_run(self):
        turn = ([MSG_START] + [b_delta(0, text=f"w{k} é") for k in range(300)] + [b_stop(0), b_start(1)]
                + [b_delta(1, toolUse={"input": piece}) for piece in ['{"a": 1'] + [" "] * 300 + ["}"]]
                + [b_stop(1), MSG_STOP, META])
        for batch in (1 << 10, 5000):
            with self.subTest(batch=batch), mock.patch.object(vts, "_BATCH_CHARS", batch):
                self.assertTrue(room_runs_agree(self, "bedrock", turn, [("as it is", None)], [("", 0)],
                                                {"f": {"type": "object"}}))

    def test_whole_runs_in_every_state(self):
        text = [b_delta(0, text=f"w{k} ") for k in range(30)]
        tool = [b_delta(1, toolUse={"input": " "}) for _ in range(30)]
        turns = {"before messageStart": text + [MSG_START, b_start(1), b_delta(1, toolUse={"input": "{}"}), b_stop(1),
                                                MSG_STOP],
                 "for a block never started": [MSG_START] + text + tool + [MSG_STOP],
                 "after the block stopped": [MSG_START] + text + [b_stop(0), b_start(1), b_stop(1)] + text + tool
                 + [MSG_STOP],
                 "after messageStop": [MSG_START] + text + [b_start(1), b_delta(1, toolUse={"input": "{}"}), MSG_STOP]
                 + text + tool,
                 "of a toolUse block's text": [MSG_START, b_start(0)] + [b_delta(0, text="x")] * 30 + [b_stop(0),
                                                                                                      MSG_STOP]}
        for name, turn in turns.items():
            with self.subTest(turn=name):
                room_runs_agree(self, "bedrock", turn, [("as it is", None)], [("", 0)], {"f": {"type": "object"}})


if __name__ == "__main__":
    unittest.main()
