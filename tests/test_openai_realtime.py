"""The openai-realtime profile (OpenAI Realtime API server events): each rule with exact codes and messages,
the turn at response.done, the claims that keep it apart from the Responses API, the message log's turns,
capture and redaction, the request from a client message, serve over a WebSocket, and openai-python's realtime
client on that socket (skipped without it).

The fixtures in fixtures/openai-realtime/ pin one outcome per rule; this module checks what they cannot.
"""

import copy
import json
import os
import sys
import tempfile
import threading
import unittest

import wsclient
from support import FIXTURES, code_set, codes, importable, load_fixture, run_cli, slow, vts

ROW = vts.PROFILES["openai-realtime"]
SCHEMAS = {"f": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
           "g": {"type": "object"}}
_ids = iter(range(1, 1 << 30))


def ev(kind, **fields):
    return dict({"type": kind, "event_id": f"event_{next(_ids)}"}, **fields)


def created():
    return ev("response.created", response={"id": "resp_1", "status": "in_progress", "output": []})


def item(item_id="item_1", call_id="call_1", name="f", arguments="", status="in_progress"):
    return {"id": item_id, "type": "function_call", "status": status, "name": name, "call_id": call_id,
            "arguments": arguments}


def call(item_id="item_1", call_id="call_1", name="f", pieces=('{"a":', '1}'), index=0, done=None, whole=None):
    """A call's events: added, deltas, .done, the done item; `whole` the arguments every restatement states."""
    text = "".join(pieces) if whole is None else whole
    out = [ev("response.output_item.added", response_id="resp_1", output_index=index,
              item=item(item_id, call_id, name))]
    out += [ev("response.function_call_arguments.delta", response_id="resp_1", item_id=item_id, output_index=index,
               call_id=call_id, delta=piece) for piece in pieces]
    out.append(ev("response.function_call_arguments.done", response_id="resp_1", item_id=item_id,
                  output_index=index, call_id=call_id, name=name, arguments=text))
    out.append(ev("response.output_item.done", response_id="resp_1", output_index=index,
                  item=item(item_id, call_id, name, text, done or "completed")))
    return out


def done(status="completed", output=None, **details):
    response = {"id": "resp_1", "status": status, "output": output, "status_details": details or None}
    return ev("response.done", response=response)


def judge(events, schemas=SCHEMAS, **extra):
    return vts.validate_envelope({"profile": "openai-realtime", "tool_schemas": schemas, "events": events, **extra})


def messages(report):
    return [(f["code"], f["message"]) for f in report["findings"]]


class Turns(unittest.TestCase):
    def test_a_call_passes_with_its_call_id_and_the_joined_deltas(self):
        report = judge([created(), *call(), done()])
        self.assertEqual((report["status"], codes(report)), ("pass", []))
        self.assertEqual([(c["index"], c["id"], c["name"], c["arguments"]) for c in report["calls"]],
                         [(0, "call_1", "f", '{"a":1}')])

    def test_calls_are_keyed_by_item_id_whatever_output_index_says(self):
        events = [created(), *call(), *call("item_2", "call_2", "g", ("{}",), index=0), done()]
        report = judge(events)
        self.assertEqual((report["status"], [(c["index"], c["id"]) for c in report["calls"]]),
                         ("pass", [(0, "call_1"), (1, "call_2")]))

    def test_a_slot_index_counts_every_item_of_the_response(self):
        message = {"id": "item_m", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        events = [created(), ev("response.output_item.added", response_id="resp_1", output_index=0, item=message),
                  ev("response.output_audio_transcript.delta", response_id="resp_1", item_id="item_m",
                     output_index=0, content_index=0, delta="one moment"),
                  ev("response.output_item.done", response_id="resp_1", output_index=0,
                     item=dict(message, status="completed")),
                  *call(index=1), done()]
        self.assertEqual([c["index"] for c in judge(events)["calls"]], [1])

    def test_arguments_stated_only_whole(self):
        report = judge([created(), *call(pieces=(), whole='{"a":2}'), done()])
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", '{"a":2}'))
        report = judge([created(), *call(pieces=(), whole="{}"), done()], schemas={"f": {"type": "object"}})
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", "{}"))
        report = judge([created(), *call(pieces=(), whole=""), done()], schemas={"f": {"type": "object"}})
        self.assertEqual(messages(report), [("malformed_json", "the arguments: empty")])   # as on openai-responses

    def test_session_events_are_accepted_before_inside_and_after(self):
        session = [ev("session.updated", session={"tools": []}), ev("input_audio_buffer.speech_started",
                                                                   audio_start_ms=1, item_id="item_u"),
                   ev("rate_limits.updated", rate_limits=[]), ev("output_audio_buffer.stopped", response_id="r")]
        report = judge(session + [created()] + session + call() + [done()] + session)
        self.assertEqual((report["status"], codes(report)), ("pass", []))

    def test_xais_done_event_names_its_call_by_call_id(self):
        events = [created(), *call(pieces=(), whole='{"a":3}'), ev("ping", timestamp=1764900000000), done()]
        for member in ("item_id", "output_index", "response_id"):
            del events[2][member]
        report = judge(events)
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", '{"a":3}'))
        # two calls of one call_id: the event names neither
        events = [created(), *call(), *call("item_2", pieces=("{}",), name="g"), done()]
        del events[8]["item_id"]   # the second call's .done
        self.assertIn(("missing_index", "response.function_call_arguments.done item_id must be a non-empty string, "
                       "got null"), messages(judge(events)))

    def test_a_history_call_before_the_response_is_not_read(self):
        history = ev("conversation.item.created", previous_item_id=None,
                     item=item("item_0", "call_0", "g", '{"x": 1}', "completed"))
        self.assertEqual(judge([history, created(), *call(), done()])["status"], "pass")
        inside = judge([created(), history, *call(), done()])
        self.assertEqual(messages(inside), [("unexpected_event", "conversation.item.created holds a function_call "
                                             "item that this response did not stream: an SDK that reads conversation "
                                             "items would take a call that was never checked")])


class TheTurnEndsAtResponseDone(unittest.TestCase):
    def test_each_status_with_a_call(self):
        expected = {"completed": ("pass", []), "cancelled": ("blocked", ["wrong_terminal_reason"]),
                    "incomplete": ("blocked", ["wrong_terminal_reason"]),
                    "failed": ("blocked", ["stream_error", "wrong_terminal_reason"])}
        for status, outcome in expected.items():
            with self.subTest(status=status):
                report = judge([created(), *call(), done(status)])
                self.assertEqual((report["status"], codes(report)), outcome)

    def test_each_status_without_a_call(self):
        message = {"id": "item_m", "type": "message", "status": "completed", "role": "assistant", "content": []}
        events = [created(), ev("response.output_item.added", response_id="resp_1", output_index=0, item=message),
                  ev("response.output_item.done", response_id="resp_1", output_index=0, item=message)]
        for status in ("completed", "cancelled", "incomplete"):
            with self.subTest(status=status):
                self.assertEqual(judge(events + [done(status)])["status"], "not_applicable")
        failed = judge(events + [done("failed", error={"type": "server_error", "code": "internal_error"})])
        self.assertEqual(messages(failed), [("stream_error", "response.done reports status \"failed\" "
                                             "(\"server_error\", \"internal_error\"): the response failed")])

    def test_the_done_events_of_a_cancelled_response_do_not_make_it_executable(self):
        report = judge([created(), *call(), done("cancelled", reason="turn_detected")])
        self.assertEqual(messages(report), [("wrong_terminal_reason", "the turn has tool calls but stopped with "
                                             "\"cancelled\", not \"completed\"")])
        self.assertEqual(report["calls"][0]["arguments"], '{"a":1}')   # reported, never handed over

    def test_a_status_that_is_no_terminal_is_unsupported(self):
        for status in ("in_progress", None, 3, [], {}):
            with self.subTest(status=status):
                self.assertIn("unsupported_event", code_set(judge([created(), *call(), done(status)])))

    def test_no_response_done_and_a_second_one(self):
        self.assertEqual(messages(judge([created(), *call()])),
                         [("missing_terminal", "the turn has tool calls but no response.done status")])
        report = judge([created(), *call(), done(), done("cancelled")])
        self.assertEqual(messages(report), [("duplicate_terminal", "a second response.done for the response")])

    def test_a_response_event_after_response_done_is_late(self):
        late = ev("response.output_text.delta", response_id="resp_1", item_id="item_1", output_index=0,
                  content_index=0, delta="x")
        self.assertEqual(messages(judge([created(), *call(), done(), late])),
                         [("delta_after_terminal", "response.output_text.delta after response.done")])

    def test_an_event_before_response_created(self):
        events = call() + [created(), done()]
        self.assertEqual(code_set(judge(events)), {"unexpected_event"})
        self.assertIn(("unexpected_event", "response.output_item.added before response.created"),
                      messages(judge(events)))

    def test_an_error_event_names_its_type_and_code(self):
        error = ev("error", error={"type": "invalid_request_error", "code": "invalid_value", "message": "x"})
        self.assertEqual(messages(judge([created(), error, *call(), done()])),
                         [("stream_error", "the provider sent an error event (\"invalid_request_error\", "
                           "\"invalid_value\")")])
        unnamed = judge([created(), ev("error", error={"message": "x"}), *call(), done()])
        self.assertEqual(messages(unnamed), [("stream_error", "the provider sent an error event")])


class EveryStatementAgrees(unittest.TestCase):
    def restated(self, where, events):
        report = judge(events)
        self.assertEqual((report["status"], code_set(report)), ("blocked", {"unexpected_event"}), where)
        self.assertIn(where, " ".join(message for _, message in messages(report)))

    def test_each_restatement_is_compared_with_the_deltas(self):
        events = [created(), *call(), done()]
        events[-3]["arguments"] = '{"a":2}'                          # the .done event
        self.restated("response.function_call_arguments.done", events)
        events = [created(), *call(), done()]
        events[-2]["item"]["arguments"] = '{"a":2}'                  # the done item
        self.restated("response.output_item.done", events)
        conversation = ev("conversation.item.done", item=item(arguments='{"a":2}', status="completed"))
        self.restated("conversation.item.done", [created(), *call(), conversation, done()])
        beta = ev("conversation.item.created", item=item(arguments='{"a":2}', status="completed"))
        self.restated("conversation.item.created", [created(), *call()[:-1], beta, *call()[-1:], done()])
        self.restated("response.done response.output",
                      [created(), *call(), done(output=[item(arguments='{"a":2}', status="completed")])])

    def test_an_in_progress_conversation_item_states_nothing_yet(self):
        added = ev("conversation.item.added", item=item())
        self.assertEqual(judge([created(), *call()[:1], added, *call()[1:], done()])["status"], "pass")

    def test_the_final_output_must_list_the_streamed_calls(self):
        report = judge([created(), *call(), done(output=[])])
        self.assertEqual(messages(report), [("unexpected_event", "response.done lists 0 function call(s) in "
                                             "response.output, but 1 were streamed")])
        other = judge([created(), *call(), done(output=[item("item_9", arguments='{"a":1}')])])
        self.assertEqual(code_set(other), {"identity_collision"})
        self.assertEqual(judge([created(), *call(), done(output=None)])["status"], "pass")

    def test_a_call_id_or_name_that_changes(self):
        events = [created(), *call(), done()]
        events[2]["call_id"] = "call_9"
        self.assertEqual(messages(judge(events)), [("identity_collision", "response.function_call_arguments.delta "
                                                    "names call \"call_9\", but item 0 is call \"call_1\"")])
        events = [created(), *call(), done()]
        events[-2]["item"]["call_id"] = "call_9"
        self.assertEqual(messages(judge(events)), [("identity_collision", "response.output_item.done restates "
                                                    "call_id of item 0 as \"call_9\", not \"call_1\"")])
        events = [created(), *call(), done()]
        events[-3]["name"] = "g"
        self.assertEqual(code_set(judge(events)), {"identity_collision"})
        added = ev("conversation.item.added", item=item(name="g"))
        self.assertEqual(code_set(judge([created(), *call()[:1], added, *call()[1:], done()])),
                         {"identity_collision"})

    def test_late_and_repeated_argument_events(self):
        events = [created(), *call(), done()]
        events.insert(-1, copy.deepcopy(events[2]))
        self.assertEqual(messages(judge(events)), [("delta_after_terminal", "response.function_call_arguments.delta "
                                                    "after the arguments of item 0 were done")])
        events = [created(), *call(), done()]
        events.insert(-2, copy.deepcopy(events[-3]))
        self.assertEqual(code_set(judge(events)), {"duplicate_terminal"})
        events = [created(), *call(), done()]
        events.insert(-1, copy.deepcopy(events[-2]))
        self.assertEqual(code_set(judge(events)), {"duplicate_terminal"})

    def test_an_incomplete_done_item(self):
        report = judge([created(), *call(done="incomplete"), done("incomplete")])
        self.assertEqual(messages(report)[0], ("wrong_terminal_reason", "function_call item 0 is done with status "
                                               "\"incomplete\""))


class ItemsAndEvents(unittest.TestCase):
    def test_an_event_that_names_no_item_or_an_unknown_one(self):
        events = [created(), *call(), done()]
        del events[2]["item_id"], events[2]["call_id"]
        self.assertEqual(messages(judge(events))[0], ("missing_index", "response.function_call_arguments.delta "
                                                      "item_id must be a non-empty string, got null"))
        events = [created(), *call(), done()]
        events[2]["item_id"] = "item_9"
        self.assertEqual(messages(judge(events))[0], ("missing_slot", "response.function_call_arguments.delta for "
                                                      "item \"item_9\", which was never added"))
        events = [created(), *call(), done()]
        events[1]["output_index"] = -1
        self.assertIn("unsupported_event", code_set(judge(events)))

    def test_item_types(self):
        def added(body):
            return ev("response.output_item.added", response_id="resp_1", output_index=0, item=body)
        mcp = {"id": "item_m", "type": "mcp_call", "server_label": "s", "name": "n", "arguments": ""}
        report = judge([created(), added(mcp), ev("response.output_item.done", output_index=0, item=mcp), done()])
        self.assertEqual((report["status"], report["hosted_tools"] if "hosted_tools" in report else None)[0],
                         "not_applicable")
        for kind in ("mcp_approval_request", "function_call_output", "custom_tool_call"):
            with self.subTest(kind=kind):
                report = judge([created(), added({"id": "item_x", "type": kind}), done()])
                self.assertEqual(messages(report)[0], ("unsupported_event", f"output item type \"{kind}\" has no "
                                                       "reviewed normalizer") if vts._protocol_word(kind) else
                                 messages(report)[0])
        bad = judge([created(), added(item(call_id=5)), done()])
        self.assertIn("unsupported_event", code_set(bad))

    def test_a_content_event_of_another_item(self):
        events = [created(), *call()[:1], ev("response.output_text.delta", response_id="resp_1", item_id="item_1",
                                             output_index=0, content_index=0, delta="x"), *call()[1:], done()]
        self.assertEqual(messages(judge(events))[0], ("unexpected_event", "response.output_text.delta does not "
                                                      "belong to a function_call item (item 0)"))

    def test_unknown_types_and_shapes_fail_closed(self):
        for event in (ev("response.function_call.delta", item_id="item_1", delta="x"), {"type": 3}, [], "x",
                      ev("conversation.item.added", item=[]), ev("response.done", response=[])):
            with self.subTest(event=event):
                report = judge([created(), *call(), event, done()])
                self.assertEqual(report["status"], "blocked")
                self.assertIn("unsupported_event", code_set(report))

    def test_an_event_of_another_response_is_not_read(self):
        other = ("another response than the one response.created opened (its response id differs): another "
                 "response's event")
        events = [created(), *call(), done()]
        events[2]["response_id"] = "resp_2"
        self.assertEqual(messages(judge(events))[0], ("unexpected_event", "response.function_call_arguments.delta "
                                                      f"belongs to {other}"))
        report = judge([created(), *call(), *call("item_2", "call_2", "g", ("{}",), index=1)[:1], done()])
        self.assertIn("missing_terminal", code_set(report))
        events = [created(), *call(), *call("item_2", "call_2", "g", ("{}",), index=0), done()]
        for event in events[6:10]:
            event["response_id"] = "resp_2"
        report = judge(events)
        self.assertEqual((report["status"], code_set(report), [c["id"] for c in report["calls"]]),
                         ("blocked", {"unexpected_event"}, ["call_1"]))
        early = judge([created(), *call(), dict(done(), response={"id": "resp_2", "status": "completed"}), done()])
        self.assertEqual(messages(early)[0], ("unexpected_event", f"response.done belongs to {other}"))
        self.assertEqual(early["status"], "blocked")
        # a response that names no id, and events that name none, are not compared
        events = [ev("response.created", response={"status": "in_progress"}), *call(), done()]
        events[2]["response_id"] = "resp_9"
        self.assertEqual(judge(events)["status"], "pass")
        events = [created(), *call(), done()]
        for event in events:
            event.pop("response_id", None)
        self.assertEqual(judge(events)["status"], "pass")

    def test_a_restatement_that_says_incomplete(self):
        for kind in ("conversation.item.done", "response.done response.output"):
            with self.subTest(kind=kind):
                if kind == "conversation.item.done":
                    events = [created(), *call(), ev(kind, item=item(arguments='{"a":1}', status="incomplete")), done()]
                else:
                    events = [created(), *call(), done(output=[item(arguments='{"a":1}', status="incomplete")])]
                self.assertEqual(messages(judge(events)), [("wrong_terminal_reason", f"{kind} states function_call "
                                                            "item 0 with status \"incomplete\"")])

    def test_an_error_that_refuses_a_client_request_is_not_the_responses(self):
        for code in ("conversation_already_has_active_response", "response_cancel_not_active"):
            with self.subTest(code=code):
                refused = ev("error", error={"type": "invalid_request_error", "code": code, "message": "m"})
                self.assertEqual(judge([created(), *call()[:2], refused, *call()[2:], done()])["status"], "pass")
        for code in ("server_error", None, ["response_cancel_not_active"], {"a": 1}):
            with self.subTest(code=code):
                other = ev("error", error={"type": "server_error", "code": code, "message": "m"})
                self.assertEqual(code_set(judge([created(), *call(), other, done()])), {"stream_error"})

    def test_xai_running_input_transcript_is_a_session_event(self):
        transcript = ev("conversation.item.input_audio_transcription.updated", item_id="item_u", content_index=0,
                        transcript="what is")
        self.assertEqual(judge([transcript, created(), *call(), transcript, done(), transcript])["status"], "pass")


class Claims(unittest.TestCase):
    def families(self, payload):
        return {row.capture.family for row in vts.PROFILES.values() if row.capture.claims(payload)}

    def test_event_id_and_sequence_number_tell_the_two_apis_apart(self):
        for kind in ("response.created", "response.output_item.added", "response.function_call_arguments.delta",
                     "response.done", "session.created", "error"):
            with self.subTest(kind=kind):
                self.assertEqual(self.families({"type": kind, "event_id": "event_1"}), {"openai-realtime"})
        responses = {"type": "response.output_item.added", "sequence_number": 3, "output_index": 0}
        self.assertEqual(self.families(responses), {"openai-responses"})
        self.assertEqual(self.families(dict(responses, event_id="event_1")), set())
        self.assertEqual(self.families({"type": "response.completed", "event_id": "e"}), set())
        # xAI's keep-alive tells no family apart: Anthropic's events have a ping too
        self.assertEqual(self.families({"type": "ping", "event_id": "e", "timestamp": 1}), {"anthropic"})

    def test_every_fixture_payload_is_claimed_by_this_family(self):
        folder = os.path.join(FIXTURES, "openai-realtime")
        for name in sorted(os.listdir(folder)):
            doc = load_fixture(f"openai-realtime/{name}")[1]
            for event in doc["events"]:   # an event type of no room (a fixture's unsupported one) is claimed by none
                wanted = {"openai-realtime"} if event["type"] in vts._REALTIME_EVENTS else set()
                self.assertEqual(self.families(event), wanted, (name, event["type"]))


class MessageLogTurns(unittest.TestCase):
    def test_a_log_of_two_responses(self):
        session = ev("session.created", session={})
        first, second = [created(), *call(), done()], [created(), done()]
        log = [session, *first, ev("input_audio_buffer.committed", item_id="u"), *second]
        self.assertEqual(ROW.capture.socket_turns(log), [(1, 1 + len(first)), (2 + len(first), len(log))])
        self.assertEqual(ROW.capture.socket_turns([session, *first, created()]),
                         [(1, 1 + len(first)), (1 + len(first), 2 + len(first))])   # the last one, cut
        self.assertEqual(ROW.capture.socket_turns([session]), [])

    def test_refused_logs(self):
        for log, said in (([created(), created()], "message 2: a response starts while the one of message 1 runs"),
                          ([done()], "message 1: response.done without its response.created"),
                          ([call()[1]], "message 1: \"response.function_call_arguments.delta\" outside a response")):
            with self.subTest(said=said), self.assertRaises(vts.CaptureError) as caught:
                ROW.capture.socket_turns(log)
            self.assertIn(said, str(caught.exception))


class CaptureAndRequest(unittest.TestCase):
    def test_redaction_keeps_calls_and_structure(self):
        audio = ev("response.output_audio.delta", response_id="resp_1", item_id="item_m", output_index=0,
                   content_index=0, delta="UklGRiQAAABXQVZF")
        transcript = ev("response.output_audio_transcript.delta", response_id="resp_1", item_id="item_m",
                        output_index=0, content_index=0, delta="It is sunny")
        part = ev("response.content_part.done", item_id="item_m", output_index=0, content_index=0,
                  part={"type": "audio", "audio": "UklGRiQ=", "transcript": "It is sunny"})
        self.assertEqual(ROW.capture.redact(audio)["delta"], vts.REDACTED_BASE64)
        self.assertEqual(ROW.capture.redact(transcript)["delta"], vts.REDACTED_TEXT)
        self.assertEqual(ROW.capture.redact(part)["part"], {"type": "audio", "audio": vts.REDACTED_BASE64,
                                                            "transcript": vts.REDACTED_TEXT})
        for event in [created(), *call(), done(output=[item(arguments='{"a":1}')])]:
            redacted = ROW.capture.redact(event)
            self.assertEqual(redacted, event if event["type"] != "response.created" else redacted)
        self.assertEqual(ROW.wire.protected_paths(audio)[("delta",)], "base64")

    def test_redaction_keeps_an_error_code_that_is_a_protocol_word(self):
        refused = ev("error", error={"type": "invalid_request_error", "code": "response_cancel_not_active",
                                     "message": "Cancellation failed: no active response found", "param": None})
        self.assertEqual(ROW.capture.redact(refused)["error"], {"type": "invalid_request_error",
                                                               "code": "response_cancel_not_active",
                                                               "message": vts.REDACTED_TEXT, "param": None})
        log = [created(), *call()[:2], refused, *call()[2:], done()]
        body = "".join(json.dumps(event) + "\n" for event in log).encode()
        envelope, _ = vts.sse_to_envelope(body, "openai-realtime", SCHEMAS, True)
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")
        secret = dict(refused, error={"code": "sk-live 1234 secret words", "message": "m"})
        self.assertEqual(ROW.capture.redact(secret)["error"]["code"], vts.REDACTED_TEXT)

    def test_capture_of_a_message_log(self):
        log = [ev("session.created", session={"instructions": "secret plan", "tools": []}), created(), *call(),
               done()]
        body = "".join(json.dumps(event) + "\n" for event in log).encode()
        envelope, _ = vts.sse_to_envelope(body, "openai-realtime", SCHEMAS, True)
        self.assertEqual(envelope["events"][0]["session"]["instructions"], vts.REDACTED_TEXT)
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")

    def test_capture_picks_one_response_of_a_log_with_turn(self):
        first = load_fixture("openai-realtime/pass-voice-turn-with-session-events.json")[1]
        second = load_fixture("openai-realtime/pass-single-call.json")[1]
        log = [ev("session.created", session={"tools": []}), *first["events"], *second["events"]]
        body = "".join(json.dumps(event) + "\n" for event in log)
        code, out, err = run_cli("capture", "--profile", "openai-realtime", "-", stdin=body.encode())
        self.assertEqual((code, out), (3, ""))
        self.assertIn("the message log carries 2 turns: pick one with --turn K (0 to 1)", err)
        for turn, doc in enumerate((first, second)):
            with self.subTest(turn=turn), tempfile.TemporaryDirectory() as folder:
                schemas = os.path.join(folder, "schemas.json")
                with open(schemas, "w", encoding="utf-8") as handle:
                    json.dump(doc["tool_schemas"], handle)
                code, out, err = run_cli("capture", "--profile", "openai-realtime", "--turn", str(turn), "--schemas",
                                         schemas, "--no-redact", "-", stdin=body.encode())
                self.assertEqual(code, 0, err)
                envelope = json.loads(out)
                self.assertEqual(envelope["events"][0]["type"], "response.created")
                report = vts.validate_envelope(envelope)
                self.assertEqual((report["status"], report["calls"]), ("pass", vts.validate_envelope(doc)["calls"]))

    def test_capture_of_a_har_entry_takes_the_session_update_as_the_request(self):
        doc = load_fixture("openai-realtime/pass-spoken-answer-then-two-calls.json")[1]
        tools = [{"type": "function", "name": name, "description": "", "parameters": schema}
                 for name, schema in doc["tool_schemas"].items()]
        sent = [{"type": "session.update", "session": {"type": "realtime", "tools": tools, "tool_choice": "auto",
                                                       "instructions": "Be brief."}},
                {"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "Weather in Oslo, and my order?"}]}},
                {"type": "response.create"}]
        messages = ([("receive", json.dumps(ev("session.created", session={"tools": []})))]
                    + [("send", json.dumps(message)) for message in sent]
                    + [("receive", json.dumps(event)) for event in doc["events"]])
        entry = {"request": {"url": "wss://api.openai.com/v1/realtime?model=gpt-realtime", "method": "GET"},
                 "response": {"status": 101, "content": {"size": 0}}, "_resourceType": "websocket",
                 "_webSocketMessages": [{"type": kind, "time": 1767225600.0 + n / 10, "opcode": 1, "data": data}
                                        for n, (kind, data) in enumerate(messages)]}
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "session.har")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump({"log": {"entries": [entry]}}, handle)
            code, out, err = run_cli("capture", "--profile", "openai-realtime", "--entry", "0", path)
        self.assertEqual(code, 0, err)
        envelope = json.loads(out)
        self.assertEqual((envelope["tool_schemas"], envelope["request"]),
                         (doc["tool_schemas"], {"tools": sorted(doc["tool_schemas"]), "tool_choice": "auto"}))
        self.assertEqual(envelope["events"][0]["type"], "response.created")   # the turn, session.created left out
        report = vts.validate_envelope(envelope)
        self.assertEqual((report["status"], report["calls"]), ("pass", vts.validate_envelope(doc)["calls"]))

    def test_the_request_from_session_update_or_response_create(self):
        tool = {"type": "function", "name": "f", "description": "d", "parameters": SCHEMAS["f"]}
        mcp = {"type": "mcp", "server_label": "docs", "server_url": "https://example.invalid/mcp"}
        update = {"type": "session.update", "session": {"type": "realtime", "tools": [tool, mcp],
                                                        "tool_choice": {"type": "function", "name": "f"}}}
        schemas, request, warnings = vts.request_from_body("openai-realtime", update)
        self.assertEqual((schemas, request, warnings), ({"f": SCHEMAS["f"]}, {
            "tools": ["f"], "tool_choice": {"type": "function", "name": "f"}}, []))
        create = {"type": "response.create", "response": {"tools": [dict(tool, name="g", parameters=None)],
                                                          "tool_choice": "required"}}
        schemas, request, _ = vts.request_from_body("openai-realtime", create)
        self.assertEqual((schemas, request), ({"g": {"type": "object"}}, {"tools": ["g"], "tool_choice": "required"}))
        with self.assertRaises(vts.CaptureError):
            vts.request_from_body("openai-realtime", {"type": "session.update", "session": []})

    def test_tool_choice_forms(self):
        for choice, allowed in (("auto", None), ("none", None), ("required", None),
                                ({"type": "function", "name": "f"}, frozenset({"f"})),
                                ({"type": "mcp", "server_label": "s", "name": "n"}, frozenset())):
            with self.subTest(choice=choice):
                self.assertEqual(vts.request_context("openai-realtime", {"tool_choice": choice}).allowed, allowed)
        for choice in ("any", {"type": "function"}, {"type": "allowed_tools"}, 3):
            with self.subTest(choice=choice), self.assertRaises(vts.RequestError):
                vts.request_context("openai-realtime", {"tool_choice": choice})
        with self.assertRaises(vts.RequestError) as caught:
            vts.request_context("openai-realtime", {"parallel_tool_calls": False})
        self.assertIn("the Realtime API has no such control", str(caught.exception))

    def test_the_conform_request_reads_back(self):
        body = ROW.http.request_body(SCHEMAS, {"tool_choice": "required"})
        self.assertEqual(body["type"], "session.update")
        schemas, request, _ = vts.request_from_body("openai-realtime", body)
        self.assertEqual((schemas, request), (SCHEMAS, {"tools": ["f", "g"], "tool_choice": "required"}))


class SocketRules(unittest.TestCase):
    def test_the_handshake_accepts_as_rfc_6455_says(self):
        # RFC 6455 section 1.3's own example: a real client (websockets, as openai-python uses it) checks this
        self.assertEqual(vts.ws_accept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")

    def test_opening_and_replies(self):
        socket = ROW.http.socket
        self.assertEqual([m["type"] for m in socket.opening([])], ["session.created"])
        updated, follows = socket.reply({"type": "session.update", "session": {"instructions": "x"}}, [])
        self.assertEqual((updated[0]["type"], updated[0]["session"]["instructions"], follows),
                         ("session.updated", "x", False))
        self.assertEqual(socket.reply({"type": "response.create"}, []), ([], True))
        self.assertEqual(socket.reply({"type": "conversation.item.create"}, []), ([], False))
        self.assertEqual(socket.reply([], []), ([], False))


def serve(relpaths):
    served, _ = vts.serve_plan([os.path.join(FIXTURES, path) for path in relpaths])
    server = vts.make_server(served, log=lambda line: None, request_seconds=5.0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"ws://{host}:{port}/", served


class ServedOverTheSocket(unittest.TestCase):
    """serve plays each fixture over a WebSocket: session.created at once, session.updated for session.update,
    the response after response.create."""

    def test_every_fixture_is_its_events_after_response_create(self):
        folder = os.path.join(FIXTURES, "openai-realtime")
        server, url, served = serve([os.path.join("openai-realtime", name) for name in sorted(os.listdir(folder))])
        try:
            self.assertEqual(len(served), len(os.listdir(folder)))
            for prefix, fixture in sorted(served.items()):
                if fixture.fault:
                    continue
                with self.subTest(prefix), wsclient.connect(url + prefix + ROW.http.socket.example) as ws:
                    first = json.loads(ws.receive()[1])
                    ws.send_text(json.dumps({"type": "session.update", "session": {"instructions": "hi"}}))
                    second = json.loads(ws.receive()[1])
                    ws.send_text(json.dumps({"type": "response.create"}))
                    last = fixture.stream[-1]
                    got = [json.loads(text) for text in ws.texts(until=lambda text: json.loads(text) == last)]
                    self.assertEqual((first["type"], second["type"], got),
                                     ("session.created", "session.updated", fixture.stream))
                    ws.close()
        finally:
            server.shutdown()
            server.server_close()

    def test_faults_over_the_socket(self):
        cut, refused, retry = ("missing-terminal-connection-closed-mid-call",
                               "not-applicable-http-429-rate-limit-at-the-upgrade",
                               "pass-http-500-server-error-then-the-stream-on-retry")
        server, url, served = serve([f"openai-realtime/{name}.json" for name in (cut, refused, retry)])
        try:
            with wsclient.connect(url + cut + ROW.http.socket.example) as ws:
                self.assertEqual(json.loads(ws.receive()[1])["type"], "session.created")
                ws.send_text(json.dumps({"type": "response.create"}))
                self.assertEqual([json.loads(text) for text in ws.texts()], served[cut].stream)
                self.assertEqual((ws.ended, ws.closed), (True, False))   # no close frame
            for name, times in ((refused, 2), (retry, 1)):
                error = ROW.http.error(served[name].fault["error"]["kind"])
                for _ in range(times):
                    with self.subTest(name), self.assertRaises(wsclient.HandshakeRefused) as caught:
                        wsclient.connect(url + name + ROW.http.socket.example)
                    self.assertEqual((caught.exception.status, caught.exception.body), (error.status, error.body))
                    self.assertEqual(caught.exception.headers.get("retry-after"),
                                     dict(error.headers).get("retry-after"))
            with wsclient.connect(url + retry + ROW.http.socket.example) as ws:
                ws.receive()
                ws.send_text(json.dumps({"type": "response.create"}))
                last = served[retry].stream[-1]
                self.assertEqual([json.loads(text) for text in ws.texts(lambda text: json.loads(text) == last)],
                                 served[retry].stream)
                ws.close()
        finally:
            server.shutdown()
            server.server_close()


class Conform(unittest.TestCase):
    # a pass of each shape, the turns that end otherwise, the faults of the socket (a process each: all 34 took
    # 25 s of CPU here)
    SAMPLE = ("pass-single-call", "pass-spoken-answer-then-two-calls", "pass-beta-event-names",
              "pass-xai-second-item-reuses-output-index-0", "pass-xai-arguments-done-names-its-call-by-call-id",
              "wrong-terminal-reason-cancelled-after-the-done-events", "stream-error-response-failed",
              "request-violation-tool-choice-forces-another-function", "missing-terminal-connection-closed-mid-call",
              "not-applicable-http-429-rate-limit-at-the-upgrade", "pass-http-500-server-error-then-the-stream-on-retry")

    @slow("runs the WebSocket adapter example as a process per fixture")
    def test_the_socket_adapter_example_goes_green(self):
        adapter = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conform", "socket_adapter.py")
        code, out, err = run_cli("conform", "--adapter-cmd", f"{sys.executable} {adapter}", "--report", "json",
                                 *(os.path.join(FIXTURES, "openai-realtime", name + ".json") for name in self.SAMPLE))
        records = [json.loads(line) for line in out.splitlines()][:-1]
        self.assertEqual(len(records), len(self.SAMPLE))
        self.assertEqual([(os.path.basename(r["fixture"]), r["verdict"]) for r in records
                          if r["verdict"] in vts.CONFORM_FAILING], [])
        self.assertEqual(code, 0, err)
        verdicts = {os.path.basename(r["fixture"])[:-5]: r["verdict"] for r in records}
        self.assertEqual(verdicts["pass-xai-second-item-reuses-output-index-0"], "agree")


def sdk_verdict(report):
    return report["status"], codes(report), [(c["id"], c["name"], c["arguments"]) for c in report["calls"]]


@unittest.skipUnless(importable("openai") and importable("websockets"),
                     "openai-python or websockets is not installed (run with tests/adapters/.venv/bin/python)")
class OpenaiPythonRealtimeClient(unittest.TestCase):
    """openai-python's realtime client (client.realtime.connect, over websockets) reads each fixture from serve;
    the event objects it yields, fed to StreamGate, give the wire's verdict (its own session events aside)."""

    def events_through_the_client(self, url, prefix, fixture):
        import openai
        client = openai.OpenAI(api_key="vts-test", base_url=f"{url.replace('ws://', 'http://')}{prefix}/v1",
                               max_retries=0)
        last = fixture.stream[-1]["event_id"]
        objects = []
        with client.realtime.connect(model="gpt-realtime") as connection:
            connection.session.update(session={"type": "realtime", "tools": []})
            connection.response.create()
            for event in connection:
                objects.append(event)
                if getattr(event, "event_id", None) == last:
                    break
        return objects

    @slow("SDKs: openai-python's realtime client over a loopback WebSocket")
    def test_the_sdk_objects_give_the_wire_verdict(self):
        folder = os.path.join(FIXTURES, "openai-realtime")
        server, url, served = serve([os.path.join("openai-realtime", name) for name in sorted(os.listdir(folder))])
        try:
            for prefix, fixture in sorted(served.items()):
                if fixture.fault:
                    continue   # its refused upgrades: test_a_refused_upgrade_opens_no_session
                with self.subTest(prefix):
                    doc = load_fixture(f"openai-realtime/{prefix}.json")[1]
                    objects = self.events_through_the_client(url, prefix, fixture)
                    self.assertEqual([type(o).__module__.split(".")[0] for o in objects[:1]], ["openai"])
                    gate = vts.StreamGate("openai-realtime", doc["tool_schemas"], request=doc.get("request"))
                    for event in objects:
                        gate.feed(event)
                    self.assertEqual(sdk_verdict(gate.finish()), sdk_verdict(vts.validate_envelope(doc)))
        finally:
            server.shutdown()
            server.server_close()

    @slow("SDKs: openai-python's realtime client over a loopback WebSocket")
    def test_a_refused_upgrade_opens_no_session(self):
        import openai
        from websockets.exceptions import InvalidStatus
        name = "not-applicable-http-429-rate-limit-at-the-upgrade"
        server, url, served = serve([f"openai-realtime/{name}.json"])
        try:
            client = openai.OpenAI(api_key="vts-test", base_url=f"{url.replace('ws://', 'http://')}{name}/v1",
                                   max_retries=0)
            with self.assertRaises(InvalidStatus) as caught:
                with client.realtime.connect(model="gpt-realtime"):
                    pass
            self.assertEqual(caught.exception.response.status_code, 429)
        finally:
            server.shutdown()
            server.server_close()

    def test_the_sdk_event_models_built_from_the_payloads(self):
        # what parse_event builds from each received message, without a socket
        from openai._models import construct_type_unchecked
        from openai.types.realtime import RealtimeServerEvent
        folder = os.path.join(FIXTURES, "openai-realtime")
        for name in sorted(os.listdir(folder)):
            with self.subTest(name):
                doc = load_fixture(f"openai-realtime/{name}")[1]
                gate = vts.StreamGate("openai-realtime", doc["tool_schemas"], request=doc.get("request"))
                for event in doc["events"]:
                    gate.feed(construct_type_unchecked(value=copy.deepcopy(event), type_=RealtimeServerEvent))
                self.assertEqual(sdk_verdict(gate.finish()), sdk_verdict(vts.validate_envelope(doc)))


class BoundedWork(unittest.TestCase):
    """An arguments event that names its call by call_id alone (xAI's .done) is looked up in an index built once
    per item, not by a scan of every item: n such events over n items cost about n steps, not n squared."""

    class Counted(dict):
        visited = 0

        def values(self):
            for value in super().values():
                type(self).visited += 1
                yield value

    def test_calls_named_by_call_id_are_found_without_a_scan_per_event(self):
        n = 300
        gate = vts.StreamGate("openai-realtime", {"f": {"type": "object"}}, limits=vts.Limits(max_calls=4 * n))
        gate._normalizer.state.items = self.Counted()
        gate.feed(created())
        for i in range(n):
            gate.feed(ev("response.output_item.added", response_id="resp_1", output_index=i,
                         item=item(f"item_{i}", f"call_{i}")))
        for i in range(n):
            gate.feed(ev("response.function_call_arguments.done", call_id=f"call_{i}", name="f", arguments="{}"))
        for i in range(n):
            gate.feed(ev("response.output_item.done", response_id="resp_1", output_index=i,
                         item=item(f"item_{i}", f"call_{i}", "f", "{}", "completed")))
        gate.feed(done())
        report = gate.finish()
        self.assertEqual((report["status"], len(report["calls"])), ("pass", n))
        self.assertLess(self.Counted.visited, 4 * n)


class CallStatus(unittest.TestCase):
    """Where a call is stated finished (its done item, conversation.item.done, a completed response.done's output),
    another status than completed is unexpected_event; a cut response's output may say in_progress."""

    def verdict(self, change):
        doc = load_fixture("openai-realtime/pass-single-call.json")[1]
        change(doc["events"])
        report = vts.validate_envelope(doc)
        return report["status"], sorted(code_set(report))

    def entry(self, events, kind):
        return next(event for event in events if event["type"] == kind)

    def test_each_final_statement(self):
        def final_output(events):
            self.entry(events, "response.done")["response"]["output"][0]["status"] = "in_progress"

        def conversation_done(events):
            self.entry(events, "conversation.item.done")["item"]["status"] = "in_progress"

        for change in (final_output, conversation_done):
            with self.subTest(change.__name__):
                self.assertEqual(self.verdict(change), ("blocked", ["unexpected_event"]))

    def test_an_announcement_in_progress_and_a_cut_responses_output_are_not_findings_of_their_own(self):
        def cancelled(events):
            done = self.entry(events, "response.done")["response"]
            done["status"], done["output"][0]["status"] = "cancelled", "in_progress"

        self.assertEqual(self.verdict(cancelled), ("blocked", ["wrong_terminal_reason"]))
        self.assertEqual(self.verdict(lambda events: None), ("pass", []))


def agents_tool_calls(doc):
    """The tool calls openai-agents' realtime model emits (RealtimeModelToolCallEvent, each one run by its
    RealtimeSession) while it reads the fixture's events, in order: [(call_id, name, arguments)]."""
    import asyncio
    import logging

    from agents.realtime.model_events import RealtimeModelToolCallEvent
    from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel

    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)   # its "Failed to validate server event" lines
    calls = []

    class Listener:
        async def on_event(self, event):
            if isinstance(event, RealtimeModelToolCallEvent):
                calls.append((event.call_id, event.name, event.arguments))

    async def run():
        model = OpenAIRealtimeWebSocketModel()
        model.add_listener(Listener())
        for event in copy.deepcopy(doc["events"]):
            await model._handle_ws_event(event)

    asyncio.run(run())
    return calls


@unittest.skipUnless(importable("agents.realtime.openai_realtime"),
                     "openai-agents is not installed (run with tests/adapters/.venv/bin/python)")
class OpenaiAgentsRealtimeModel(unittest.TestCase):
    """openai-agents runs a function_call item of response.output_item.added or .done whose status is "completed"
    (_handle_output_item): on every passing fixture it runs exactly our calls, once each; the status fixtures show
    where it would not (an in_progress done item: nothing) or would run twice (a completed added item)."""

    def test_a_passing_fixture_runs_our_calls_once(self):
        folder = os.path.join(FIXTURES, "openai-realtime")
        for name in sorted(os.listdir(folder)):
            doc = load_fixture(f"openai-realtime/{name}")[1]
            report = vts.validate_envelope(doc)
            if report["status"] != "pass":
                continue
            with self.subTest(name):
                self.assertEqual(agents_tool_calls(doc), sdk_verdict(report)[2])

    def test_what_it_does_where_a_status_blocks(self):
        call = ("call_Xk4pR9sT2vW8yZ1a", "get_weather", '{"city":"Lyon","unit":"celsius"}')
        doc = load_fixture("openai-realtime/unexpected-event-output-item-done-states-the-call-in-progress.json")[1]
        self.assertEqual(agents_tool_calls(doc), [])
        doc = load_fixture("openai-realtime/unexpected-event-output-item-added-states-the-call-completed.json")[1]
        self.assertEqual(agents_tool_calls(doc), [(call[0], call[1], ""), call])


if __name__ == "__main__":
    unittest.main()
