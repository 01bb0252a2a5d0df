"""The gemini-interactions profile (Google's Interactions API, streamed): both grammars rule by rule with exact codes,
the interaction's status as the turn's terminal, hosted steps, capture of the raw SSE body, redaction, the request
body, and google-genai's own interactions client pointed at `serve` (skipped without it).

The fixtures in fixtures/gemini-interactions/ pin one outcome per rule; this module checks what they cannot: messages
said once, every step type's deltas, every status, the shapes a call may have, capture and the request.
"""

import json
import os
import unittest

from support import (FIXTURES, ServedFixtures, code_set, codes, load_fixture, positions, room_fast_paths_agree,
                     room_runs_agree, slow, vts)

PROFILE = "gemini-interactions"
SCHEMAS = {"f": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
           "g": {"type": "object"}}
CREATED = {"event_type": "interaction.created", "interaction": {"id": "v1_a", "status": "in_progress"}}
START = {"event_type": "interaction.start", "interaction": {"id": "v1_a", "status": "in_progress"}}


def completed(status="requires_action", kind="interaction.completed"):
    return {"event_type": kind, "interaction": {"id": "v1_a", "status": status}}


def step(index, kind, **members):
    return {"event_type": "step.start", "index": index, "step": dict(type=kind, **members)}


def delta(index, kind, **members):
    return {"event_type": "step.delta", "index": index, "delta": dict(type=kind, **members)}


def stop(index):
    return {"event_type": "step.stop", "index": index}


def call(index=0, pieces=('{"a":', "1}"), call_id="fc_1", name="f"):
    return ([step(index, "function_call", id=call_id, name=name, arguments={})]
            + [delta(index, "arguments_delta", arguments=p) for p in pieces] + [stop(index)])


def thought(index):
    return [step(index, "thought"), delta(index, "thought_signature", signature="c2ln"), stop(index)]


def block_call(index=0, call_id="fc_1", name="f", arguments=None, started=True):
    out = [{"event_type": "content.start", "index": index, "content": {"type": "function_call"}}] if started else []
    whole = {"a": 1} if arguments is None else arguments
    out.append({"event_type": "content.delta", "index": index, "delta": {
        "type": "function_call", "id": call_id, "name": name, "arguments": whole}})
    return out + ([{"event_type": "content.stop", "index": index}] if started else [])


def judge(events, schemas=SCHEMAS, **extra):
    return vts.validate_envelope({"profile": PROFILE, "tool_schemas": schemas, "events": events, **extra})


def calls_of(report):
    return [(c["index"], c["id"], c["name"], c["arguments"]) for c in report["calls"]]


def sse(events, done=True):
    body = "".join(f"event: {e['event_type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return (body + ("event: done\ndata: [DONE]\n\n" if done else "")).encode()


class Grammars(unittest.TestCase):
    def test_steps_join_the_argument_text_and_indices_count_every_step(self):
        report = judge([CREATED] + thought(0) + call(1) + call(2, ("{", "}"), "fc_2", "g") + [completed()])
        self.assertEqual((report["status"], codes(report)), ("pass", []))
        self.assertEqual(calls_of(report), [(1, "fc_1", "f", '{"a":1}'), (2, "fc_2", "g", "{}")])

    def test_content_blocks_carry_whole_calls(self):
        report = judge([START] + block_call(0) + block_call(1, "fc_2", "g", {}, started=False)
                       + [completed(kind="interaction.complete")])
        self.assertEqual((report["status"], codes(report)), ("pass", []))
        self.assertEqual(calls_of(report), [(0, "fc_1", "f", '{"a":1}'), (1, "fc_2", "g", "{}")])

    def test_the_other_grammar_is_said_once_and_not_read(self):
        steps = judge([CREATED] + call(0) + block_call(1, "fc_2", "g") + [completed(kind="interaction.complete"),
                                                                         completed()])
        self.assertEqual(codes(steps), ["unexpected_event"])
        self.assertIn("no reader reads the two grammars in one turn", steps["findings"][0]["message"])
        self.assertEqual([c["id"] for c in steps["calls"]], ["fc_1"])
        content = judge([START] + block_call(0) + call(1, call_id="fc_2") + [completed(kind="interaction.complete")])
        self.assertEqual(codes(content), ["unexpected_event"])
        self.assertEqual([c["id"] for c in content["calls"]], ["fc_1"])

    def test_the_opening_event_comes_first(self):
        report = judge([{"event_type": "interaction.status_update", "interaction_id": "v1_a", "status": "in_progress"},
                        CREATED] + call(0) + [completed()])
        self.assertEqual([f["message"] for f in report["findings"]],
                         ["interaction.status_update before interaction.created",
                          "interaction.created is not the first event"])
        self.assertEqual(judge(call(0) + [completed()])["findings"][0]["message"],
                         "step.start before interaction.created")
        self.assertEqual(codes(judge(block_call(0) + [completed(kind="interaction.complete")])), ["unexpected_event"])

    def test_events_that_are_not_reviewed(self):
        for event in ({"event_type": "step.restart"}, {"type": "step.start"}, [CREATED], "x",
                      {"event_type": "interaction.status_update", "status": 3}):
            with self.subTest(event=event):
                self.assertEqual(codes(judge([CREATED] + call(0) + [event, completed()])), ["unsupported_event"])

    def test_a_proto_member_is_unexpected(self):
        event = dict(delta(0, "arguments_delta", arguments="1}"), __proto__={})
        report = judge([CREATED, step(0, "function_call", id="fc_1", name="f"), delta(0, "arguments_delta",
                                                                                    arguments='{"a":'), event,
                        stop(0), completed()])
        self.assertEqual(codes(report), ["unexpected_event"])


class Steps(unittest.TestCase):
    def test_each_step_type_takes_only_its_deltas(self):
        deltas = {"text": {"text": "x"}, "thought_summary": {"content": {"type": "text", "text": "x"}},
                  "thought_signature": {"signature": "c2ln"}, "arguments_delta": {"arguments": ""},
                  "image": {"data": "aW1n", "mime_type": "image/png"}, "google_search_call": {"arguments": {}},
                  "code_execution_result": {"result": "4"}}
        for kind, allowed in vts._INTER_STEP_DELTAS.items():
            members = {"id": "fc_9", "name": "g", "arguments": {}} if kind == "function_call" else \
                {"id": "h1"} if kind.endswith("_call") else {"call_id": "h0"} if kind.endswith("_result") else {}
            answered = vts._INTER_HOSTED_RESULTS.get(kind, "google_search_call")
            before = [step(0, answered, id="h0"), stop(0)]
            for dtype, fields in deltas.items():
                with self.subTest(step=kind, delta=dtype):
                    turn = [CREATED] + before + [step(1, kind, **members), delta(1, dtype, **fields), stop(1)]
                    status = "requires_action" if kind == "function_call" else "completed"
                    report = judge(turn + [completed(status)])
                    self.assertEqual(codes(report), [] if dtype in allowed else ["unexpected_event"],
                                     report["findings"])

    def test_an_unreviewed_step_is_said_once(self):
        for kind in ("tool_search_call", "function_result", "user_input"):
            with self.subTest(kind=kind):
                report = judge([CREATED, step(0, kind), delta(0, "text", text="x"), stop(0)] + call(1) + [completed()])
                self.assertEqual(codes(report), ["unsupported_event"])
        report = judge([CREATED, {"event_type": "step.start", "index": 0, "step": "thought"}, stop(0), completed(
            "completed")])
        self.assertEqual(codes(report), ["unsupported_event"])

    def test_the_shapes_of_a_call_step(self):
        for name, members in {"arguments given": {"arguments": {"a": 1}}, "a number id": {"id": 5},
                              "another member": {"strict": True}, "arguments a string": {"arguments": "{}"}}.items():
            with self.subTest(shape=name):
                start = step(0, "function_call", **dict({"id": "fc_1", "name": "f"}, **members))
                report = judge([CREATED, start, delta(0, "arguments_delta", arguments='{"a":1}'), stop(0),
                                completed()])
                self.assertEqual(code_set(report), {"unsupported_event", "missing_slot"})
                self.assertEqual(report["calls"], [])
        report = judge([CREATED, step(0, "function_call", id="fc_1", name="f", signature="c2ln"),
                        delta(0, "arguments_delta", arguments='{"a":1}'), stop(0), completed()])
        self.assertEqual(report["status"], "pass")

    def test_the_shapes_of_an_arguments_delta(self):
        for fields in ({"arguments": 5}, {"arguments": None}, {"arguments": "{}", "id": "fc_1"},
                       {"arguments_delta": "{}"}):
            with self.subTest(fields=fields):
                report = judge([CREATED, step(0, "function_call", id="fc_1", name="g"), delta(0, "arguments_delta",
                                                                                            **fields), stop(0),
                                completed()], {"g": {"type": "object"}})
                self.assertEqual(codes(report), ["unsupported_event"])

    def test_deltas_and_stops_for_steps_never_started(self):
        self.assertEqual(codes(judge([CREATED, delta(0, "arguments_delta", arguments="{}"), completed("completed")])),
                         ["missing_slot"])
        self.assertEqual(codes(judge([CREATED, delta(0, "text", text="x"), completed("completed")])),
                         ["unexpected_event"])
        self.assertEqual(codes(judge([CREATED, stop(0), completed("completed")])), ["missing_slot"])

    def test_a_step_ends_once(self):
        text = [step(0, "model_output"), delta(0, "text", text="x"), stop(0)]
        self.assertEqual(codes(judge([CREATED] + text + [stop(0), completed("completed")])), ["duplicate_terminal"])
        self.assertEqual(codes(judge([CREATED] + text + [delta(0, "text", text="y"), completed("completed")])),
                         ["delta_after_terminal"])
        self.assertEqual(codes(judge([CREATED] + call(0) + [stop(0), completed()])), ["duplicate_terminal"])

    def test_indices_run_from_zero_across_every_step(self):
        self.assertEqual(codes(judge([CREATED] + call(1) + [completed()])), ["missing_slot"])
        twice = judge([CREATED] + thought(0) + call(0) + [completed()])   # the second step 0 is not read
        self.assertEqual(code_set(twice), {"identity_collision", "unexpected_event", "duplicate_terminal",
                                           "missing_slot"})
        for event in ({"event_type": "step.start", "step": {"type": "thought"}},
                      {"event_type": "step.delta", "index": -1, "delta": {"type": "text", "text": "x"}},
                      {"event_type": "step.stop", "index": True}):
            with self.subTest(event=event):
                self.assertEqual(codes(judge([CREATED] + call(0) + [event, completed()])), ["missing_index"])

    def test_a_delta_without_a_type(self):
        for value in ({"text": "x"}, "x", None):
            with self.subTest(delta=value):
                event = {"event_type": "step.delta", "index": 0, "delta": value}
                report = judge([CREATED, step(0, "model_output"), event, stop(0), completed("completed")])
                self.assertEqual(codes(report), ["unsupported_event"])


class Content(unittest.TestCase):
    def test_a_start_names_the_same_call_as_its_delta(self):
        start = {"event_type": "content.start", "index": 0, "content": {"type": "function_call", "id": "fc_1",
                                                                        "name": "g"}}
        report = judge([START, start] + block_call(0, started=False) + [{"event_type": "content.stop", "index": 0},
                                                                         completed(kind="interaction.complete")])
        self.assertEqual(codes(report), ["unexpected_event"])
        named = dict(start, content={"type": "function_call", "id": "fc_1", "name": "f"})
        quiet = {"event_type": "content.delta", "index": 0, "delta": {"type": "function_call", "arguments": {"a": 1}}}
        report = judge([START, named, quiet, {"event_type": "content.stop", "index": 0},
                        completed(kind="interaction.complete")])
        self.assertEqual(calls_of(report), [(0, "fc_1", "f", '{"a":1}')])
        self.assertEqual(report["status"], "pass")

    def test_the_shapes_of_a_whole_call(self):
        for arguments in ('{"a":1}', None, [1]):
            with self.subTest(arguments=arguments):
                event = block_call(0, started=False)[0]
                event["delta"]["arguments"] = arguments
                report = judge([START, event, completed(kind="interaction.complete")])
                self.assertEqual(code_set(report), {"unsupported_event", "missing_slot"})
        start = {"event_type": "content.start", "index": 0, "content": {"type": "function_call", "arguments": {"a": 2}}}
        report = judge([START, start] + block_call(0, started=False) + [completed(kind="interaction.complete")])
        self.assertEqual(code_set(report), {"unsupported_event", "missing_slot"})

    def test_a_block_holds_one_call(self):
        report = judge([START] + block_call(0, started=False) + block_call(0, "fc_2", started=False)
                       + [completed(kind="interaction.complete")])
        self.assertEqual(codes(report), ["identity_collision", "duplicate_terminal"])

    def test_a_block_ends_once(self):
        stop0 = {"event_type": "content.stop", "index": 0}
        self.assertEqual(codes(judge([START] + block_call(0) + [stop0, completed(kind="interaction.complete")])),
                         ["duplicate_terminal"])
        self.assertEqual(codes(judge([START, stop0] + block_call(1, started=False)   # and block 1 comes first
                                     + [completed(kind="interaction.complete")])), ["unexpected_event", "missing_slot"])
        late = judge([START] + block_call(0) + block_call(0, "fc_2", started=False)
                     + [completed(kind="interaction.complete")])
        self.assertEqual(codes(late), ["delta_after_terminal"])

    def test_text_and_thought_blocks_carry_no_call(self):
        turn = [START, {"event_type": "content.start", "index": 0, "content": {"type": "thought"}},
                {"event_type": "content.delta", "index": 0, "delta": {"type": "thought_summary",
                                                                      "content": {"type": "text", "text": "x"}}},
                {"event_type": "content.stop", "index": 0},
                {"event_type": "content.delta", "index": 1, "delta": {"type": "text", "text": "hi"}},
                completed("completed", "interaction.complete")]
        self.assertEqual(judge(turn)["status"], "not_applicable")
        wrong = dict(turn[2], delta={"type": "text", "text": "x"})
        self.assertEqual(codes(judge(turn[:2] + [wrong] + turn[3:])), ["unexpected_event"])
        unknown = {"event_type": "content.delta", "index": 2, "delta": {"type": "arguments_delta", "arguments": "{}"}}
        self.assertEqual(codes(judge(turn[:-1] + [unknown, turn[-1]])), ["unsupported_event"])


class Terminal(unittest.TestCase):
    def test_every_status_that_ends_a_turn(self):
        for status in sorted(vts._INTER_END_STATUSES):
            with self.subTest(status=status):
                report = judge([CREATED] + call(0) + [completed(status)])
                want = {"requires_action": [], "failed": ["stream_error", "wrong_terminal_reason"]}.get(
                    status, ["wrong_terminal_reason"])
                self.assertEqual(codes(report), want)
                text = judge([CREATED, step(0, "model_output"), delta(0, "text", text="x"), stop(0),
                              completed(status)])
                self.assertEqual(codes(text), {"requires_action": ["missing_slot"], "failed": ["stream_error"]}.get(
                    status, []))

    def test_a_status_that_ends_no_turn(self):
        for status in ("in_progress", "queued", "idle", None, 1, ["requires_action"], {}):
            with self.subTest(status=status):
                report = judge([CREATED] + call(0) + [completed(status)])
                self.assertEqual(code_set(report), {"unsupported_event", "missing_terminal"})

    def test_nothing_after_the_terminal_and_it_comes_once(self):
        self.assertEqual(codes(judge([CREATED] + call(0) + [completed(), completed()])), ["duplicate_terminal"])
        report = judge([CREATED] + call(0) + [completed(), {"event_type": "error", "error": {"code": "x"}}])
        self.assertEqual(codes(report), ["delta_after_terminal"])

    def test_the_status_events_of_the_migration_guide(self):
        progress = {"event_type": "interaction.in_progress", "interaction_id": "v1_a"}
        action = {"event_type": "interaction.requires_action", "interaction_id": "v1_a", "status": "requires_action"}
        report = judge([CREATED, progress] + call(0) + [action, completed()])
        self.assertEqual((report["status"], calls_of(report)), ("pass", [(0, "fc_1", "f", '{"a":1}')]))
        # neither ends the turn; a status that is not a string; the steps grammar's own events
        self.assertEqual(positions(judge([CREATED] + call(0) + [action])), [("missing_terminal", None)])
        self.assertEqual(positions(judge([CREATED, dict(progress, status=1)] + call(0) + [completed()])),
                         [("unsupported_event", 1)])
        self.assertEqual(positions(judge([START, progress] + block_call(0)
                                         + [completed(kind="interaction.complete")])), [("unexpected_event", 1)])

    def test_a_status_event_that_says_the_interaction_ended(self):
        # some clients end the stream at a failed, cancelled, incomplete or budget_exceeded status_update; the Vercel AI
        # SDK and google-genai keep the last status: a call is run only when no status event said another ending
        # (requires_action aside: a function_call step sets it, so it may come between parallel calls)
        def said(status, kind="interaction.status_update"):
            return {"event_type": kind, "interaction_id": "v1_a", "status": status}
        for status in sorted(vts._INTER_END_STATUSES):
            with self.subTest(status=status):
                report = judge([CREATED] + call(0) + [said(status), completed()])
                want = {"requires_action": [], "failed": [("stream_error", 5)]}.get(
                    status, [("wrong_terminal_reason", 6)])
                self.assertEqual(positions(report), want)
                # a call after it: a client that ends the stream there never reads it
                report = judge([CREATED, said(status)] + call(0) + [completed()])
                want = {"requires_action": [],   # (it may come between parallel calls)
                        "failed": [("stream_error", 1), ("unexpected_event", 2)]}.get(
                    status, [("unexpected_event", 2), ("wrong_terminal_reason", 6)])
                self.assertEqual(sorted(positions(report)), want)
                # a text turn that then completes with that status is as before
                text = judge([CREATED, step(0, "model_output"), delta(0, "text", text="x"), stop(0), said(status),
                              completed("completed")])
                self.assertEqual(codes(text), ["stream_error"] if status == "failed" else [])
        report = judge([CREATED] + call(0) + [said("requires_action", "interaction.requires_action")]
                       + call(1, call_id="fc_2") + [completed()])
        self.assertEqual((report["status"], len(report["calls"])), ("pass", 2))
        for status in ("in_progress", "queued", "idle"):   # the interaction is still running
            self.assertEqual(judge([CREATED, said(status)] + call(0) + [said(status), completed()])["status"], "pass")
        # the migration guide's status events say it too; the first ending status said is the one kept
        self.assertEqual(codes(judge([CREATED] + call(0) + [said("cancelled", "interaction.in_progress"),
                                                              completed()])), ["wrong_terminal_reason"])
        self.assertEqual(codes(judge([CREATED] + call(0) + [said("incomplete"), said("requires_action"),
                                                              completed()])), ["wrong_terminal_reason"])
        # the content grammar's call too
        self.assertEqual(code_set(judge([START, said("completed")] + block_call(0)
                                        + [completed(kind="interaction.complete")])),
                         {"unexpected_event", "wrong_terminal_reason"})

    def test_the_terminal_event_s_own_status(self):
        # the reference's event has none; google-genai's continuation takes it over the interaction's
        own = dict(completed(), status="completed")
        self.assertEqual(positions(judge([CREATED] + call(0) + [own])), [("unexpected_event", 5)])
        self.assertEqual(judge([CREATED] + call(0) + [dict(completed(), status="requires_action")])["status"], "pass")
        self.assertEqual(codes(judge([START] + block_call(0) + [dict(completed(kind="interaction.complete"),
                                                                      status=None)])), ["unexpected_event"])

    def test_a_stop_that_restates_a_call(self):
        # a stop is its index (usage aside): a call restated there is read by no reviewed reader
        restated = {"type": "function_call", "id": "fc_1", "name": "f", "arguments": {"a": 2}}
        body = call(0)
        body[-1] = dict(body[-1], step=restated)
        self.assertEqual(positions(judge([CREATED] + body + [completed()])), [("unsupported_event", 4)])
        blocks = block_call(0)
        blocks[-1] = dict(blocks[-1], content=[{"type": "thought"}, restated])
        self.assertEqual(positions(judge([START] + blocks + [completed(kind="interaction.complete")])),
                         [("unsupported_event", 3)])
        body[-1] = dict(stop(0), usage={"total_tokens": 4}, step_usage={"total_tokens": 4}, event_id="e")
        self.assertEqual(judge([CREATED] + body + [completed()])["status"], "pass")

    def test_a_stream_that_ends_with_a_status_event_has_no_terminal(self):
        # every recorded stream and the reference's examples end with interaction.completed, which google-genai reads
        # as the authoritative end; a body that stops at a status_update (or the migration guide's
        # interaction.requires_action), with or without [DONE], may have been cut before it
        for status in ("requires_action", "completed"):
            with self.subTest(status=status):
                end = {"event_type": "interaction.status_update", "interaction_id": "v1_a", "status": status}
                self.assertEqual(positions(judge([CREATED] + call(0) + [end])), [("missing_terminal", None)])
                gate = vts.StreamGate(PROFILE, SCHEMAS)
                gate.feed_bytes(sse([CREATED] + call(0) + [end]))
                report = gate.finish()
                self.assertEqual((report["status"], codes(report)), ("blocked", ["missing_terminal"]))

    def test_a_function_call_in_the_interaction_resource_of_an_event(self):
        listed = {"type": "function_call", "id": "fc_1", "name": "f", "arguments": {"a": 1}}
        for opening, ending in ((CREATED, completed()), (START, completed(kind="interaction.complete"))):
            for member in ("steps", "outputs"):
                with self.subTest(opening=opening["event_type"], member=member):
                    end = dict(ending, interaction=dict(ending["interaction"], **{member: [{"type": "thought"},
                                                                                          listed]}))
                    body = call(0) if opening is CREATED else block_call(0)
                    self.assertEqual(positions(judge([opening] + body + [end])),
                                     [("unsupported_event", 1 + len(body))])
                    begin = dict(opening, interaction=dict(opening["interaction"], **{member: [listed]}))
                    self.assertEqual(positions(judge([begin] + body + [ending])), [("unsupported_event", 0)])
        # steps that hold no call are not read
        end = completed()
        end["interaction"]["steps"] = [{"type": "thought"}, {"type": "model_output"}]
        self.assertEqual(judge([CREATED] + call(0) + [end])["status"], "pass")

    def test_an_error_event_names_its_code(self):
        report = judge([CREATED] + call(0) + [{"event_type": "error", "error": {"code": "gateway_timeout",
                                                                                 "message": "secret"}}, completed()])
        self.assertEqual(codes(report), ["stream_error"])
        self.assertIn('"gateway_timeout"', report["findings"][0]["message"])
        self.assertNotIn("secret", report["findings"][0]["message"])


class Hosted(unittest.TestCase):
    def test_hosted_steps_are_counted_never_called(self):
        turn = [CREATED]
        for k, kind in enumerate(vts._INTER_HOSTED_CALLS):
            result = kind[:-len("call")] + "result"
            turn += [step(2 * k, kind, id=f"h{k}"), delta(2 * k, kind, arguments={}), stop(2 * k),
                     step(2 * k + 1, result, call_id=f"h{k}"), delta(2 * k + 1, result, result=[]), stop(2 * k + 1)]
        report = judge(turn + [completed("completed")])
        self.assertEqual((report["status"], codes(report)), ("not_applicable", []))
        self.assertEqual(report["hosted_tools"], {name: 1 for name in vts._INTER_HOSTED_CALLS.values()})

    def test_a_result_answers_a_call_of_its_type_once(self):
        search = [step(0, "google_search_call", id="h0"), stop(0)]
        for name, (steps, code) in {
                "no such call": ([step(0, "google_search_result", call_id="h9"), stop(0)], "missing_slot"),
                "another type": (search + [step(1, "code_execution_result", call_id="h0"), stop(1)],
                                 "unexpected_event"),
                "twice": (search + [step(1, "google_search_result", call_id="h0"), stop(1),
                                    step(2, "google_search_result", call_id="h0"), stop(2)], "duplicate_terminal"),
                "no id": ([step(0, "google_search_call"), stop(0)], "unsupported_event"),
                "one id twice": (search + [step(1, "url_context_call", id="h0"), stop(1)],
                                 "identity_collision")}.items():
            with self.subTest(case=name):
                self.assertEqual(codes(judge([CREATED] + steps + [completed("completed")])), [code])

    def test_content_grammar_hosted_blocks(self):
        turn = [START, {"event_type": "content.delta", "index": 0, "delta": {"type": "google_search_call", "id": "h0",
                                                                             "arguments": {"queries": ["q"]}}},
                {"event_type": "content.delta", "index": 1, "delta": {"type": "google_search_result", "call_id": "h0",
                                                                      "result": []}}] + block_call(2) + [
            completed(kind="interaction.complete")]
        report = judge(turn)
        self.assertEqual((report["status"], report["hosted_tools"]), ("pass", {"google_search": 1}))


class Capture(unittest.TestCase):
    TURN = [CREATED, {"event_type": "interaction.status_update", "interaction_id": "v1_a", "status": "in_progress"},
            step(0, "thought"), delta(0, "thought_summary", content={"type": "text", "text": "secret plan"}),
            delta(0, "thought_signature", signature="c2VjcmV0"), stop(0),
            step(1, "model_output"), delta(1, "text", text="secret answer"), stop(1)] + call(2) + [completed()]

    def test_a_raw_body_becomes_the_envelope_and_passes(self):
        envelope, warnings = vts.sse_to_envelope(sse(self.TURN), PROFILE, SCHEMAS)
        self.assertEqual(warnings, [])
        events = envelope["events"]
        self.assertEqual(len(events), len(self.TURN))
        self.assertEqual(events[9:13], self.TURN[9:13])   # the call, as received
        self.assertEqual(events[3]["delta"], {"type": "thought_summary", "content": {"type": "text",
                                                                                      "text": "[redacted]"}})
        self.assertEqual(events[4]["delta"]["signature"], "[redacted]")
        self.assertEqual(events[7]["delta"]["text"], "[redacted]")
        self.assertEqual([e["event_type"] for e in events], [e["event_type"] for e in self.TURN])
        self.assertEqual(events[-1], self.TURN[-1])
        self.assertNotIn(b"secret", json.dumps(envelope).encode())
        self.assertEqual(calls_of(vts.validate_envelope(envelope)), [(2, "fc_1", "f", '{"a":1}')])

    def test_the_served_body_reads_back(self):
        doc = load_fixture(f"{PROFILE}/pass-search-and-thought-steps-shift-the-call-index.json")[1]
        kind, body = vts.PROFILES[PROFILE].http.frame(doc["events"], "")
        self.assertEqual(kind, "text/event-stream")
        self.assertTrue(body.endswith(b"\n\nevent: done\ndata: [DONE]\n\n"))
        envelope, warnings = vts.sse_to_envelope(body, PROFILE, doc["tool_schemas"], redact=False)
        self.assertEqual((envelope["events"], warnings), (doc["events"], []))
        gate = vts.StreamGate(PROFILE, doc["tool_schemas"])
        gate.feed_bytes(body)
        self.assertEqual(gate.finish()["calls"], vts.validate_envelope(envelope)["calls"])

    def test_without_done_a_warning_and_a_whole_interaction_is_refused(self):
        _, warnings = vts.sse_to_envelope(sse(self.TURN, done=False), PROFILE, SCHEMAS)
        self.assertEqual(warnings, ["no data: [DONE] sentinel: the capture may be cut short"])
        whole = {"id": "v1_a", "object": "interaction", "status": "requires_action", "steps": []}
        with self.assertRaises(vts.CaptureError) as caught:
            vts.sse_to_envelope(json.dumps(whole).encode(), PROFILE, SCHEMAS)
        self.assertIn("non-streaming Interaction", str(caught.exception))

    def test_the_error_message_is_redacted_and_still_a_stream_error(self):
        turn = [CREATED, {"event_type": "error", "error": {"code": "gateway_timeout", "message": "secret"}}]
        envelope, _ = vts.sse_to_envelope(sse(turn), PROFILE, SCHEMAS)
        self.assertEqual(envelope["events"][1]["error"], {"code": "gateway_timeout", "message": "[redacted]"})
        self.assertEqual(codes(vts.validate_envelope(envelope)), ["stream_error"])

    def test_the_family_is_its_own(self):
        mine = vts.PROFILES[PROFILE].capture
        for name, row in vts.PROFILES.items():
            for relpath in sorted(os.listdir(os.path.join(FIXTURES, name))):
                doc = load_fixture(f"{name}/{relpath}")[1]
                payloads = [p for p in doc.get(row.stream_key, []) if isinstance(p, dict)]
                claimed = [p for p in payloads if mine.claims(p)]
                with self.subTest(fixture=f"{name}/{relpath}"):
                    if name == PROFILE:
                        others = [other.name for other in vts.PROFILES.values() if other.capture.family != mine.family
                                  and any(other.capture.claims(p) for p in payloads)]
                        self.assertEqual(others, [])
                    else:
                        self.assertEqual(claimed, [])


class Request(unittest.TestCase):
    BODY = {"model": "gemini-3-flash-preview", "input": "secret", "stream": True,
            "tools": [{"type": "google_search"}, {"type": "code_execution"},
                      {"type": "function", "name": "f", "description": "d", "parameters": SCHEMAS["f"]},
                      {"type": "function", "name": "g"}],
            "generation_config": {"tool_choice": "any", "thinking_level": "low"}}

    def test_the_create_body(self):
        schemas, request, warnings = vts.request_from_body(PROFILE, self.BODY)
        self.assertEqual((schemas, request, warnings),
                         ({"f": SCHEMAS["f"], "g": {"type": "object"}}, {"tools": ["f", "g"], "tool_choice": "any"},
                          []))
        allowed = dict(self.BODY, generation_config={"tool_choice": {"allowed_tools": {"mode": "validated",
                                                                                       "tools": ["g"]}}})
        self.assertEqual(vts.request_from_body(PROFILE, allowed)[1]["tool_choice"],
                         {"allowed_tools": {"mode": "validated", "tools": ["g"]}})
        for bad in ({"generation_config": {"tool_choice": "required"}}, {"generation_config": []},
                    {"generation_config": {"tool_choice": {"mode": "any"}}}):
            with self.subTest(body=bad), self.assertRaises(vts.CaptureError):
                vts.request_from_body(PROFILE, dict(self.BODY, **bad))

    def test_the_choice_is_checked(self):
        turn = [CREATED] + call(0) + [completed()]
        self.assertEqual(codes(judge(turn, request={"tool_choice": "none"})), ["request_violation"])
        self.assertEqual(judge(turn, request={"tool_choice": "validated"})["status"], "pass")
        only_g = {"tool_choice": {"allowed_tools": {"mode": "any", "tools": ["g"]}}}
        self.assertEqual(codes(judge(turn, request=only_g)), ["request_violation"])
        none = {"tool_choice": {"allowed_tools": {"mode": "none"}}}
        self.assertEqual(codes(judge(turn, request=none)), ["request_violation"])
        for request in ({"tool_choice": "required"}, {"tool_choice": {"type": "function"}},
                        {"parallel_tool_calls": False}):
            with self.subTest(request=request):
                self.assertEqual(codes(judge(turn, request=request)), ["invalid_fixture"])

    def test_the_request_conform_sends_reads_back(self):
        rules = vts.PROFILES[PROFILE].http
        for request in ({}, {"tool_choice": "any"}, {"tool_choice": {"allowed_tools": {"mode": "any",
                                                                                        "tools": ["f"]}}}):
            with self.subTest(request=request):
                body = rules.request_body(SCHEMAS, request)
                self.assertTrue(body["stream"])
                schemas, read, _ = vts.request_from_body(PROFILE, body)
                self.assertEqual(schemas, SCHEMAS)
                self.assertEqual(read.get("tool_choice"), request.get("tool_choice"))


class Gate(unittest.TestCase):
    def test_item_by_item_is_the_same_verdict(self):
        for events in ([CREATED] + thought(0) + call(1) + [completed()],
                       [START] + block_call(0) + [completed(kind="interaction.complete")]):
            gate = vts.StreamGate(PROFILE, SCHEMAS)
            for event in events:
                gate.feed(event)
            self.assertEqual(gate.finish()["calls"], judge(events)["calls"])


@slow("SDKs: a real SDK client over loopback HTTP")
def text_delta(index, text, **top):
    return {"index": index, "delta": {"text": text, "type": "text"}, "event_type": "step.delta", **top}


def args_delta(index, text, **top):
    return {"index": index, "delta": {"arguments": text, "type": "arguments_delta"}, "event_type": "step.delta", **top}


class FastPaths(unittest.TestCase):
    """plain_fragment() and translate()'s quiet text delta answer only for the wire's exact shape, for a step of
    their type started and not stopped, in a running turn of the steps grammar; anywhere else the general path."""

    def probes(self):
        yield "plain fragment", args_delta(2, " ")
        yield "plain text", text_delta(1, "x")
        yield "fragment for the text step", args_delta(1, " ")
        yield "text for the call step", text_delta(2, "x")
        yield "fragment for a step never started", args_delta(7, " ")
        for name, index in (("true", True), ("0.0", 2.0), ("-1", -1), ("a string", "2")):
            yield f"fragment, index {name}", args_delta(index, " ")
            yield f"text, index {name}", text_delta(index, "x")
        yield "an event_id too", args_delta(2, " ", event_id="e1")
        yield "__proto__ on top", {"index": 2, "delta": {"arguments": " ", "type": "arguments_delta"},
                                   "event_type": "step.delta", "__proto__": {}}
        yield "a third delta member", {"index": 2, "delta": {"arguments": " ", "type": "arguments_delta", "id": "x"},
                                       "event_type": "step.delta"}
        yield "constructor.prototype in the delta", {"index": 1, "delta": {"text": "x", "type": "text", "constructor": {
            "prototype": 1}}, "event_type": "step.delta"}
        for name, value in (("5", 5), ("null", None), ("an object", {})):
            yield f"arguments {name}", args_delta(2, value)
            yield f"text {name}", text_delta(1, value)
        yield "content.delta", {"index": 2, "delta": {"type": "function_call", "id": "x", "name": "f", "arguments": {}},
                                "event_type": "content.delta"}

    def test_every_probe_in_every_place_gets_the_general_report(self):
        turn = [CREATED] + thought(0) + [step(1, "model_output"), text_delta(1, "hi"), stop(1),
                                         step(2, "function_call", id="fc_1", name="f", arguments={}),
                                         args_delta(2, '{"a":'), args_delta(2, "1}"), stop(2), completed()]
        places = {"before interaction.created": 0, "in the thought": 3, "in the text": 6, "in the call": 9,
                  "after the call": 11, "after interaction.completed": len(turn)}
        streams = [(f"{name} {where}", turn[:at] + [probe] + turn[at:])
                   for name, probe in self.probes() for where, at in places.items()]
        streams.append(("the turn", turn))
        streams.append(("the content grammar", [START] + block_call(0) + [args_delta(0, " "), text_delta(0, "x"),
                                                                          completed(kind="interaction.complete")]))
        answered, declined = room_fast_paths_agree(self, PROFILE, streams, SCHEMAS)
        self.assertTrue(answered and declined, "the fast answers were given somewhere, not everywhere")


class Runs(unittest.TestCase):
    """Runs of arguments_delta and text deltas read from text give the report of the whole document's parse."""

    def test_probes_at_the_edges_of_runs(self):
        turn = ([CREATED, step(0, "model_output")] + [text_delta(0, f"w{k} ") for k in range(40)] + [stop(0)]
                + [step(1, "function_call", id="fc_1", name="f", arguments={}), args_delta(1, '{"a": 1')]
                + [args_delta(1, " ") for _ in range(40)] + [args_delta(1, "}"), stop(1), completed()])
        places = [("a text run's start", 2), ("in a text run", 20), ("a text run's end", 42),
                  ("a fragment run's start", 45), ("in a fragment run", 65), ("a fragment run's end", 85)]
        probes = [("as it is", None)]
        for name, text in (("escapes", '"\\" \\\\ \\u00e9 \\ud83d\\ude00 \\n"'), ("a lone surrogate", '"\\ud800"'),
                           ("not a string", "5"), ("null", "null"), ("raw", '"\u00e9"')):
            probes.append((f"fragment {name}", '{"index": 1, "delta": {"arguments": %s, "type": "arguments_delta"}, '
                                               '"event_type": "step.delta"}' % text))
            probes.append((f"text {name}", '{"index": 0, "delta": {"text": %s, "type": "text"}, '
                                           '"event_type": "step.delta"}' % text))
        probes += [("index 1.0", '{"index": 1.0, "delta": {"arguments": " ", "type": "arguments_delta"}, '
                                 '"event_type": "step.delta"}'),
                   ("type twice", '{"index": 1, "delta": {"arguments": " ", "type": "arguments_delta"}, '
                                  '"event_type": "step.delta", "event_type": "step.delta"}'),
                   ("__proto__ escaped", '{"index": 1, "delta": {"arguments": " ", "type": "arguments_delta", '
                                         '"\\u005f_proto__": {}}, "event_type": "step.delta"}')]
        self.assertTrue(room_runs_agree(self, PROFILE, turn, probes, places, SCHEMAS), "runs were read")


@slow("SDKs: a real SDK client over loopback HTTP")
class GoogleGenaiInteractions(ServedFixtures, unittest.TestCase):
    """google-genai's interactions client on `serve`: it yields typed events and assembles nothing, so the calls
    compared are those its own documentation's loop builds from them (a function_call step's id and name, its
    arguments_delta text joined), and the gate fed the SDK's objects must give each fixture's outcome."""

    MODULE = "google.genai"

    def events(self, prefix, **create):
        from google import genai

        client = genai.Client(api_key="test", http_options={"base_url": self.url + prefix})
        return list(client.interactions.create(model="gemini-3-flash-preview", input="x", stream=True, **create))

    @staticmethod
    def continued(stream):
        """Whether a served stream stops with status requires_continuation (google-genai then requests again)."""
        return any(isinstance(event, dict) and isinstance(event.get("interaction"), dict)
                   and event["interaction"].get("status") == "requires_continuation" for event in stream)

    def test_every_fixture_through_the_sdk(self):
        checked = 0
        for prefix, fixture in sorted(self.served.items()):
            doc = load_fixture(prefix + ".json")[1]
            if fixture.profile != PROFILE or "error" in fixture.fault:
                continue   # an error before the stream: the SDK's own retry (it retries 429 and 5XX)
            with self.subTest(fixture=prefix):
                # one request's stream: without this the SDK continues a requires_continuation stream itself
                events = self.events(prefix, **({"automatic_continuation": False} if self.continued(fixture.stream)
                                                else {}))
                gate = vts.StreamGate(PROFILE, doc["tool_schemas"], request=doc.get("request"))
                for event in events:
                    gate.feed(event)
                report = gate.finish()
                self.assertEqual((report["status"], sorted(set(codes(report)))),
                                 (doc["expect"]["status"], doc["expect"]["codes"]))
                if doc["expect"]["status"] == "pass":
                    self.assertEqual(documented_loop(events), [(c["id"], c["name"], json.loads(c["arguments"]))
                                                               for c in report["calls"]])
                checked += 1
        self.assertGreater(checked, 30)

    def test_automatic_continuation_joins_two_requests_in_one_stream(self):
        # google-genai's default: after status requires_continuation it requests again with the continuation_token
        # and yields the next request's events after the first's (here serve answers it with the same stream, and
        # the SDK stops when the token comes back unchanged).  Two interactions in one stream: a gate fed it blocks;
        # feed each request's events to a gate of its own
        import warnings

        prefix = "gemini-interactions/not-applicable-text-stopped-requires-continuation"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            events = self.events(prefix)
        kinds = [getattr(event, "event_type", None) for event in events]
        self.assertEqual(kinds.count("interaction.created"), 2)
        gate = vts.StreamGate(PROFILE, {})
        for event in events:
            gate.feed(event)
        self.assertEqual(gate.finish()["status"], "blocked")
        self.assertEqual(vts.validate_envelope({"profile": PROFILE, "tool_schemas": {},
                                                "events": load_fixture(prefix + ".json")[1]["events"]})["status"],
                         "not_applicable")


def documented_loop(events):
    """The calls the Interactions streaming guide's loop collects from the SDK's events: per function_call step its id
    and name, the arguments_delta text joined; a content-grammar call (the SDK hands such events over raw) whole."""
    calls, order = {}, []
    for event in events:
        kind = getattr(event, "event_type", None)
        if kind == "step.start" and getattr(event.step, "type", None) == "function_call":
            calls[event.index] = [event.step.id, event.step.name, ""]
            order.append(event.index)
        elif kind == "step.delta" and getattr(event.delta, "type", None) == "arguments_delta":
            calls[event.index][2] += event.delta.arguments
        elif getattr(event, "is_unknown", False) and isinstance(event.raw, dict):
            change = event.raw.get("delta") or {}
            if event.raw.get("event_type") == "content.delta" and change.get("type") == "function_call":
                calls[event.raw["index"]] = [change["id"], change["name"], json.dumps(change["arguments"])]
                order.append(event.raw["index"])
    return [(calls[k][0], calls[k][1], json.loads(calls[k][2] or "{}")) for k in order]


if __name__ == "__main__":
    unittest.main()
