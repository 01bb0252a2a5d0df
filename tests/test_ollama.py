"""The ollama profile (native /api/chat NDJSON lines): each rule with exact codes and positions,
capture of the NDJSON body, redaction and the request body.

The fixtures in fixtures/ollama/ pin one outcome per rule; this module checks what they cannot:
positions and messages, the shapes a call entry may have, capture and the request.
"""

import json
import unittest

from support import code_set, codes, positions, vts

SCHEMAS = {"f": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
           "g": {"type": "object"}}


def entry(name="f", args=None, index=0, call_id="call_ab12cd34", **function):
    body = {"function": dict({"index": index, "name": name, "arguments": {"a": 1} if args is None else args},
                             **function)}
    if index is None:
        del body["function"]["index"]
    if call_id is not None:
        body = {"id": call_id, **body}
    return body


def line(*calls, done=False, content="", **extra):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return dict({"model": "qwen3:8b", "created_at": "2026-11-20T09:14:00Z", "message": message, "done": done},
                **extra)


def done(*calls, reason="stop"):
    extra = {"eval_count": 7}
    if reason is not None:
        extra["done_reason"] = reason
    return line(*calls, done=True, **extra)


def judge(chunks, schemas=SCHEMAS, **extra):
    return vts.validate_envelope({"profile": "ollama", "tool_schemas": schemas, "chunks": chunks, **extra})


def ndjson(chunks, end="\n"):
    return "".join(json.dumps(c) + end for c in chunks).encode()


class Turns(unittest.TestCase):
    def test_whole_calls_before_and_inside_the_done_line(self):
        report = judge([line(entry()), done(entry("g", {}, 1, "call_zz99yy88"))])
        self.assertEqual((report["status"], codes(report)), ("pass", []))
        self.assertEqual([(c["index"], c["id"], c["name"], c["arguments"]) for c in report["calls"]],
                         [(0, "call_ab12cd34", "f", "{\"a\":1}"), (1, "call_zz99yy88", "g", "{}")])

    def test_arguments_are_the_compact_object_in_wire_order(self):
        report = judge([line(entry("g", {"z": [1, 2.5, None], "é": {"b": True}})), done()])
        self.assertEqual([c["arguments"] for c in report["calls"]], ['{"z":[1,2.5,null],"é":{"b":true}}'])

    def test_text_turns_are_not_applicable_whatever_the_reason(self):
        for reason in ("stop", "length", "load", None):
            with self.subTest(reason=reason):
                self.assertEqual(judge([line(content="hi"), done(reason=reason)])["status"], "not_applicable")
        self.assertEqual(judge([line(content="hi")])["status"], "not_applicable")

    def test_the_done_reason(self):
        for reason in ("length", "load", "unload", "", None, "STOP"):
            with self.subTest(reason=reason):
                self.assertEqual(positions(judge([line(entry()), done(reason=reason)])),
                                 [("wrong_terminal_reason", 1)])
        self.assertEqual(positions(judge([line(entry()), dict(done(), done_reason=1)])),
                         [("unsupported_event", 1), ("missing_terminal", None)])

    def test_the_end_of_the_turn(self):
        self.assertEqual(positions(judge([line(entry())])), [("missing_terminal", None)])
        self.assertEqual(positions(judge([line(entry()), done(), line(content="x")])),
                         [("delta_after_terminal", 2)])
        self.assertEqual(positions(judge([line(entry()), done(), done()])), [("duplicate_terminal", 2)])

    def test_an_error_line(self):
        report = judge([line(entry()), {"error": "an error was encountered while running the model"}, done()])
        self.assertEqual(positions(report), [("stream_error", 1)])
        self.assertEqual(positions(judge([{"error": {"message": "x"}}])), [("stream_error", 0)])


class CallShapes(unittest.TestCase):
    def blocked(self, chunks, expected):
        report = judge(chunks)
        self.assertEqual((report["status"], code_set(report)), ("blocked", expected), report["findings"])
        return report

    def test_id_and_index_are_optional(self):
        report = judge([line(entry(index=None, call_id=None), entry("g", {}, None, None)), done()])
        self.assertEqual([(c["id"], c["name"]) for c in report["calls"]], [(None, "f"), (None, "g")])
        self.assertEqual(report["status"], "pass")   # an index left out (older servers) is not checked
        self.assertEqual(judge([line(entry(call_id="")), done()])["calls"][0]["id"], None)

    def test_the_index_is_not_counted(self):
        # servers v0.12.6 to v0.17.3 send 0 from their built-in parsers; no reader uses it
        for indices in ((0, 1, 2), (0, 0, 0), (2, 0, 7)):
            with self.subTest(indices=indices):
                report = judge([line(entry(index=indices[0])), line(entry("g", {}, indices[1], "call_2")),
                                done(entry("g", {}, indices[2], "call_3"))])
                self.assertEqual(report["status"], "pass")
                self.assertEqual([c["index"] for c in report["calls"]], [0, 1, 2])
        for index in (True, -1, 1.0, "0"):
            with self.subTest(index=index):
                self.blocked([line(entry(index=index)), done()], {"missing_index"})

    def test_entries_that_are_not_reviewed(self):
        for bad in ("x", [], {}, {"function": "f"}, {"id": 5, "function": {"name": "f", "arguments": {}}},
                    {"function": {"name": 5, "arguments": {}}}, {"type": "function", **entry()},
                    {"id": "call_1", "function": {"name": "f", "arguments": {}, "description": "d"}}):
            with self.subTest(entry=bad):
                self.blocked([line(bad), done()], {"unsupported_event"})

    def test_arguments_must_be_an_object(self):
        for args in ("{\"a\": 1}", None, [], 1):
            with self.subTest(args=args):
                report = self.blocked([line(entry(args=args)) if args is not None else
                                       line({"function": {"name": "g", "arguments": None}}), done()],
                                      {"unsupported_event"})
                self.assertEqual(report["calls"][0]["arguments"], "{}")
        report = self.blocked([line({"function": {"name": "g"}}), done()], {"unsupported_event"})
        self.assertIn("call 0 has no arguments", report["findings"][0]["message"])

    def test_line_shapes(self):
        for chunk in ([], {"model": "m", "message": {}}, {"done": "false", "message": {}},
                      line(done=None)):
            with self.subTest(chunk=chunk):
                self.blocked([chunk, line(entry()), done()], {"unsupported_event"})
        self.blocked([dict(line(), message="x"), line(entry()), done()], {"unsupported_event"})
        self.blocked([dict(line(), message={"role": "assistant", "tool_calls": {"function": {}}}), line(entry()),
                      done()], {"unsupported_event"})
        self.blocked([dict(line(entry()), message={"role": "assistant", "tool_calls": [entry()],
                                                   "tool_call_id": "call_x"}), done()], {"unsupported_event"})

    def test_lines_ollama_python_cannot_read(self):
        for bad in (dict(line(entry()), eval_count=1.5), dict(line(entry()), model=5),
                    dict(line(entry()), message={"role": "assistant", "content": 7, "tool_calls": [entry()]}),
                    dict(line(entry()), message={"content": "", "tool_calls": [entry()]}),
                    {"model": "m", "done": False}, dict(line(), message=None)):
            with self.subTest(line=bad):
                report = self.blocked([bad, done()], {"unsupported_event"})
                self.assertIn("ollama-python cannot read this line", report["findings"][0]["message"])
        report = self.blocked([dict(line(entry()), message={"role": "user", "content": "", "tool_calls": [entry()]}),
                               done()], {"unexpected_event"})
        self.assertEqual(report["calls"], [])
        # members it does not declare are ignored, as it ignores them
        extra = dict(line(entry()), remote_model="gpt-oss:120b", remote_host="https://ollama.com:443", x=[1])
        self.assertEqual(judge([extra, done()])["status"], "pass")

    def test_list_entries_ollama_python_refuses(self):
        for bad in (dict(line(entry()), message={"role": "assistant", "content": "", "images": ["aGk="],
                                                  "tool_calls": [entry()]}),
                    dict(line(entry()), logprobs=[{}]), dict(line(entry()), logprobs=[{"token": "a", "logprob": "x"}]),
                    dict(line(entry()), logprobs=[{"token": "a", "logprob": -1.5, "top_logprobs": [{"token": 1}]}]),
                    dict(line(entry()), logprobs=[{"token": "a", "logprob": -1, "top_logprobs": "x"}])):
            with self.subTest(line=bad):
                self.blocked([bad, done()], {"unsupported_event"})
        real = dict(line(entry()), logprobs=[{"token": "a", "logprob": -0.5, "top_logprobs": [
            {"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -2}]}])
        self.assertEqual(judge([real, done()])["status"], "pass")

    def test_a_number_for_top_logprobs_is_a_finding_not_an_internal_error(self):
        # found by the renovation's review: list(1) raised TypeError in the check, so the CLI said
        # "internal error" and the library's feed() raised
        for top in (1, -1, 1.5, True):
            with self.subTest(top_logprobs=top):
                bad = dict(line(entry()), logprobs=[{"token": "a", "logprob": -1, "top_logprobs": top}])
                report = self.blocked([bad, done()], {"unsupported_event"})
                self.assertIn("top_logprobs is not a list", report["findings"][0]["message"])

    def test_a_nel_anywhere_in_a_line(self):
        for chunk in (line(entry(args={"a": 1, "n\x85": 2})), line(content="a\x85b"),
                      dict(line(entry()), model="m\x85")):
            with self.subTest(chunk=chunk):
                self.blocked([chunk, line(entry("g", {}, 1, "call_2")), done()], {"unexpected_event"})
        # however deep, after however many items (the walk had a bound)
        late = line(entry("g", {"a": [0] * 1_100_000, "b": "x\x85y"}))
        self.blocked([late, done()], {"unexpected_event"})
        # the server escapes U+2028 and U+2029: they reach every reader as one line
        self.assertEqual(judge([line(entry("g", {"a": "\u2028\u2029"})), done()])["status"], "pass")

    def test_arguments_langchain_ollama_would_rewrite(self):
        for args in ({"q": "{\"x\": 1}"}, {"q": " [1, 2]"}, {"q": "{'x': 1}"}, {"q": "['rm', '-rf']"},
                     {"functionName": "g", "q": "x"}):
            with self.subTest(args=args):
                report = self.blocked([line(entry("g", args)), done()], {"unexpected_event"})
                self.assertIn("langchain-ollama", report["findings"][0]["message"])
        # found by review: literal_eval reads more than a string that starts with { or [
        for args in ({"q": "({'a': 1})"}, {"q": "([1, 2])"}, {"q": "\x0c{'a': 1}"}, {"q": "#c\n{'a': 1}"},
                     {"q": "\\\n{'a': 1}"}):
            with self.subTest(args=args):
                self.blocked([line(entry("g", args)), done()], {"unexpected_event"})
        for args in ({"q": "123"}, {"q": "{x}"}, {"q": "[unclosed"}, {"q": "(1, 2)"}, {"q": "{1, 2}"},
                     {"functionName": "f", "q": "x"}, {"q": ["[1]"]}, {"q": "[1, true"}, {"q": "['a' 'b'"},
                     {"q": "[1] + [2]"}, {"q": "[f'x']"}):
            with self.subTest(args=args):
                self.assertEqual(judge([line(entry("g", args)), done()])["status"], "pass")

    def test_identifiers_python_reads_after_nfkc(self):
        # found by review (issue 30): Python normalises an identifier with NFKC, so literal_eval reads
        # a full-width or mathematical "set" as set(); the token check had refused such text, and
        # the turn passed although langchain-ollama runs a list or an object instead of the string
        for value in ("[\uff53\uff45\uff54()]", '{"k": \U0001d600\U0001d5f2\U0001d601()}', "[1, s\uff45t()]"):
            with self.subTest(value=value):
                self.assert_reading(value, "unexpected_event", "replaces by the")
        self.assert_reading("{\uff53\uff45\uff54(): 1}", "unexpected_event", "literal_eval raises TypeError")
        # found by the third review: a number with a point then an exponent or j ("1.e5", "1.j") was no
        # token of the check, so literal_eval never ran on a list LangChain runs
        for value in ("[1.e5]", "[1.j]", "[0.E0]", "[1_0.e1]", "[-1.e1 ]", "[1+2.j]"):
            with self.subTest(value=value):
                self.assert_reading(value, "unexpected_event", "replaces by the")
        self.assert_reading("{1.e5: 1}", "unexpected_event", "replaces by the object")
        # found by the second review: normalising every word, inside strings too, made a full-width
        # quote or backslash in a string look like an ASCII one, and the string look unclosed
        for value in ("['Oslo\uff07', 'Bergen']", "{'a': '\uff07'}", "['x\uff02y']", "[1, '\ufe68']",
                      "['''\uff07''']", "['\uff3c']"):
            with self.subTest(value=value):
                self.assert_reading(value, "unexpected_event", "replaces by the")
        for value in ("[\uff34\uff52\uff55\uff45]", "[\u6ce8\u610f] \u4e2d\u6587", "\uff3b1\uff3d",
                      "[" + "a" * 60000 + " \u00e9"):
            with self.subTest(value=value):
                self.assertEqual(judge([line(entry("g", {"q": value})), done()])["status"], "pass")

    # issue 30: literal_eval ran unbounded (about 500 bytes per character), and any exception it raised,
    # MemoryError included, read as "LangChain keeps the string"
    def assert_reading(self, value, code, fragment=""):
        report = self.blocked([line(entry("g", {"q": value})), done()], {code})
        self.assertIn(fragment, report["findings"][0]["message"])
        return report

    def test_an_exception_of_this_machine_never_passes_a_string_langchain_may_rewrite(self):
        import ast
        real = ast.literal_eval
        for error in (MemoryError, RecursionError):
            def fails(value, error=error):
                raise error()
            ast.literal_eval = fails
            try:
                with self.subTest(error=error):
                    self.assert_reading("{'x': 1}", "limit_exceeded", "literal_eval ran out of")
            finally:
                ast.literal_eval = real
        self.assertIs(ast.literal_eval, real)
        # what langchain-ollama lets through (it catches SyntaxError and ValueError only) fails the turn there
        self.assert_reading("{[1]: 2}", "unexpected_event", "literal_eval raises TypeError")
        self.assert_reading("({}, {[1]: 2})", "unexpected_event", "literal_eval raises TypeError")
        self.assert_reading("[" + "1" * 5000 + "]", "unexpected_event", "json.loads raises ValueError")
        # json.loads past the recursion limit raises there too (with more stack it reads no object)
        self.assert_reading("[" * 5000, "limit_exceeded", "json.loads ran out of stack")

    def test_literal_eval_runs_only_within_its_bounds(self):
        import ast
        calls = []
        real = ast.literal_eval

        def counted(value):
            calls.append(len(value))
            return real(value)
        ast.literal_eval = counted
        try:
            within = "[" + "'a'," * 16_383 + "]"                       # 65,534 characters
            self.assertEqual(len(within), 65_534)
            self.assert_reading(within + " ", "unexpected_event", "replaces by the list")
            self.assertEqual(calls, [65_535])
            calls.clear()
            self.assert_reading(within + "  #", "limit_exceeded", "65537 characters (at most 65536 are read)")
            nested = "[" + "(" * 99 + "1" + ")" * 99 + "]"
            self.assert_reading(nested, "unexpected_event", "replaces by the list")
            self.assert_reading("[" + nested + "]", "limit_exceeded", "brackets nested 101 deep")
            self.assert_reading("['a', " + "1" * 640 + "]", "unexpected_event", "replaces by the list")
            self.assert_reading("['a', " + "1" * 641 + "]", "limit_exceeded", "a run of 641 digits")
            self.assertEqual(calls, [len(nested), 647])
            calls.clear()
            # a 2 MB nested literal: refused by a linear count before anything is parsed
            import tracemalloc
            huge = "[" + ",".join(["[(" * 20 + "'a'" + ")]" * 20] * 23_800) + "]"
            self.assertGreater(len(huge), 1_990_000)
            tracemalloc.start()
            try:
                self.assert_reading(huge, "limit_exceeded", "1999201 characters")
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            self.assertEqual(calls, [])
            self.assertLess(peak, 12 << 20)   # literal_eval took about 1 GB; the input, its text, its check: 9 MB
            # a number json.loads reads whole: past the lowest integer limit an interpreter may have
            self.assert_reading("1" * 641, "limit_exceeded", "a number of more than 640 digits")
            # text that cannot be a Python literal is never parsed, however long
            for text in ("function f(a) { return [a, {b: 1}]; }\n" * 60_000,
                         "[![ci](https://ci.example/badge.svg)](https://ci.example) notes " * 40_000,
                         "[1, true, null], " * 50_000, "x" * 3_000_000 + "[1]"):
                with self.subTest(text=text[:30]):
                    self.assertEqual(judge([line(entry("g", {"q": text})), done()])["status"], "pass")
            self.assertEqual(calls, [])
        finally:
            ast.literal_eval = real

    def test_json_loads_runs_as_few_frames_below_the_normalizer_as_before(self):
        # json.loads of an argument string is bounded by the interpreter's stack alone, so each frame above
        # it lowers how deep a string LangChain would parse may nest before "json.loads ran out of stack":
        # with three helpers more on the way, a string nested 980 lists deep became limit_exceeded
        import sys
        chains = []

        def watch(frame, event, arg):
            if event == "call" and frame.f_code.co_name == "loads" and frame.f_back.f_code.co_name != "loads":
                chain = []
                while frame.f_code.co_name != "_read":   # the generator translate() returns
                    chain.append(frame.f_code.co_name)
                    frame = frame.f_back
                chains.append(chain[::-1])

        sys.setprofile(watch)
        try:
            report = judge([line(entry("g", {"q": "[[1]]"})), done()])
        finally:
            sys.setprofile(None)
        self.assertEqual(codes(report), ["unexpected_event"])
        self.assertEqual(chains, [["_message", "_call", "_langchain_rewrites", "_langchain_reading", "loads"]])

    def test_duplicate_ids_and_missing_names(self):
        self.blocked([line(entry(), entry("g", {}, 1)), done()], {"identity_collision"})
        self.blocked([line(entry(name="")), done()], {"missing_name"})

    def test_a_duplicate_key_in_the_bytes_is_an_invalid_envelope(self):
        text = json.dumps({"profile": "ollama", "tool_schemas": SCHEMAS, "chunks": [line(entry()), done()]})
        text = text.replace('"arguments": {"a": 1}', '"arguments": {"a": 1, "a": 2}')
        self.assertEqual(codes(vts.validate_bytes(text.encode())), ["invalid_fixture"])


class Capture(unittest.TestCase):
    TURN = [line(content="Let me check."), line(entry()), done()]

    def test_an_ndjson_body_becomes_the_envelope(self):
        for end in ("\n", "\r\n"):
            with self.subTest(end=end):
                envelope, warnings = vts.sse_to_envelope(ndjson(self.TURN, end), "ollama", SCHEMAS)
                self.assertEqual(warnings, [])
                self.assertEqual(envelope["meta"]["capture_point"], "JSON Lines")
                self.assertEqual(envelope["chunks"][0]["message"]["content"], "[redacted]")
                self.assertEqual(envelope["chunks"][1:], self.TURN[1:])
                self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")

    def test_framing_ollama_python_reads_otherwise(self):
        body = ndjson(self.TURN)
        for bad, why in ((body.replace(b"\n", b"\n\n", 1), "blank line"),
                         (body.replace(b"\n", b"\n  \n", 1), "blank line"),
                         (body.replace(b"Let me", "Let\u2028me".encode()), "U+2028"),
                         (body.replace(b"Let me", "Let\u0085me".encode()), "U+0085")):
            with self.subTest(why=why), self.assertRaises(vts.CaptureError) as caught:
                vts.sse_to_envelope(bad, "ollama", SCHEMAS)
            self.assertIn(why, str(caught.exception))
        # escaped, as the server writes U+2028, it is one line for every reader
        escaped = body.replace(b"Let me", b"Let\\u2028me")
        self.assertEqual(vts.validate_envelope(vts.sse_to_envelope(escaped, "ollama", SCHEMAS)[0])["status"], "pass")
        self.assertEqual(vts.sse_to_envelope(body.rstrip(b"\n"), "ollama", SCHEMAS)[0]["chunks"][1:], self.TURN[1:])

    def test_a_non_streaming_response_is_one_line(self):
        body = json.dumps(done(entry())).encode()
        envelope, _ = vts.sse_to_envelope(body, "ollama", SCHEMAS)
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")

    def test_redaction_keeps_calls_and_counters(self):
        chunk = dict(done(entry()), message={"role": "assistant", "content": "secret", "thinking": "secret",
                                             "images": ["aGk="], "tool_calls": [entry()]},
                     logprobs=[{"token": "secret"}], total_duration=5)
        envelope, _ = vts.sse_to_envelope(ndjson([chunk]), "ollama", SCHEMAS)
        self.assertEqual(envelope["chunks"][0], dict(chunk, message={
            "role": "assistant", "content": "[redacted]", "thinking": "[redacted]", "images": ["[redacted]"],
            "tool_calls": [entry()]}, logprobs=[{"token": "[redacted]"}]))
        errors, _ = vts.sse_to_envelope(ndjson([line(entry()), {"error": "model text"}]), "ollama", SCHEMAS)
        self.assertEqual(errors["chunks"][1], {"error": "[redacted]"})
        remote, _ = vts.sse_to_envelope(ndjson([dict(done(), remote_host="https://internal:11434", other="x")]),
                                        "ollama", SCHEMAS)
        self.assertEqual((remote["chunks"][0]["remote_host"], remote["chunks"][0]["other"]),
                         ("[redacted]", "[redacted]"))

    def test_other_bodies_are_refused_with_a_pointer(self):
        generate = ndjson([{"model": "m", "created_at": "t", "response": "hi", "done": False}])
        with self.assertRaises(vts.CaptureError) as caught:
            vts.sse_to_envelope(generate, "ollama", SCHEMAS)
        self.assertIn("capture /api/chat with --profile ollama", str(caught.exception))
        with self.assertRaises(vts.CaptureError) as caught:
            vts.sse_to_envelope(ndjson(self.TURN), "openai", SCHEMAS)
        self.assertIn("use --profile ollama", str(caught.exception))

    def test_the_request_body(self):
        body = {"model": "qwen3:8b", "messages": [], "stream": True, "think": False, "tool_choice": "none",
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}
        schemas, request, warnings = vts.request_from_body("ollama", body)
        # the server ignores a tool_choice, so it constrains nothing
        self.assertEqual((schemas, request, warnings), ({"f": {"type": "object"}}, {"tools": ["f"]}, []))
        untyped = {"tools": [{"function": {"name": "f", "parameters": {"type": "object"}}}]}
        self.assertEqual(vts.request_from_body("ollama", untyped)[0], {"f": {"type": "object"}})
        for tool in ({"type": "web_search"}, {"name": "f", "input_schema": {}}, "f"):
            with self.subTest(tool=tool), self.assertRaises(vts.CaptureError):
                vts.request_from_body("ollama", {"tools": [tool]})


    def test_redaction_keeps_the_nel_the_rules_block_on(self):
        # issue 30: redaction turned "a\x85b" into "[redacted]", so the redacted capture passed a turn
        # the body blocks.  Escaped in JSON (the server writes it raw; capture refuses that in NDJSON)
        lines = (line(entry(), content="a\x85b"), dict(line(), message={"role": "assistant", "thinking": "x\x85", "tool_calls": [entry()]}),
                 dict(line(entry()), remote_host="h\x85", logprobs=[{"token": "\x85", "logprob": -1.0}]),
                 dict(line(entry()), extra={"deep": ["t\x85"]}))
        for chunk in lines:
            for body in (ndjson([chunk, done()]), json.dumps([chunk, done()]).encode()):
                with self.subTest(chunk=chunk, body=body[:1]):
                    verdicts = []
                    for redact in (False, True):
                        envelope, _ = vts.sse_to_envelope(body, "ollama", SCHEMAS, redact=redact)
                        report = vts.validate_envelope(envelope)
                        verdicts.append((report["status"], codes(report)))
                    self.assertEqual(verdicts, [("blocked", ["unexpected_event"])] * 2)
        redacted = vts.sse_to_envelope(ndjson([lines[0], done()]), "ollama", SCHEMAS)[0]
        self.assertEqual(redacted["chunks"][0]["message"]["content"], "[redacted]\x85")   # the text itself goes
        # raw in the body: refused with or without redaction
        raw = ndjson([lines[0], done()]).replace(b"\\u0085", "\x85".encode())
        for redact in (False, True):
            with self.assertRaisesRegex(vts.CaptureError, "U\\+0085"):
                vts.sse_to_envelope(raw, "ollama", SCHEMAS, redact=redact)


class Request(unittest.TestCase):
    def test_only_tools(self):
        self.assertEqual(codes(judge([line(entry(), entry("g", {}, 1, "call_2")), done()],
                                     request={"tools": ["f"]})), ["request_violation"])
        for request in ({"tool_choice": "none"}, {"parallel_tool_calls": False}):
            with self.subTest(request=request):
                self.assertEqual(codes(judge([line(entry()), done()], request=request)), ["invalid_fixture"])


class Gate(unittest.TestCase):
    def test_item_by_item_is_the_same_verdict(self):
        chunks = [line(content="x"), line(entry()), done(entry("g", {}, 1, "call_2"))]
        gate = vts.StreamGate("ollama", SCHEMAS)
        for chunk in chunks:
            gate.feed(chunk)
        self.assertEqual(gate.finish()["calls"], judge(chunks)["calls"])


class QuietLines(unittest.TestCase):
    """translate() finds a text line that yields nothing at once (_ollama_quiet_line, by key layout): on every
    line at its edge it yields what the general reading (_read) yields, in a fresh normalizer and after done."""

    def test_the_fast_reading_declines_at_every_edge(self):
        plain = line(content="hi")
        variants = [plain, dict(plain, done=0), dict(plain, done=None), dict(plain, error="x"),
                    dict(plain, model=1), dict(plain, model=True), dict(plain, model=None), dict(plain, eval_count=1.0),
                    dict(plain, eval_count=True), dict(plain, eval_count=1), dict(plain, done_reason=None),
                    dict(plain, logprobs=[]), dict(plain, logprobs={}),
                    dict(plain, logprobs=[{"token": "a", "logprob": -1}]), dict(plain, extra={"k": "\x85"}),
                    dict(plain, message=None), dict(plain, message=[]), dict(plain, content="a\x85b")]
        for message in ({"content": "x"}, {"role": None}, {"role": "user"}, {"role": "assistant", "images": []},
                        {"role": "assistant", "images": ["a"]}, {"role": "assistant", "images": {}},
                        {"role": "assistant", "tool_calls": []}, {"role": "assistant", "tool_calls": {}},
                        {"role": "assistant", "tool_calls": [entry()]}, {"role": "assistant", "tool_name": "f"},
                        {"role": "assistant", "tool_name": 1}, {"role": "assistant", "thinking": 1},
                        {"role": "assistant", "function": {"name": "f"}}, {"role": "assistant", "toolish": None},
                        {"role": "assistant", "n\x85": "x"}, {"role": "assistant", "content": 2}):
            variants.append(dict(plain, message=message))
        for variant in variants:
            for after_done in (False, True):
                with self.subTest(line=variant, after_done=after_done):
                    fast, slow = vts.OllamaNormalizer(), vts.OllamaNormalizer()
                    fast.done = slow.done = after_done
                    for _ in range(2):   # the second time, the layout's verdict is remembered
                        self.assertEqual(list(fast.translate(3, variant)), list(slow._read(3, variant)))
                    self.assertEqual((fast.opened, fast.done, fast.calls), (slow.opened, slow.done, slow.calls))


if __name__ == "__main__":
    unittest.main()
