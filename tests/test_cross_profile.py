"""One logical turn in every profile: the same calls pass, the same defects block with the same code.

The turn: some text, then get_weather {"city":"Paris","days":3} and get_time {"tz":"Europe/Paris"}.
Each profile gets it in its own wire shape, fragmenting the arguments its own way.

Run: cd tests && PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -v test_cross_profile
"""

import json
import unittest

from support import anthropic_turn, chat, code_set, codes, orc, vts

SCHEMAS = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city", "days"], "additionalProperties": False},
    "get_time": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"],
                 "additionalProperties": False},
}
TURN = [("get_weather", {"city": "Paris", "days": 3}), ("get_time", {"tz": "Europe/Paris"})]
TEXT = "Let me check the weather and the time."

# How each profile ends a turn normally, and on max tokens
TOOL_END = "tool"
MAX_TOKENS = "max_tokens"
CUT = "cut"          # the stream stops before the turn's terminal


class Call:
    """One logical call: its name, its JSON text (string-fragment profiles) and its gemini partialArgs entries."""

    def __init__(self, name, value=None, text=None, entries=None):
        self.name = name
        self.text = json.dumps(value) if text is None else text
        self.entries = entries if entries is not None else gemini_entries(value)


def gemini_entries(value, path="$"):
    out = []
    for key, item in value.items():
        sub = f"{path}.{key}"
        if isinstance(item, dict):
            out.extend(gemini_entries(item, sub))
        elif isinstance(item, str):
            half = max(1, len(item) // 2)
            out.append({"jsonPath": sub, "stringValue": item[:half], "willContinue": True})
            out.append({"jsonPath": sub, "stringValue": item[half:], "willContinue": True})
            out.append({"jsonPath": sub, "stringValue": ""})
        elif isinstance(item, bool):
            out.append({"jsonPath": sub, "boolValue": item})
        elif item is None:
            out.append({"jsonPath": sub, "nullValue": None})
        else:
            out.append({"jsonPath": sub, "numberValue": item})
    return out


def pieces(text, size):
    return [text[k:k + size] for k in range(0, len(text), size)] or [""]


# --- per-profile builders: (calls, end) -> the stream ---------------------------------------

def build_openai(calls, end, mistral=False):
    def chunk(delta, finish=None):
        return {"object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    stream = [chunk({"role": "assistant", "content": ""}), chunk({"content": TEXT})]
    if mistral:   # Mistral sends every call whole, in one delta, without index
        stream.append(chunk({"tool_calls": [{"id": f"c{k}abcdef", "function": {"name": c.name, "arguments": c.text}}
                                            for k, c in enumerate(calls)]}))
    else:         # OpenAI: id and name first, then the arguments in 5-character fragments
        for k, c in enumerate(calls):
            stream.append(chunk({"tool_calls": [{"index": k, "id": f"call_{k}", "type": "function",
                                                 "function": {"name": c.name, "arguments": ""}}]}))
            stream += [chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]}) for p in pieces(c.text, 5)]
    if end != CUT:
        stream.append(chunk({}, {TOOL_END: "tool_calls", MAX_TOKENS: "length"}[end]))
    return stream


def build_mistral(calls, end):
    return build_openai(calls, end, mistral=True)


def build_anthropic(calls, end):
    stream = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                    "model": "m", "content": [], "stop_reason": None}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": TEXT}},
              {"type": "content_block_stop", "index": 0}]
    for k, c in enumerate(calls, 1):
        stream.append({"type": "content_block_start", "index": k, "content_block": {
            "type": "tool_use", "id": f"toolu_{k}", "name": c.name, "input": {}}})
        stream += [{"type": "content_block_delta", "index": k, "delta": {"type": "input_json_delta", "partial_json": p}}
                   for p in [""] + pieces(c.text, 7)]
        stream.append({"type": "content_block_stop", "index": k})
    if end != CUT:
        stream += [{"type": "message_delta", "delta": {"stop_reason": {TOOL_END: "tool_use", MAX_TOKENS: "max_tokens"}[
                       end], "stop_sequence": None}, "usage": {"output_tokens": 40}},
                   {"type": "message_stop"}]
    return stream


def build_responses(calls, end):
    stream = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
              {"type": "response.output_item.added", "output_index": 0, "item": {
                  "type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant", "content": []}},
              {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "delta": TEXT},
              {"type": "response.output_item.done", "output_index": 0, "item": {
                  "type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": []}}]
    output = []
    for k, c in enumerate(calls, 1):
        item = {"type": "function_call", "id": f"fc_{k}", "call_id": f"call_{k}", "name": c.name}
        stream.append({"type": "response.output_item.added", "output_index": k,
                       "item": dict(item, arguments="", status="in_progress")})
        stream += [{"type": "response.function_call_arguments.delta", "item_id": f"fc_{k}", "output_index": k,
                    "delta": p} for p in pieces(c.text, 4)]
        stream.append({"type": "response.function_call_arguments.done", "item_id": f"fc_{k}", "output_index": k,
                       "arguments": c.text})
        done = dict(item, arguments=c.text, status="completed")
        stream.append({"type": "response.output_item.done", "output_index": k, "item": done})
        output.append(done)
    if end == TOOL_END:
        stream.append({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                                                                  "output": output}})
    elif end == MAX_TOKENS:
        stream.append({"type": "response.incomplete", "response": {
            "id": "resp_1", "status": "incomplete", "output": output,
            "incomplete_details": {"reason": "max_output_tokens"}}})
    return stream


def build_bedrock(calls, end):
    stream = [{"messageStart": {"role": "assistant"}},
              {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": TEXT}}},
              {"contentBlockStop": {"contentBlockIndex": 0}}]
    for k, c in enumerate(calls, 1):
        stream.append({"contentBlockStart": {"contentBlockIndex": k, "start": {
            "toolUse": {"toolUseId": f"tooluse_{k}", "name": c.name}}}})
        stream += [{"contentBlockDelta": {"contentBlockIndex": k, "delta": {"toolUse": {"input": p}}}}
                   for p in pieces(c.text, 6)]
        stream.append({"contentBlockStop": {"contentBlockIndex": k}})
    if end != CUT:
        stream += [{"messageStop": {"stopReason": {TOOL_END: "tool_use", MAX_TOKENS: "max_tokens"}[end]}},
                   {"metadata": {"usage": {"inputTokens": 10, "outputTokens": 40, "totalTokens": 50},
                                 "metrics": {"latencyMs": 100}}}]
    return stream


def build_gemini(calls, end):
    def chunk(*parts, finish=None):
        candidate = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "modelVersion": "gemini-x", "responseId": "r1"}
    stream = [chunk({"text": TEXT})]
    for k, c in enumerate(calls):
        if k % 2 == 0:   # the first call streams its arguments as partialArgs (Vertex)
            stream.append(chunk({"functionCall": {"name": c.name, "willContinue": True}, "thoughtSignature": "c2ln"}))
            stream += [chunk({"functionCall": {"partialArgs": [e], "willContinue": True}}) for e in c.entries]
            stream.append(chunk({"functionCall": {}}))
        else:            # the second arrives whole, with an args object
            stream.append(chunk({"functionCall": {"name": c.name, "args": json.loads(c.text)}}))
    if end != CUT:
        stream.append(chunk({"text": ""}, finish={TOOL_END: "STOP", MAX_TOKENS: "MAX_TOKENS"}[end]))
    return stream


def build_cohere(calls, end):
    stream = [{"id": "m1", "type": "message-start", "delta": {"message": {"role": "assistant", "content": [],
                                                                            "tool_plan": "", "tool_calls": []}}},
              {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": TEXT}}}]
    for k, c in enumerate(calls):   # one after another; arguments in 3-character fragments
        stream.append({"type": "tool-call-start", "index": k, "delta": {"message": {"tool_calls": {
            "id": f"{c.name}_{k}q8w7e6r5t4", "type": "function", "function": {"name": c.name, "arguments": ""}}}}})
        stream += [{"type": "tool-call-delta", "index": k, "delta": {"message": {"tool_calls": {
            "function": {"arguments": p}}}}} for p in pieces(c.text, 3)]
        stream.append({"type": "tool-call-end", "index": k})
    if end != CUT:
        stream.append({"type": "message-end", "delta": {"finish_reason": {TOOL_END: "TOOL_CALL",
                                                                          MAX_TOKENS: "MAX_TOKENS"}[end]}})
    return stream


def build_ollama(calls, end):
    def line(message, done=False, **extra):
        return {"model": "qwen3:8b", "created_at": "2026-11-20T09:14:00Z",
                "message": dict({"role": "assistant", "content": ""}, **message), "done": done, **extra}
    # the first call in a line of its own, the second inside the done line (arguments arrive as objects)
    entries = [{"id": f"call_{k}k3j9x2", "function": {"index": k, "name": c.name, "arguments": json.loads(c.text)}}
               for k, c in enumerate(calls)]
    stream = [line({"content": TEXT}), line({"tool_calls": entries[:1]})]
    if end != CUT:
        stream.append(line({"tool_calls": entries[1:]}, True,
                           done_reason={TOOL_END: "stop", MAX_TOKENS: "length"}[end], eval_count=40))
    else:
        stream.append(line({"tool_calls": entries[1:]}))
    return stream


def build_interactions(calls, end):
    # the steps grammar: a thought step and a text step shift the calls' step indices; 4-character fragments
    stream = [{"event_type": "interaction.created", "interaction": {"id": "v1_t", "status": "in_progress"}},
              {"event_type": "step.start", "index": 0, "step": {"type": "thought"}},
              {"event_type": "step.delta", "index": 0, "delta": {"type": "thought_signature", "signature": "c2ln"}},
              {"event_type": "step.stop", "index": 0},
              {"event_type": "step.start", "index": 1, "step": {"type": "model_output"}},
              {"event_type": "step.delta", "index": 1, "delta": {"type": "text", "text": TEXT}},
              {"event_type": "step.stop", "index": 1}]
    for k, c in enumerate(calls, 2):
        stream.append({"event_type": "step.start", "index": k,
                       "step": {"type": "function_call", "id": f"fc{k}x7q2", "name": c.name, "arguments": {}}})
        stream += [{"event_type": "step.delta", "index": k, "delta": {"type": "arguments_delta", "arguments": p}}
                   for p in pieces(c.text, 4)]
        stream.append({"event_type": "step.stop", "index": k})
    if end != CUT:
        stream.append({"event_type": "interaction.completed", "interaction": {
            "id": "v1_t", "status": {TOOL_END: "requires_action", MAX_TOKENS: "incomplete"}[end]}})
    return stream


def build_agui(calls, end):
    run = {"threadId": "thread_1", "runId": "run_1"}
    stream = [dict(run, type="RUN_STARTED"), {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": TEXT},
              {"type": "TEXT_MESSAGE_END", "messageId": "m1"}]
    for k, c in enumerate(calls):   # one after another; arguments in 3-character fragments
        call_id = f"call_{k}x7c2v9"
        stream.append({"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": c.name,
                       "parentMessageId": "m1"})
        stream += [{"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": p} for p in pieces(c.text, 3)]
        stream.append({"type": "TOOL_CALL_END", "toolCallId": call_id})
    if end == TOOL_END:
        stream.append(dict(run, type="RUN_FINISHED"))
    elif end == MAX_TOKENS:   # AG-UI has no token limit of its own: the run paused for the user instead
        stream.append(dict(run, type="RUN_FINISHED", outcome={"type": "interrupt", "interrupts": [
            {"id": "int_1", "reason": "tool_approval", "toolCallId": "call_0x7c2v9"}]}))
    return stream


def build_realtime(calls, end):
    ids = iter(range(1, 1000))

    def event(kind, **fields):   # every Realtime server event has an event_id
        return dict({"type": kind, "event_id": f"event_{next(ids)}"}, **fields)
    stream = [event("response.created", response={"id": "resp_1", "status": "in_progress", "output": []}),
              event("response.output_item.added", response_id="resp_1", output_index=0, item={
                  "id": "item_m", "type": "message", "status": "in_progress", "role": "assistant", "content": []}),
              event("response.output_text.delta", response_id="resp_1", item_id="item_m", output_index=0,
                    content_index=0, delta=TEXT),
              event("response.output_item.done", response_id="resp_1", output_index=0, item={
                  "id": "item_m", "type": "message", "status": "completed", "role": "assistant", "content": []})]
    output = []
    for k, c in enumerate(calls, 1):
        item = {"id": f"item_{k}", "type": "function_call", "call_id": f"call_{k}", "name": c.name}
        stream.append(event("response.output_item.added", response_id="resp_1", output_index=k,
                            item=dict(item, arguments="", status="in_progress")))
        stream += [event("response.function_call_arguments.delta", response_id="resp_1", item_id=f"item_{k}",
                         output_index=k, call_id=f"call_{k}", delta=p) for p in pieces(c.text, 4)]
        stream.append(event("response.function_call_arguments.done", response_id="resp_1", item_id=f"item_{k}",
                            output_index=k, call_id=f"call_{k}", name=c.name, arguments=c.text))
        done = dict(item, arguments=c.text, status="completed")
        stream.append(event("response.output_item.done", response_id="resp_1", output_index=k, item=done))
        output.append(done)
    if end != CUT:
        status = {TOOL_END: "completed", MAX_TOKENS: "incomplete"}[end]
        stream.append(event("response.done", response={"id": "resp_1", "status": status, "output": output}))
    return stream


def build_gemini_live(calls, end):
    # the first call also as a functionCall part of modelTurn (newer models deliver it twice), then one toolCall
    # with every call whole.  Live has no token-limit reason: the turn whose calls may not run is the one whose
    # calls the server withdraws (toolCallCancellation, after the user interrupted)
    entries = [{"id": f"function-call-{k}8412", "name": c.name, "args": json.loads(c.text)}
               for k, c in enumerate(calls)]
    stream = [{"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": TEXT}]}}},
              {"serverContent": {"modelTurn": {"role": "model", "parts": [{"functionCall": entries[0]}]}}}]
    if end != CUT:
        stream.append({"toolCall": {"functionCalls": entries}})
    if end == MAX_TOKENS:
        stream += [{"serverContent": {"interrupted": True}},
                   {"toolCallCancellation": {"ids": [entry["id"] for entry in entries]}}]
    return stream


BUILDERS = {"openai": build_openai, "mistral": build_mistral, "anthropic": build_anthropic,
            "openai-responses": build_responses, "bedrock": build_bedrock, "gemini": build_gemini,
            "cohere": build_cohere, "ollama": build_ollama, "gemini-interactions": build_interactions,
            "ag-ui": build_agui, "openai-realtime": build_realtime, "gemini-live": build_gemini_live}


# --- per-profile readers of the argument fragments a builder wrote: (reader, fewest, most) -----

def chat_fragments(stream):
    return [e["function"]["arguments"] for c in stream for ch in c["choices"]
            for e in ch["delta"].get("tool_calls", []) if e["function"].get("arguments")]


FRAGMENTS = {
    "openai": (chat_fragments, 8, None),
    "mistral": (chat_fragments, 2, 2),                    # mistral sends both calls whole
    "anthropic": (lambda stream: [e["delta"]["partial_json"] for e in stream
                                  if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
                                  and e["delta"]["partial_json"]], 8, None),
    "openai-responses": (lambda stream: [e["delta"] for e in stream
                                         if e["type"] == "response.function_call_arguments.delta"], 8, None),
    "bedrock": (lambda stream: [e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in stream
                                if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {})], 8, None),
    # gemini streams one call in partialArgs entries (a name part, three pieces, a final part) and sends one whole
    "gemini": (lambda stream: [p["functionCall"] for c in stream for p in c["candidates"][0]["content"]["parts"]
                               if "partialArgs" in p.get("functionCall", {}) or "args" in p.get("functionCall", {})],
               1 + 3 + 1, 1 + 3 + 1),
    "cohere": (lambda stream: [e for e in stream if e["type"] == "tool-call-delta"], 8, None),
    "ollama": (lambda stream: [e for c in stream for e in c["message"].get("tool_calls", [])], 2, 2),
    "gemini-interactions": (lambda stream: [e for e in stream if e.get("delta", {}).get("type") == "arguments_delta"],
                            8, None),
    "ag-ui": (lambda stream: [e for e in stream if e["type"] == "TOOL_CALL_ARGS"], 8, None),
    "openai-realtime": (lambda stream: [e["delta"] for e in stream
                                        if e["type"] == "response.function_call_arguments.delta"], 8, None),
    "gemini-live": (lambda stream: [e for m in stream for e in m.get("toolCall", {}).get("functionCalls", [])], 2, 2),
}

# each profile's reason for a turn cut by the token limit, as its builder writes it
MAX_TOKENS_REASON = {"openai": "length", "mistral": "length", "anthropic": "max_tokens",
                     "openai-responses": "incomplete", "bedrock": "max_tokens", "gemini": "MAX_TOKENS",
                     "cohere": "MAX_TOKENS", "ollama": "length", "gemini-interactions": "incomplete",
                     "ag-ui": "interrupt", "openai-realtime": "incomplete", "gemini-live": "toolCallCancellation"}

# the rows whose calls carry no id (Gemini's function response pairs by name and order)
WITHOUT_IDS = frozenset({"gemini"})
# the rows whose arguments arrive as parsed objects: no text can repeat a key (test_ollama covers the bytes)
ARGUMENTS_AS_OBJECTS = frozenset({"ollama", "gemini-live"})


def rows(test, *tables):
    """The names of every row of vts.PROFILES, in order.  A row that one of `tables` (this module's
    per-profile data) does not hold fails the test by name: a new profile is written a builder here
    the day it is added, never skipped."""
    for table in tables:
        missing = [name for name in vts.PROFILES if name not in table]
        test.assertEqual(missing, [], "rows of PROFILES with no entry in test_cross_profile's per-profile table "
                                      "(BUILDERS, FRAGMENTS, MAX_TOKENS_REASON, UnsafeIntegers.TURNS): write one")
    return list(vts.PROFILES)


def run(profile, calls, end=TOOL_END):
    stream = BUILDERS[profile](calls, end)
    doc = {"profile": profile, "tool_schemas": SCHEMAS, vts.STREAM_KEY[profile]: stream}
    return vts.validate_envelope(json.loads(json.dumps(doc)))


def logical(calls):
    return [Call(name, value) for name, value in calls]


class SameTurnEverywhere(unittest.TestCase):
    def test_every_profile_passes_with_the_same_calls(self):
        expected = [(name, value) for name, value in TURN]
        for profile in rows(self, BUILDERS):
            with self.subTest(profile=profile):
                report = run(profile, logical(TURN))
                self.assertEqual(report["findings"], [])
                self.assertEqual(report["status"], "pass")
                self.assertEqual(report["profile"], profile)
                self.assertEqual([(c["name"], json.loads(c["arguments"])) for c in report["calls"]], expected)
                self.assertEqual([c["state"] for c in report["calls"]], ["validated", "validated"])

    def test_the_builders_fragment_the_arguments(self):
        for profile in rows(self, BUILDERS, FRAGMENTS):
            reader, fewest, most = FRAGMENTS[profile]
            count = len(reader(BUILDERS[profile](logical(TURN), TOOL_END)))
            with self.subTest(profile=profile):
                self.assertGreaterEqual(count, fewest)
                self.assertLessEqual(count, count if most is None else most)

    def test_ids_come_from_each_profile_and_gemini_has_none(self):
        for profile in rows(self, BUILDERS):
            ids = [c["id"] for c in run(profile, logical(TURN))["calls"]]
            with self.subTest(profile=profile):
                if profile in WITHOUT_IDS:
                    self.assertEqual(ids, [None, None])
                else:
                    self.assertTrue(all(isinstance(i, str) and i for i in ids), profile)


class SameDefectEverywhere(unittest.TestCase):
    def assert_only(self, code, make, leave_out=frozenset()):
        for profile in rows(self, BUILDERS):
            if profile in leave_out:
                continue
            with self.subTest(profile=profile):
                report = make(profile)
                self.assertEqual(report["status"], "blocked")
                self.assertEqual({f["code"] for f in report["findings"]}, {code}, report["findings"])
                self.assertEqual(report["executable"], False)

    def test_stream_cut_before_the_terminal(self):
        self.assert_only("missing_terminal", lambda profile: run(profile, logical(TURN), CUT))

    def test_turn_ending_on_max_tokens(self):
        self.assert_only("wrong_terminal_reason", lambda profile: run(profile, logical(TURN), MAX_TOKENS))
        for profile in rows(self, BUILDERS, MAX_TOKENS_REASON):
            with self.subTest(profile=profile):
                stream = json.dumps(BUILDERS[profile](logical(TURN), MAX_TOKENS))
                self.assertIn(json.dumps(MAX_TOKENS_REASON[profile]), stream)

    def test_arguments_violating_the_schema(self):
        calls = logical([("get_weather", {"city": "Paris", "days": "3"}), TURN[1]])
        self.assert_only("schema_violation", lambda profile: run(profile, calls))
        calls = logical([TURN[0], ("get_time", {"tz": "Europe/Paris", "extra": True})])
        self.assert_only("schema_violation", lambda profile: run(profile, calls))

    def test_unknown_tool(self):
        calls = logical([TURN[0], ("get_stock_price", {"tz": "Europe/Paris"})])
        self.assert_only("unknown_tool", lambda profile: run(profile, calls))

    def test_duplicate_key_in_arguments(self):
        # ollama's arguments arrive as a parsed object: a repeated key there makes the envelope's bytes
        # invalid_fixture (test_ollama), and an envelope built in memory cannot hold one
        twice = Call("get_time", text='{"tz":"Europe/Paris","tz":"UTC"}',
                     entries=[{"jsonPath": "$.tz", "stringValue": "Europe/Paris"},
                              {"jsonPath": "$.tz", "stringValue": "UTC"}])
        self.assert_only("duplicate_key", lambda profile: run(profile, [twice, Call(*TURN[0])]),
                         ARGUMENTS_AS_OBJECTS)
        nested = Call("get_weather", text='{"city":"Paris","days":3,"days":4}',
                      entries=[{"jsonPath": "$.city", "stringValue": "Paris"}, {"jsonPath": "$.days", "numberValue": 3},
                               {"jsonPath": "$.days", "numberValue": 4}])
        self.assert_only("duplicate_key", lambda profile: run(profile, [nested, Call(*TURN[1])]),
                         ARGUMENTS_AS_OBJECTS)

    def test_each_defect_names_the_call_it_belongs_to(self):
        calls = logical([TURN[0], ("get_stock_price", {"tz": "Europe/Paris"})])
        for profile in rows(self, BUILDERS):
            with self.subTest(profile=profile):
                report = run(profile, calls)
                self.assertEqual([(c["name"], c["state"]) for c in report["calls"]],
                                 [("get_weather", "validated"), ("get_stock_price", "blocked")])

# ---------------------------------------------------------------------------------------------------
# The older profiles are unchanged by the newer ones (was test_profiles.py).
# ---------------------------------------------------------------------------------------------------


SCHEMAS_pr = {"f": {"type": "object"}, "g": {"type": "object"}}


class OldProfilesUnchanged(unittest.TestCase):
    def test_existing_profiles_still_work(self):
        report = vts.validate_envelope({"profile": "openai", "tool_schemas": SCHEMAS_pr, "chunks": [
            {"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                "finish_reason": "tool_calls"}]}]})
        self.assertEqual(report["status"], "pass")
        unknown = vts.validate_envelope({"profile": "watsonx", "tool_schemas": {}, "events": []})
        self.assertEqual(code_set(unknown), {"unknown_profile"})

# ---------------------------------------------------------------------------------------------------
# Unsafe integers in every profile, issue 21 (was test_fidelity.py).
# ---------------------------------------------------------------------------------------------------


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


def cohere_turn(arguments):
    return [{"type": "message-start", "delta": {"message": {"role": "assistant"}}},
            {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
                "id": "f_1", "type": "function", "function": {"name": "f", "arguments": ""}}}}},
            {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {
                "function": {"arguments": arguments}}}}},
            {"type": "tool-call-end", "index": 0}, {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}]


def ollama_turn(value):
    return [{"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"index": 0, "name": "f", "arguments": {"a": value}}}]}, "done": False},
            {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}]


def interactions_turn(arguments):
    return [{"event_type": "interaction.created", "interaction": {"id": "v1_u"}},
            {"event_type": "step.start", "index": 0, "step": {"type": "function_call", "id": "fc_1", "name": "f"}},
            {"event_type": "step.delta", "index": 0, "delta": {"type": "arguments_delta", "arguments": arguments}},
            {"event_type": "step.stop", "index": 0},
            {"event_type": "interaction.completed", "interaction": {"id": "v1_u", "status": "requires_action"}}]


def agui_turn(arguments):
    run = {"threadId": "t1", "runId": "r1"}
    return [dict(run, type="RUN_STARTED"), {"type": "TOOL_CALL_START", "toolCallId": "call_1", "toolCallName": "f"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": arguments},
            {"type": "TOOL_CALL_END", "toolCallId": "call_1"}, dict(run, type="RUN_FINISHED")]


def realtime_turn(arguments):
    item = {"id": "item_1", "type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""}
    return [{"type": "response.created", "event_id": "event_1", "response": {"output": []}},
            {"type": "response.output_item.added", "event_id": "event_2", "output_index": 0, "item": item},
            {"type": "response.function_call_arguments.delta", "event_id": "event_3", "output_index": 0,
             "item_id": "item_1", "call_id": "call_1", "delta": arguments},
            {"type": "response.output_item.done", "event_id": "event_4", "output_index": 0,
             "item": dict(item, arguments=arguments, status="completed")},
            {"type": "response.done", "event_id": "event_5", "response": {"status": "completed", "output": None}}]


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
        "cohere": lambda n: ("events", cohere_turn('{"a":%d}' % n)),
        "ollama": lambda n: ("chunks", ollama_turn(n)),
        "gemini-interactions": lambda n: ("events", interactions_turn('{"a":%d}' % n)),
        "ag-ui": lambda n: ("events", agui_turn('{"a":%d}' % n)),
        "openai-realtime": lambda n: ("events", realtime_turn('{"a":%d}' % n)),
        "gemini-live": lambda n: ("events", [{"toolCall": {"functionCalls": [{"id": "fc_1", "name": "f",
                                                                               "args": {"a": n}}]}}]),
    }

    def run_turn(self, name, value):
        key, stream = self.TURNS[name](value)
        profile = name.split()[0]
        return vts.validate_envelope({"profile": profile, "tool_schemas": {"f": {"type": "object"}}, key: stream})

    def test_the_safe_range_ends_pass_and_beyond_is_limit_exceeded_with_one_message(self):
        safe = 2 ** 53 - 1
        messages = set()
        rows(self, self.TURNS)
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


if __name__ == "__main__":
    unittest.main()
