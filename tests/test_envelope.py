"""The fast paths must never change a verdict.

validate_bytes() reads the stream list a batch at a time while validating
(falling back to the whole-document parse on any surprise), and the gate lets
a normalizer's plain_fragment() hand the commonest fragment straight to the
machine.  Each test here compares those paths with the plain, slow ones on the
same input: every bundled fixture, re-laid-out, and inputs built to land batch
boundaries inside strings, nested values and broken JSON.
"""

import contextlib
import json
import random
import unittest
from unittest import mock

from support import (
    bedrock_call, code_set, envelope, fixture_paths, fixture_report, load_fixture,
    SCHEMAS, vts,
)


def canonical(data: bytes) -> dict:
    """The slow path: validate_bytes with the reader declining, so the whole document is parsed
    first, from the same call depth (Python's parser gives up at a depth that counts frames)."""
    with mock.patch.object(vts, "_stream_envelope", lambda text, limits: None):
        return vts.validate_bytes(data)


def plain_fragment_readers():
    """The normalizer classes of PROFILES that have a plain_fragment() fast path."""
    classes = {type(row.wire.normalizer(vts.Limits())) for row in vts.PROFILES.values()}
    return sorted((cls for cls in classes if hasattr(cls, "plain_fragment")), key=lambda cls: cls.__name__)


def without_plain_fragments(data: bytes) -> dict:
    """validate_bytes with every plain_fragment() fast path answering None."""
    with contextlib.ExitStack() as stack:
        for cls in plain_fragment_readers():
            stack.enter_context(mock.patch.object(cls, "plain_fragment", lambda self, item: None))
        return vts.validate_bytes(data)


def layouts(doc: dict):
    """The same envelope written several ways: compact, pretty, one item per line, keys reordered."""
    yield "compact", json.dumps(doc, separators=(",", ":"))
    yield "indented", json.dumps(doc, indent=2)
    yield "spaced", json.dumps(doc)
    stream_key = "events" if "events" in doc else "chunks"
    if isinstance(doc.get(stream_key), list):
        head = {k: v for k, v in doc.items() if k != stream_key}
        items = ",\n".join(json.dumps(item, separators=(",", ":")) for item in doc[stream_key])
        yield "lines", json.dumps(head)[:-1] + (", " if head else "") + f'"{stream_key}": [\n{items}\n]}}'
    yield "stream-first", json.dumps(dict(reversed(list(doc.items()))))


_CANONICAL = {}


def canonical_of(relpath):
    """canonical() of a bundled fixture as written, once per run."""
    if relpath not in _CANONICAL:
        _CANONICAL[relpath] = canonical(load_fixture(relpath)[0])
    return _CANONICAL[relpath]


class BundledFixtures(unittest.TestCase):
    def test_streamed_equals_whole_document_for_every_fixture_and_layout(self):
        for relpath in fixture_paths():
            data, doc = load_fixture(relpath)
            with self.subTest(fixture=relpath, layout="as written"):
                self.assertEqual(fixture_report(relpath), canonical_of(relpath))
            if not isinstance(doc, dict):
                continue
            for name, text in layouts(doc):
                blob = text.encode("utf-8")
                with self.subTest(fixture=relpath, layout=name):
                    self.assertEqual(vts.validate_bytes(blob), canonical(blob))

    def test_tiny_batches_agree_too(self):
        # Batches of a few characters put a candidate boundary after nearly every item.
        expected = {relpath: canonical_of(relpath) for relpath in fixture_paths()}   # at the usual batch size
        with mock.patch.object(vts, "_BATCH_CHARS", 8):
            for relpath in fixture_paths():
                data, _ = load_fixture(relpath)
                with self.subTest(fixture=relpath):
                    self.assertEqual(vts.validate_bytes(data), expected[relpath])

    def test_plain_fragment_path_changes_nothing(self):
        self.assertEqual([cls.__name__ for cls in plain_fragment_readers()],
                         ["AnthropicNormalizer", "BedrockNormalizer", "ChatNormalizer", "CohereNormalizer",
                          "ResponsesNormalizer"])
        for relpath in fixture_paths():
            data, _ = load_fixture(relpath)
            with self.subTest(fixture=relpath):
                self.assertEqual(fixture_report(relpath), without_plain_fragments(data))


def anthropic_turn(fragments, stop_reason="tool_use", extra_events=()):
    events = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                     "content": [], "stop_reason": None}},
              {"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "toolu_1", "name": "save", "input": {}}}]
    events += [{"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": part}} for part in fragments]
    events += list(extra_events)
    events += [{"type": "content_block_stop", "index": 0},
               {"type": "message_delta", "delta": {"stop_reason": stop_reason}},
               {"type": "message_stop"}]
    return events


SAVE_SCHEMA = {"save": {"type": "object", "properties": {"rows": {"type": "array"}}, "required": ["rows"],
                        "additionalProperties": False}}


def rows_fragments(count):
    """Arguments whose fragments are full of '},{' inside strings: a batch boundary's look-alike."""
    text = json.dumps({"rows": [{"id": k, "note": "a},{b"} for k in range(count)]}, separators=(",", ":"))
    return [text[i:i + 7] for i in range(0, len(text), 7)]


class BatchBoundaries(unittest.TestCase):
    def run_both(self, blob: bytes, batch_chars: int):
        with mock.patch.object(vts, "_BATCH_CHARS", batch_chars):
            streamed = vts.validate_bytes(blob)
        return streamed, canonical(blob)

    def test_look_alike_boundaries_inside_strings(self):
        blob = json.dumps(envelope("anthropic", anthropic_turn(rows_fragments(400)), SAVE_SCHEMA),
                          separators=(",", ":")).encode()
        for batch_chars in (1, 10, 97, 1000, 1 << 15):
            with self.subTest(batch_chars=batch_chars):
                streamed, whole = self.run_both(blob, batch_chars)
                self.assertEqual(streamed["status"], "pass")
                self.assertEqual(streamed, whole)

    def test_batches_are_taken_and_look_alikes_rejected(self):
        # Record what the reader parses: whole batches ("[...]" at 0) and single items.
        text = json.dumps(anthropic_turn(rows_fragments(400)), separators=(",", ":"))
        scan = vts._strict_decoder().scan_once
        calls = []

        def recording_scan(s, pos):
            try:
                result = scan(s, pos)
            except Exception:
                calls.append(("batch" if pos == 0 and s is not text else "item", False))
                raise
            calls.append(("batch" if pos == 0 and s is not text else "item", True))
            return result

        with mock.patch.object(vts, "_BATCH_CHARS", 200):
            reader = vts._ArrayItems(text, 0, recording_scan)
            self.assertEqual(list(reader), json.loads(text))
        self.assertEqual(reader.end, len(text))
        self.assertIn(("batch", True), calls)   # batches were used
        self.assertIn(("batch", False), calls)  # a "},{" inside partial_json was refused as a boundary
        self.assertIn(("item", True), calls)    # and those items were then read one by one

    def test_stream_envelope_takes_the_usual_layout_and_declines_others(self):
        # The usual layout is validated while reading: the stream is not kept.
        doc = envelope("anthropic", anthropic_turn(['{"rows":[]}']), SAVE_SCHEMA)
        report, kept = vts._stream_envelope(json.dumps(doc), vts.Limits())
        self.assertEqual((report["status"], kept["events"]), ("pass", []))
        # A stream before "profile" cannot be fed yet: it is read (and dropped), then fed from where it
        # starts once the envelope's end is reached.
        stream_first = dict(reversed(list(doc.items())))
        report, kept = vts._stream_envelope(json.dumps(stream_first), vts.Limits())
        self.assertEqual((report["status"], kept["events"]), ("pass", []))
        self.assertEqual(report, vts.validate_envelope(doc))
        data = json.dumps(dict(stream_first, request={"tools": []})).encode()
        self.assertEqual(windowed(data), (canonical(data), True))
        # a request after the stream: fed again to a gate made with it
        for request in ({"tools": []}, {"tool_choice": {"type": "tool", "name": "save"}}, {"tools": 3}):
            later = json.dumps(dict(doc, request=request)).encode()
            with self.subTest(request=request):   # (a malformed request is the whole-document parse's to report)
                self.assertEqual(windowed(later), (canonical(later), request != {"tools": 3}))
        # a stream key the profile does not read: the whole-document parse decides
        other = json.dumps(dict(stream_first, chunks=stream_first.pop("events"))).encode()
        self.assertEqual(windowed(other), (canonical(other), False))
        # Broken JSON is left to the whole-document parse and its messages.
        self.assertIsNone(vts._stream_envelope(json.dumps(doc)[:-1], vts.Limits()))

    def test_look_alike_boundaries_inside_nested_values(self):
        # Each chunk carries two tool_calls entries: "},{" between them is nested, not an item boundary.
        chunks = [{"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
        for k in range(300):
            chunks.append({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, **({"id": "call_a", "type": "function"} if k == 0 else {}),
                 "function": {"name": "save", "arguments": '{"rows":[' if k == 0 else ("1," if k < 299 else "1]}")}
                 if k == 0 else {"arguments": "1," if k < 299 else "1]}"}},
                {"index": 1, **({"id": "call_b", "type": "function"} if k == 0 else {}),
                 "function": {"name": "save", "arguments": '{"rows":[' if k == 0 else ("2," if k < 299 else "2]}")}
                 if k == 0 else {"arguments": "2," if k < 299 else "2]}"}}]},
                "finish_reason": None}]})
        chunks.append({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        blob = json.dumps(envelope("openai", chunks, SAVE_SCHEMA), separators=(",", ":")).encode()
        for batch_chars in (1, 50, 5000):
            with self.subTest(batch_chars=batch_chars):
                streamed, whole = self.run_both(blob, batch_chars)
                self.assertEqual(streamed["status"], "pass")
                self.assertEqual([c["arguments"] for c in streamed["calls"]],
                                 ['{"rows":[' + "1," * 298 + "1]}", '{"rows":[' + "2," * 298 + "2]}"])
                self.assertEqual(streamed, whole)

    def test_errors_past_a_batch_boundary_read_as_in_the_whole_document(self):
        good = json.dumps(envelope("anthropic", anthropic_turn(rows_fragments(200)), SAVE_SCHEMA),
                          separators=(",", ":"))
        cut = good.index('"partial_json"', len(good) // 2)
        broken = {
            "duplicate key in a late event": good[:cut] + '"type":"input_json_delta",' + good[cut:],
            "missing comma between late events": good.replace('}},{"type":"content_block_delta"',
                                                              '}}{"type":"content_block_delta"', 1),
            "trailing comma in the stream": good.replace(',{"type":"message_stop"}]', ',{"type":"message_stop"},]'),
            "NaN in a late event": good[:cut] + '"x":NaN,' + good[cut:],
            "data after the envelope": good + " {}",
            "unterminated stream": good[:-2],
            "cut after a comma between items": good[:good.index('{"type":"message_stop"}')],
            "duplicate top-level key": good[:-1] + ',"profile":"anthropic"}',
        }
        chunks = json.dumps(envelope("openai", [{"choices": []}] * 3, SAVE_SCHEMA), separators=(",", ":"))
        broken["cut after a comma between chunks"] = chunks[:chunks.rindex("{")]  # a profile without runs
        for name, text in broken.items():
            blob = text.encode()
            for batch_chars in (1, 300, 1 << 15):
                with self.subTest(case=name, batch_chars=batch_chars):
                    streamed, whole = self.run_both(blob, batch_chars)
                    self.assertEqual(streamed["status"], "blocked")
                    self.assertEqual([f["code"] for f in streamed["findings"]], ["invalid_fixture"])
                    self.assertEqual(streamed, whole)

    def test_stray_brackets_cannot_pair_up_with_the_pad(self):
        # "]],[[" closes the stream list early and reopens it; inside the pad's extra
        # brackets such a batch would parse as another shape and drop the reopened items.
        head = b'{"profile":"openai","tool_schemas":{"w":{}},"chunks":['
        call = InterpreterDepthLimit.CALL + b"}"
        cases = {
            "smallest": (b'{"profile":"openai","tool_schemas":{"w":{}},"chunks":[{}]],[[{},{}]}', 1),
            "would pass": (head + call + b']],[[{"choices":"anything"},{"choices":[]}]}', 1),
            "default batch": (head + call + b',{"choices":[],"pad":"' + b"A" * 32800
                              + b'"}]],[[{"choices":"hidden"},{"choices":[]}]}', 1 << 15),
            "one level": (head + call + b'],[{"choices":"hidden"}]}', 1),
        }
        for name, (blob, batch_chars) in cases.items():
            with self.subTest(case=name):
                streamed, whole = self.run_both(blob, batch_chars)
                self.assertEqual(streamed["status"], "blocked")
                self.assertEqual([f["code"] for f in streamed["findings"]], ["invalid_fixture"])
                self.assertIn("not strict JSON", streamed["findings"][0]["message"])
                self.assertEqual(streamed, whole)

    def test_envelope_problems_found_after_the_stream_still_decide(self):
        events = anthropic_turn(['{"rows":[]}'])
        late = {
            "unknown key after the stream": {"profile": "anthropic", "tool_schemas": SAVE_SCHEMA,
                                             "events": events, "extra": 1},
            "meta that is not an object": {"profile": "anthropic", "tool_schemas": SAVE_SCHEMA,
                                           "events": events, "meta": []},
            "the other stream key too": {"profile": "anthropic", "tool_schemas": SAVE_SCHEMA,
                                         "events": events, "chunks": []},
        }
        for name, doc in late.items():
            blob = json.dumps(doc).encode()
            with self.subTest(case=name):
                streamed = vts.validate_bytes(blob)
                self.assertEqual(streamed["status"], "blocked")
                self.assertEqual([f["code"] for f in streamed["findings"]], ["invalid_fixture"])
                self.assertEqual(streamed["calls"], [])
                self.assertEqual(streamed, canonical(blob))

    def test_meta_after_the_stream_reaches_the_report(self):
        doc = {"profile": "anthropic", "tool_schemas": SAVE_SCHEMA, "events": anthropic_turn(['{"rows":[]}']),
               "meta": {"source": "after the stream"}}
        report = vts.validate_bytes(json.dumps(doc).encode())
        self.assertEqual(report["status"], "pass")
        self.assertEqual(report, canonical(json.dumps(doc).encode()))
        self.assertIn("after the stream", json.dumps(report))


class InterpreterDepthLimit(unittest.TestCase):
    """Python's parser gives up at a depth set by the recursion limit, not by the text.

    Read piece by piece, a value sits shallower than in the whole document; the
    reader pads its pieces so that it never accepts what the whole-document parse
    refuses.  Swept across the interpreter's limit, every place agrees.
    """

    CALL = (b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"w",'
            b'"arguments":"{}"}}]},"finish_reason":"tool_calls"}]')

    def places(self, depth: int):
        deep = b"[" * depth + b"]" * depth
        head = b'{"profile":"openai","tool_schemas":{"w":{}},'
        yield "chunk member", head + b'"chunks":[' + self.CALL + b',"x":' + deep + b"}]}"
        yield "item of its own", head + b'"chunks":[' + self.CALL + b"}," + deep + b"]}"
        yield "between batch boundaries", (head + b'"chunks":[' + self.CALL + b'},{"x":' + deep
                                           + b'},{"choices":[]}]}')
        yield "expect", head + b'"chunks":[],"expect":{"x":' + deep + b"}}"
        yield "meta", head + b'"chunks":[' + self.CALL + b'}],"meta":{"x":' + deep + b"}}"
        yield "schema", (b'{"profile":"openai","tool_schemas":{"w":{"default":' + deep + b'}},"chunks":['
                         + self.CALL + b"}]}")

    def test_verdicts_agree_across_the_interpreter_limit(self):
        import sys
        limit = sys.getrecursionlimit()
        for depth in range(limit - 40, limit + 5):
            for place, blob in self.places(depth):
                for batch_chars in (1 << 15, 1):
                    with self.subTest(place=place, depth=depth, batch_chars=batch_chars):
                        # Both calls from this same frame: near the limit, one more frame
                        # on the stack changes what the whole-document parse accepts.
                        with mock.patch.object(vts, "_stream_envelope", lambda text, limits: None):
                            whole = vts.validate_bytes(blob)
                        with mock.patch.object(vts, "_BATCH_CHARS", batch_chars):
                            streamed = vts.validate_bytes(blob)
                        self.assertEqual(streamed, whole)

    def test_many_brackets_need_not_be_deep(self):
        """An item of many brackets side by side is read without the pad when its value nests shallowly
        (_nests_shallowly); a deep one still is padded: the whole text's report either way."""
        wide = self.CALL + b',"x":[' + b",".join([b'[1],{"a":[]}'] * 40)
        for depth in (0, 57, 58, 59, 60, 61, 62, 300):
            deep = b"," + b"[" * depth + b"]" * depth if depth else b""
            data = b'{"profile":"openai","tool_schemas":{"w":{}},"chunks":[' + wide + deep + b"]}]}"
            with self.subTest(depth=depth), mock.patch.object(vts, "_BATCH_CHARS", 1):
                self.assertEqual(vts.validate_bytes(data), canonical(data))

    def test_a_pass_just_below_the_limit_still_passes(self):
        blob = dict(self.places(200))["chunk member"]
        self.assertEqual(vts.validate_bytes(blob)["status"], "pass")
        self.assertEqual(vts.validate_bytes(blob), canonical(blob))


class ShallowManyBrackets(unittest.TestCase):
    """A value with many brackets but shallow nesting is parsed once (no pad needed), and agrees with the
    whole-document parse; one nested deep enough is still parsed inside the pad."""

    def test_nests_shallowly_at_its_bounds(self):
        def nested(depth):
            value = 0
            for _ in range(depth):
                value = [value]
            return value
        wide = 1 << 30
        self.assertTrue(vts._nests_shallowly(nested(vts._SHALLOW_BRACKETS - 1), wide))
        self.assertFalse(vts._nests_shallowly(nested(vts._SHALLOW_BRACKETS), wide))
        self.assertTrue(vts._nests_shallowly({"a": [{"b": "[[[["}] * 100}, wide))
        self.assertTrue(vts._nests_shallowly("[[[[", 6))
        self.assertFalse(vts._nests_shallowly([[0]] * (vts._DEPTH_WALK + 1), wide))   # (too many to look at)
        self.assertFalse(vts._nests_shallowly([[0]] * 100, 100 * vts._DEPTH_WALK_CHARS))   # (more than its text pays)
        self.assertTrue(vts._nests_shallowly([[0]] * 100, 300 * vts._DEPTH_WALK_CHARS))

    def test_reports_agree_with_the_whole_document(self):
        call = InterpreterDepthLimit.CALL
        head = b'{"profile":"openai","tool_schemas":{"w":{}},"chunks":['
        for depth in (2, 62, 63, 64, 65, 200):
            deep = b"[" * depth + b"]" * depth
            for member in (b"[" + b",".join([deep] * 80) + b"]", b'{"s":"' + b"[{" * 100 + b'","d":' + deep + b"}"):
                for blob in (head + call + b',"x":' + member + b"}]}", head + call + b"}," + member + b"]}"):
                    with self.subTest(depth=depth, blob=blob[:80]):
                        self.assertEqual(vts.validate_bytes(blob), canonical(blob))

    def test_a_large_value_is_walked_before_its_brackets_are_counted(self):
        """From _WALK_FIRST_CHARS on, the walk goes first (and the count only where it fails): the same
        items padded, the whole document's report, at the bound and either side of it."""
        call = InterpreterDepthLimit.CALL
        head = b'{"profile":"openai","tool_schemas":{"w":{}},"chunks":['
        for depth in (2, 63, 64, 200):
            deep = b"[" * depth + b"]" * depth
            for member in (b"[" + b",".join([deep] * 80) + b"]", b'{"s":"' + b"[{" * 100 + b'","d":' + deep + b"}",
                           b'{"s":"' + b"x" * 300 + b'"}'):
                blob = head + call + b',"x":' + member + b"}]}"
                item = len(call) + len(member) + 6
                for bound in (64, item - 1, item, item + 1):
                    with self.subTest(depth=depth, blob=member[:40], bound=bound - item), \
                            mock.patch.object(vts, "_WALK_FIRST_CHARS", bound):
                        self.assertEqual(vts.validate_bytes(blob), canonical(blob))


class ObjectEndInBytes(unittest.TestCase):
    def test_object_end_is_the_expressions_search(self):
        """_object_end tries "}" one by one, a few, then searches: where the expression's search finds it."""
        for data in (b"", b"}", b"},", b"} ]", b"}}}}]", b"x}\n\t,", b"} x } ,", b"}" * 200 + b",", b"} " * 100 + b"]",
                     b"}" * 70, b"} a" * 63 + b"},", b"} a" * 64 + b"},", b"} a" * 65 + b"},"):
            for start in (0, 1, 5):
                with self.subTest(data=data[:20], size=len(data), start=start):
                    want = vts._OBJECT_END_BYTES.search(data, start)
                    got = vts._object_end(data, start)
                    self.assertEqual(None if got is None else got.span(), None if want is None else want.span())


class GeminiRunsLookForTheirMember(unittest.TestCase):
    """An event whose shape's member is not within _RUN_LAYOUT_CHARS of its start (or is spelled with escapes)
    is not parsed to learn a layout; the report is the general path's."""

    def blob(self, first_extra, key):
        chunk = '{"candidates":[{"content":{"role":"model","parts":[{"%s":"some text "}]}}]}' % key
        first = chunk.replace('{"candidates"', '{%s"candidates"' % first_extra, 1)
        last = '{"candidates":[{"content":{"role":"model","parts":[{"text":"."}]},"finishReason":"STOP"}]}'
        return ('{"profile":"gemini","tool_schemas":{},"chunks":[' + ",".join([first] + [chunk] * 3000 + [last])
                + "]}").encode()

    def test_far_or_escaped_members(self):
        for extra, key in (("", "text"), ('"pad":"%s",' % ("x" * 5000), "text"), ("", "te\\u0078t"),
                           ('"pad":"%s",' % ("x" * 5000), "te\\u0078t")):
            blob = self.blob(extra, key)
            with self.subTest(extra=extra[:10], key=key):
                self.assertEqual(vts.validate_bytes(blob), vts.validate_envelope(json.loads(blob)))
                self.assertEqual(vts.validate_bytes(blob), without_runs(blob))


class PlainFragments(unittest.TestCase):
    """plain_fragment() answers only for a started tool_use block; the machine decides the rest."""

    def test_answers_for_the_plain_delta_only(self):
        normalizer = vts.AnthropicNormalizer()
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "input_json_delta", "partial_json": "{"}}
        self.assertIsNone(normalizer.plain_fragment(delta))  # no message_start yet
        list(normalizer.translate(0, anthropic_turn([])[0]))
        list(normalizer.translate(1, anthropic_turn([])[1]))
        self.assertEqual(normalizer.plain_fragment(delta), ((None, 0), "{"))
        for other in ({**delta, "index": True}, {**delta, "index": 1}, {**delta, "delta": {"type": "text_delta"}},
                      {**delta, "delta": {"type": "input_json_delta", "partial_json": 5}}, [delta], None,
                      {**delta, "type": "content_block_stop"}):
            with self.subTest(event=other):
                self.assertIsNone(normalizer.plain_fragment(other))

    def test_a_fragment_after_the_block_stopped_is_still_refused(self):
        events = anthropic_turn(['{"rows":[]}'])
        late = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": " "}}
        events.insert(-2, late)  # after content_block_stop, before message_delta
        report = vts.validate_envelope(envelope("anthropic", events, SAVE_SCHEMA))
        self.assertEqual(report["status"], "blocked")
        self.assertEqual([f["code"] for f in report["findings"]], ["delta_after_terminal"])

    def test_feed_one_by_one_equals_feed_all(self):
        events = anthropic_turn(rows_fragments(20))
        one = vts.StreamGate("anthropic", SAVE_SCHEMA)
        for event in events:
            one.feed(event)
        many = vts.StreamGate("anthropic", SAVE_SCHEMA)
        many.feed_all(events)
        self.assertEqual(one.finish(), many.finish())
        self.assertEqual(one.finish()["status"], "pass")


def chat_chunk(entries=None, finish=None, choice=0, **members):
    delta = {} if entries is None else {"tool_calls": entries}
    return {"object": "chat.completion.chunk", **members,
            "choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}


def chat_piece(text, index=0, **members):
    return {"index": index, "function": {"arguments": text}, **members}


CHAT_OPENING = chat_chunk([{"index": 0, "id": "call_1", "type": "function",
                            "function": {"name": "save", "arguments": ""}}])


class ChatPlainFragments(unittest.TestCase):
    """The chat normalizer's plain_fragment() answers only for a chunk whose one effect is text for a
    call already begun; on any other chunk the general path decides, and the verdict is the same."""

    def test_answers_for_the_plain_chunk_only(self):
        normalizer = vts.ChatNormalizer(mistral=False)
        plain = chat_chunk([chat_piece("{")])
        self.assertIsNone(normalizer.plain_fragment(plain))       # no call begun yet
        list(normalizer.translate(0, CHAT_OPENING))
        self.assertEqual(normalizer.plain_fragment(plain), ((0, 0), "{", "function"))
        self.assertEqual(normalizer.plain_fragment(chat_chunk([chat_piece("{", id="", type="function")])),
                         ((0, 0), "{", "function"))
        untyped = {key: value for key, value in plain.items() if key != "object"}
        piece = plain["choices"][0]["delta"]["tool_calls"][0]
        for name, other in {
                "an id": chat_chunk([chat_piece("{", id="call_2")]),
                "a name": chat_chunk([{"index": 0, "function": {"name": "save", "arguments": "{"}}]),
                "two entries": chat_chunk([chat_piece("{"), chat_piece("}")]),
                "two choices": {**plain, "choices": plain["choices"] * 2},
                "a finish": chat_chunk([chat_piece("{")], "tool_calls"),
                "a custom type": chat_chunk([chat_piece("{", type="custom")]),
                "a custom member": chat_chunk([chat_piece("{", custom={"input": "x"})]),
                "a message": {**plain, "choices": [{**plain["choices"][0], "message": {}}]},
                "index true": chat_chunk([chat_piece("{", index=True)]),
                "a slot not begun": chat_chunk([chat_piece("{", index=1)]),
                "choice index -1": chat_chunk([chat_piece("{")], choice=-1),
                "a legacy call too": {**plain, "choices": [{**plain["choices"][0],
                                                            "delta": {"tool_calls": [piece], "function_call": {}}}]},
                "arguments not text": chat_chunk([chat_piece(5)]),
                "an error member": {**plain, "error": {}},
                "no object after a typed chunk": untyped,
                "another object": {**plain, "object": "chat.completion"},
                "a list": [plain], "nothing": None}.items():
            with self.subTest(chunk=name):
                self.assertIsNone(normalizer.plain_fragment(other))

    def streams(self):
        """Chat streams whose plain-looking chunks land in every state the normalizer keeps."""
        opening, piece, end = CHAT_OPENING, chat_chunk([chat_piece('"')]), chat_chunk(None, "tool_calls")
        untyped = [{key: value for key, value in chunk.items() if key != "object"} for chunk in (opening, piece, end)]
        whole = chat_chunk([{"id": "call_9", "function": {"name": "save", "arguments": "{}"}}])
        yield "openai", "plain", [opening, chat_chunk([chat_piece("{}")]), end]
        yield "openai", "before the call begins", [piece, opening, chat_chunk([chat_piece("{}")]), end]
        yield "openai", "untyped throughout", [untyped[0], *[untyped[1]] * 3, untyped[2]]
        yield "openai", "untyped, then typed", [untyped[0], untyped[1], piece, end]
        yield "openai", "typed, then untyped", [opening, piece, untyped[1], end]
        yield "openai", "after the finish", [opening, chat_chunk([chat_piece("{}")]), end, piece]
        yield "openai", "in a second choice", [opening, chat_chunk([chat_piece("{}")], choice=1), end]
        yield "openai", "an empty id", [opening, chat_chunk([chat_piece("{}", id="")]), end]
        yield "mistral", "after a whole call", [whole, chat_chunk([chat_piece("{}")]), end]
        yield "mistral", "plain", [opening, chat_chunk([chat_piece("{}")]), end]

    def test_the_verdict_is_the_same_without_it(self):
        calls = []
        real = vts.ChatNormalizer.plain_fragment

        def spy(self, chunk):
            hit = real(self, chunk)
            calls.append(hit is not None)
            return hit

        for profile, name, chunks in self.streams():
            doc = envelope(profile, chunks, SAVE_SCHEMA)
            with self.subTest(profile=profile, stream=name):
                with mock.patch.object(vts.ChatNormalizer, "plain_fragment", lambda self, chunk: None):
                    slow = vts.validate_envelope(json.loads(json.dumps(doc)))
                with mock.patch.object(vts.ChatNormalizer, "plain_fragment", spy):
                    self.assertEqual(vts.validate_envelope(doc), slow)
        self.assertTrue(any(calls) and not all(calls), "the streams took the fast path somewhere, not everywhere")


def without_runs(data: bytes, limits=None) -> dict:
    """validate_bytes with the reader of runs declining everywhere."""
    with mock.patch.object(vts._RunReader, "list_run", lambda self, text, pos: None):
        return vts.validate_bytes(data, limits)


def with_runs_counted(data: bytes, limits=None) -> tuple[dict, list[int]]:
    """validate_bytes, and the number of events in each run the reader recognised."""
    taken = []
    real = vts._RunReader.list_run

    def spy(self, text, pos):
        hit = real(self, text, pos)
        if hit is not None:
            assert hit[2] == len(hit[0].pieces), "the count a run reports is its number of events"
            taken.append(hit[2])
        return hit

    with mock.patch.object(vts._RunReader, "list_run", spy):
        return vts.validate_bytes(data, limits), taken


def compact(events, schemas=None, separator=","):
    head = json.dumps({"profile": "anthropic", "tool_schemas": schemas or SAVE_SCHEMA}, separators=(",", ":"))
    items = separator.join(json.dumps(event, separators=(",", ":")) for event in events)
    return (head[:-1] + ',"events":[' + items + "]}").encode()


def delta(index, text):
    return {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": text}}


class RunsAgree:
    """Runs looked for in any stream, however short (_RUNS_MIN_CHARS is 0); agree(): the report with runs
    (and how many items each took) equals the report without runs and that of the whole-document parse."""

    def setUp(self):
        patcher = mock.patch.object(vts, "_RUNS_MIN_CHARS", 0)
        patcher.start()
        self.addCleanup(patcher.stop)

    def agree(self, blob: bytes, limits=None) -> tuple[dict, list[int]]:
        report, taken = with_runs_counted(blob, limits)
        self.assertEqual(report, without_runs(blob, limits))
        with mock.patch.object(vts, "_stream_envelope", lambda text, limits: None):
            self.assertEqual(report, vts.validate_bytes(blob, limits))
        return report, taken


class FragmentRuns(RunsAgree, unittest.TestCase):
    """A run of input_json_delta events is read at once: the verdict is that of the parser's path.

    Runs are looked for in any stream here, however short (_RUNS_MIN_CHARS is 0).
    """

    def test_a_long_stream_is_read_in_runs_and_passes_byte_for_byte(self):
        fragments = rows_fragments(3000)
        with mock.patch.object(vts, "_WINDOW_BYTES", 1 << 22):   # one window: runs are cut by nothing else
            report, taken = self.agree(compact(anthropic_turn(fragments)))
        self.assertEqual(report["status"], "pass")
        self.assertEqual(report["calls"][0]["arguments"], "".join(fragments))
        self.assertGreater(sum(taken), len(fragments) - 40)  # all but a few (before the first run, after each cap)
        self.assertEqual(max(taken), vts._RUN_ITEMS)         # a run stops at _RUN_ITEMS events
        self.assertGreater(len(fragments), 2 * vts._RUN_ITEMS)

    def test_every_string_escape_and_split_surrogate_pairs(self):
        value = 'é \"}},{\"type\":\"content_block_delta\" \\ / \b\f\n\r\t \u2028 \U0001f600 \x7f'
        text = json.dumps({"rows": [value, "}},{"]}, ensure_ascii=True)
        escapes = compact(anthropic_turn([text[i:i + 3] for i in range(0, len(text), 3)]))
        # Half of a surrogate pair at the end of one piece, the other half at the start of the next.
        halves = compact(anthropic_turn(['{"rows":["\ud83d', '\ude00"]}']))
        self.assertIn(rb'"partial_json":"{\"rows\":[\"\ud83d"}}', halves)
        for name, data, rows in (("escapes", escapes, [value, "}},{"]), ("surrogate halves", halves, ["\U0001f600"])):
            with self.subTest(case=name):
                report, taken = self.agree(data)
                self.assertEqual(report["status"], "pass")
                self.assertEqual(json.loads(report["calls"][0]["arguments"]), {"rows": rows})
                self.assertTrue(taken)

    def test_text_that_is_not_strict_json_is_the_parser_s_verdict(self):
        good = compact(anthropic_turn(rows_fragments(50))).decode()
        first = good.index('"partial_json":"', good.index("content_block_delta")) + len('"partial_json":"')
        broken = {
            "raw control character": good[:first] + "\x01" + good[first:],
            "unknown escape": good[:first] + "\\x41" + good[first:],
            "short unicode escape": good[:first] + "\\u12" + good[first:],
            "string left open by a backslash": good.replace('"}},{"type":"content_block_stop"', '\\"}},{"type":'
                                                            '"content_block_stop"', 1),
            "index with a leading zero": good.replace('"index":0,"delta"', '"index":00,"delta"'),
            "missing comma between deltas": good.replace('"}},{"type":"content_block_delta"',
                                                         '"}}{"type":"content_block_delta"', 1),
            "trailing comma after the last item": good.replace('{"type":"message_stop"}]', '{"type":"message_stop"},]'),
        }
        for name, text in broken.items():
            with self.subTest(case=name):
                report, _ = self.agree(text.encode())
                self.assertEqual(report["status"], "blocked")
                self.assertEqual([f["code"] for f in report["findings"]], ["invalid_fixture"])

    def test_valid_look_alikes_are_read_in_their_own_layout_and_agree(self):
        fragments = rows_fragments(300)
        events = anthropic_turn(fragments)
        reordered = [{"index": e["index"], "type": e["type"], "delta": e["delta"]} if e["type"] == "content_block_delta"
                     else e for e in events]
        extra = [{**e, "delta": {**e["delta"], "note": 1}} if e["type"] == "content_block_delta" else e for e in events]
        cases = {"members reordered": compact(reordered), "a member beside partial_json": compact(extra)}
        for name, blob in cases.items():
            with self.subTest(case=name):
                report, taken = self.agree(blob)
                self.assertEqual(report["status"], "pass")
                self.assertEqual(report["calls"][0]["arguments"], "".join(fragments))
                self.assertGreater(sum(taken), len(fragments) - 40)   # (the layout is learned from the first)

    def test_any_json_whitespace_between_tokens(self):
        fragments = rows_fragments(300)
        doc = envelope("anthropic", anthropic_turn(fragments), SAVE_SCHEMA)
        for name, text in (("indented, as capture writes it", json.dumps(doc, indent=2)),
                           ("spaced", json.dumps(doc)), ("tabs and CRLF", json.dumps(doc, indent="\t").replace("\n", "\r\n"))):
            with self.subTest(layout=name):
                report, taken = self.agree(text.encode())
                self.assertEqual(report["status"], "pass")
                self.assertEqual(report["calls"][0]["arguments"], "".join(fragments))
                self.assertGreater(sum(taken), len(fragments) - 20)

    def test_a_run_is_one_layout(self):
        # Blocks written in turn in other layouts, then events that change layout one by one.
        events, fragments = anthropic_turn([])[:1], rows_fragments(30)
        for index in range(8):
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": f"toolu_{index}", "name": "save", "input": {}}})
            events += [delta(index, text) for text in fragments] + [{"type": "content_block_stop", "index": index}]
        events += anthropic_turn([])[-2:]

        def written(spaces):
            items = []
            for k, event in enumerate(events):
                item = json.dumps(event, separators=(",", ":"))
                if event["type"] == "content_block_delta":
                    item = item.replace('"delta":', '"delta":' + " " * spaces(k, event["index"]))
                items.append(item)
            head = json.dumps({"profile": "anthropic", "tool_schemas": SAVE_SCHEMA}, separators=(",", ":"))
            return (head[:-1] + ',"events":[' + ",".join(items) + "]}").encode()

        for name, spaces, runs in (("by block", lambda k, index: 100 * index, 8),
                                   ("by event", lambda k, index: k % 3, None)):
            with self.subTest(layout=name):
                report, taken = self.agree(written(spaces))
                self.assertEqual(report["status"], "pass")
                self.assertEqual([c["arguments"] for c in report["calls"]], ["".join(fragments)] * 8)
                if runs is not None:  # (the first few deltas of a block may go in a batch)
                    self.assertEqual(len(taken), runs)
                    self.assertGreater(sum(taken), runs * (len(fragments) - 10))
                else:   # (a run of one event is read as one item)
                    self.assertEqual(taken, [])

    def test_only_a_long_stream_is_looked_at(self):
        with mock.patch.object(vts, "_RUNS_MIN_CHARS", 1 << 15):
            short = compact(anthropic_turn(rows_fragments(10)))
            long = compact(anthropic_turn(rows_fragments(400)))
            self.assertLess(len(short), 1 << 15)
            self.assertEqual(with_runs_counted(short)[1], [])
            self.assertTrue(with_runs_counted(long)[1])

    def test_separators_between_items(self):
        fragments = rows_fragments(300)
        for separator in (",\n", "\n,", ", ", "\r\n,\t", " , "):
            with self.subTest(separator=separator):
                report, taken = self.agree(compact(anthropic_turn(fragments), separator=separator))
                self.assertEqual(report["status"], "pass")
                self.assertEqual(report["calls"][0]["arguments"], "".join(fragments))
                self.assertTrue(taken)

    def test_runs_the_machine_refuses_go_item_by_item(self):
        fragments = rows_fragments(100)
        after_stop = anthropic_turn(fragments)
        stop = after_stop.index({"type": "content_block_stop", "index": 0})
        after_stop[stop + 1:stop + 1] = [delta(0, " ")] * 300   # a run after the block's stop
        after_reason = anthropic_turn(fragments)
        after_reason[-3:-3] = [{"type": "message_delta", "delta": {"stop_reason": "tool_use"}}] + [delta(0, " ")] * 300
        del after_reason[-2]  # the turn's stop_reason came early, deltas of the open block follow it
        cases = {
            "deltas after the block stopped": (after_stop, ["delta_after_terminal"] * 300),
            "deltas after the turn's stop_reason": (after_reason,  # then its content_block_stop is late too
                                                    ["delta_after_terminal"] * 301 + ["missing_terminal"]),
            "the stream cut after the deltas": (anthropic_turn(fragments)[:-3], ["missing_terminal"] * 3),
        }
        for name, (events, codes) in cases.items():
            with self.subTest(case=name):
                report, taken = self.agree(compact(events))
                self.assertEqual(report["status"], "blocked")
                self.assertEqual([f["code"] for f in report["findings"]], codes)
                self.assertTrue(taken)
        # Saturated before a run: its events are counted one by one, never examined.
        early = anthropic_turn(fragments)
        early[2:2] = [{"type": "no_such_event"}] * 5
        report, taken = self.agree(compact(early), vts.Limits(max_findings=1))
        self.assertEqual([f["code"] for f in report["findings"]],
                         ["unsupported_event", "missing_terminal", "limit_exceeded"])
        self.assertIn("stream items were not examined", report["findings"][-1]["message"])
        self.assertTrue(taken)
        # Saturated in the middle of a run: the rest of it is counted, never examined.
        report, taken = self.agree(compact(after_stop), vts.Limits(max_findings=5))
        self.assertEqual(report["status"], "blocked")
        # (the turn's own terminals were never examined, so the stream reads as cut short)
        self.assertEqual([f["code"] for f in report["findings"]],
                         ["delta_after_terminal"] * 5 + ["missing_terminal", "limit_exceeded"])
        self.assertTrue(taken)

    def test_blocks_the_reader_does_not_answer_for(self):
        fragments = rows_fragments(100)
        text_block = anthropic_turn(fragments)
        text_block[2:2] = [{"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}]
        text_block[3:3] = [delta(1, "x")] * 50
        unstarted = anthropic_turn(fragments)
        unstarted[2:2] = [delta(7, "x")] * 50
        before_start = anthropic_turn(fragments)
        before_start[0:0] = [delta(0, "x")] * 50
        huge_index = anthropic_turn(fragments)
        huge_index[2:2] = [delta(10 ** 19, "x")] * 50
        cases = {"input_json_delta on a text block": (text_block, "unexpected_event"),
                 "a block never started": (unstarted, "missing_slot"),
                 "before message_start": (before_start, "unexpected_event"),
                 "an index past 18 digits": (huge_index, "missing_slot")}
        for name, (events, code) in cases.items():
            with self.subTest(case=name):
                report, _ = self.agree(compact(events))
                self.assertEqual(report["status"], "blocked")
                self.assertIn(code, {f["code"] for f in report["findings"]})

    def test_interleaved_blocks_are_one_run(self):
        # Deltas of 16 blocks in turn: the index is one of the shape's numbers, so they make long runs.
        events = anthropic_turn([])[:1]
        blocks = 16
        schemas = {"save": {"type": "object"}}
        for index in range(blocks):
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": f"toolu_{index}", "name": "save", "input": {}}})
        for k in range(400):
            for index in range(blocks):
                events.append(delta(index, '{"a":[' if k == 0 else ("1," if k < 399 else "1]}")))
        events += [{"type": "content_block_stop", "index": index} for index in range(blocks)]
        events += anthropic_turn([])[-2:]
        blob = compact(events, schemas)
        report, taken = self.agree(blob, None)
        self.assertEqual(report["status"], "pass")
        self.assertEqual(len(report["calls"]), blocks)
        # runs span the blocks (validate_bytes cuts them only at its window's end)
        self.assertGreater(max(taken), 8 * blocks)
        self.assertGreater(sum(taken), 400 * blocks - 40)

    def test_several_blocks_in_sequence(self):
        fragments = rows_fragments(300)
        first, second = anthropic_turn(fragments), anthropic_turn(fragments)
        for event in second[1:-2]:
            if "index" in event:
                event["index"] = 1
        second[1]["content_block"]["id"] = "toolu_2"
        events = first[:-2] + second[1:]
        report, taken = self.agree(compact(events))
        self.assertEqual(report["status"], "pass")
        self.assertEqual([c["arguments"] for c in report["calls"]], ["".join(fragments)] * 2)
        self.assertGreaterEqual(len(taken), 2)

    def test_empty_pieces_add_nothing(self):
        report, taken = self.agree(compact(anthropic_turn([""] * 100 + ['{"rows":[]}'] + [""] * 100)))
        self.assertEqual(report["status"], "pass")
        self.assertEqual(report["calls"][0]["arguments"], '{"rows":[]}')
        self.assertTrue(taken)
        # Empty pieces after a start that holds the input: still no fragment beside it.
        events = anthropic_turn([""] * 100)
        events[1]["content_block"]["input"] = {"rows": []}
        report, taken = self.agree(compact(events))
        self.assertEqual((report["status"], report["calls"][0]["arguments"]), ("pass", '{"rows":[]}'))
        self.assertTrue(taken)
        # Only empty pieces: the call has no arguments at all, as with no delta.
        report, taken = self.agree(compact(anthropic_turn([""] * 200)))
        none = vts.validate_bytes(compact(anthropic_turn([])))
        self.assertEqual([c["arguments"] for c in report["calls"]], ["{}"])
        self.assertEqual([c["arguments"] for c in none["calls"]], ["{}"])
        self.assertEqual([f["code"] for f in report["findings"]], [f["code"] for f in none["findings"]])
        self.assertTrue(taken)

# ---------------------------------------------------------------------------------------------------
# Envelope loading for the event profiles (was test_profiles.py).
# ---------------------------------------------------------------------------------------------------


class Envelope(unittest.TestCase):
    def test_the_other_stream_key_is_invalid_on_every_profile(self):
        for profile, row in vts.PROFILES.items():
            other = {"chunks": "events", "events": "chunks"}[row.stream_key]
            with self.subTest(profile=profile):
                report = vts.validate_envelope({"profile": profile, "tool_schemas": {}, other: []})
                self.assertEqual(code_set(report), {"invalid_fixture"})

    def test_events_must_be_a_list(self):
        report = vts.validate_envelope({"profile": "bedrock", "tool_schemas": {}, "events": {}})
        self.assertEqual(code_set(report), {"invalid_fixture"})

    def test_empty_streams_are_not_applicable(self):
        for profile, row in vts.PROFILES.items():
            with self.subTest(profile=profile):
                report = vts.validate_envelope({"profile": profile, "tool_schemas": {}, row.stream_key: []})
                self.assertEqual(report["status"], "not_applicable")

    def test_stream_gate_library_api(self):
        gate = vts.StreamGate("bedrock", SCHEMAS)
        for event in bedrock_call():
            gate.feed(event)
        self.assertEqual(gate.finish()["status"], "pass")


class ServeBlock(unittest.TestCase):
    """The envelope's "serve" block (the transport fault `serve` plays): refused when unknown or malformed,
    never a change of the stream's verdict."""

    def problems(self, block, profile="openai", stream=()):
        doc = {"profile": profile, "tool_schemas": {}, vts.PROFILES[profile].stream_key: list(stream), "serve": block}
        return [(f.code, f.message) for f in vts.check_envelope(doc)]

    def test_every_rooms_errors_and_a_cut_are_valid_and_change_no_verdict(self):
        for name, row in vts.PROFILES.items():
            doc = {"profile": name, "tool_schemas": {}, row.stream_key: []}
            plain = vts.validate_envelope(doc)
            for error in row.http.errors:
                for block in ({"error": {"status": error.status, "kind": error.kind}},
                              {"error": {"status": error.status, "kind": error.kind}, "times": 3, "cut": True}):
                    with self.subTest(profile=name, block=block):
                        self.assertEqual(vts.check_envelope(dict(doc, serve=block)), [])
                        self.assertEqual(vts.validate_envelope(dict(doc, serve=block)), plain)
            self.assertEqual(vts.check_envelope(dict(doc, serve={"cut": True})), [])

    def test_malformed_blocks_are_invalid_with_a_clear_message(self):
        invalid = "invalid_fixture"
        cases = [
            ([1], [(invalid, '"serve" must be an object, got a list')]),
            ({}, [(invalid, '"serve": names no fault (members: cut, error, times)')]),
            ({"cut_after": 2}, [(invalid, '"serve": unknown member "cut_after" (members: cut, error, times)')]),
            ({"cut": False}, [(invalid, '"serve": "cut" must be true, got false')]),
            ({"times": 1}, [(invalid, '"serve": "times" counts the requests answered with "error", and there is '
                                      'none')]),
            ({"error": {"status": 429, "kind": "rate_limit"}, "times": 0},
             [(invalid, '"serve": "times" must be an integer of at least 1, got 0')]),
            ({"error": {"status": 429, "kind": "rate_limit"}, "times": True},
             [(invalid, '"serve": "times" must be an integer of at least 1, got true')]),
            ({"error": {"status": 429}}, [(invalid, '"serve": "error" must be an object with exactly "status" and '
                                                    '"kind", got an object')]),
            ({"error": {"status": 429, "kind": "quota"}},
             [(invalid, '"serve": "error" kind "quota" is not one profile openai answers (kinds: '
                        'rate_limit, server_error, overloaded)')]),
            ({"error": {"status": 429, "kind": "no such kind, with a secret sk-0123"}},
             [(invalid, '"serve": "error" kind an unrecognised string is not one profile openai answers (kinds: '
                        'rate_limit, server_error, overloaded)')]),
            ({"error": {"status": 529, "kind": "overloaded"}},
             [(invalid, '"serve": "error" kind "overloaded" is answered with status 503 on profile openai, not 529')]),
            ({"error": {"status": 429.0, "kind": "rate_limit"}},
             [(invalid, '"serve": "error" kind "rate_limit" is answered with status 429 on profile openai, not '
                        '429.0')]),
        ]
        for block, want in cases:
            with self.subTest(block=block):
                self.assertEqual(self.problems(block), want)

    def test_an_error_on_every_request_needs_an_empty_stream(self):
        chunk = {"object": "chat.completion.chunk", "choices": []}
        want = [("invalid_fixture", '"serve": an error on every request serves no stream, so the stream must be '
                                    'empty (give "times" for the requests answered with it before the stream)')]
        block = {"error": {"status": 503, "kind": "overloaded"}}
        self.assertEqual(self.problems(block, stream=[chunk]), want)
        self.assertEqual(self.problems(dict(block, times=1), stream=[chunk]), [])
        self.assertEqual(self.problems(dict(block, cut=True)),
                         [("invalid_fixture", '"serve": "cut" cuts a stream, and an error on every request serves '
                                              'none')])
        # read a batch at a time while validating (the streamed path), the stream is seen all the same
        data = json.dumps(envelope("openai", [chunk] * 3, serve=block)).encode()
        self.assertEqual([f["message"] for f in vts.validate_bytes(data)["findings"]], [want[0][1]])
        self.assertEqual([f["message"] for f in canonical(data)["findings"]], [want[0][1]])

    def test_a_kind_the_room_does_not_answer(self):
        self.assertEqual(self.problems({"error": {"status": 429, "kind": "overloaded"}}, profile="cohere"),
                         [("invalid_fixture", '"serve": "error" kind "overloaded" is not one profile cohere answers '
                                              '(kinds: rate_limit)')])


def anthropic_text_turn(texts, fragments=("{}",)):
    """A text block of these text_delta events, then a tool_use block of these fragments (blocks 0 and 1)."""
    events = anthropic_turn(fragments)
    for event in events[1:-2]:
        if "index" in event:
            event["index"] = 1
    text = [{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]
    text += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in texts]
    return events[:1] + text + [{"type": "content_block_stop", "index": 0}] + events[1:]


def chat_stream(texts, calls, interleave=False):
    """An openai chat stream: content text chunks, then each call opened and its fragments (in turn when
    interleave), then the finish; every chunk with the members a real one has."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1767225600, "model": "gpt-4o"}

    def chunk(delta, finish=None):
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": t}) for t in texts]
    out += [chunk({"tool_calls": [{"index": k, "id": f"call_{k}", "type": "function",
                                   "function": {"name": "save", "arguments": ""}}]}) for k in range(len(calls))]
    order = ([(k, c[j]) for j in range(max(map(len, calls))) for k, c in enumerate(calls) if j < len(c)] if interleave
             else [(k, f) for k, c in enumerate(calls) for f in c])
    out += [chunk({"tool_calls": [{"index": k, "function": {"arguments": f}}]}) for k, f in order]
    return out + [chunk({}, "tool_calls")]


def written(profile, items, edits=(), separator=",", compact_items=True):
    """The envelope's bytes with the stream's items written one by one; edits: (item number, old, new), each
    replacing old by new once in that item's text."""
    texts = [json.dumps(item, separators=(",", ":")) if compact_items else json.dumps(item) for item in items]
    for number, old, new in edits:
        assert old in texts[number], (old, texts[number])
        texts[number] = texts[number].replace(old, new, 1)
    head = json.dumps({"profile": profile, "tool_schemas": {"save": {"type": "object"}}}, separators=(",", ":"))
    key = vts.PROFILES[profile].stream_key
    return (head[:-1] + f',"{key}":[' + separator.join(texts) + "]}").encode()


class DeclaredRuns(RunsAgree, unittest.TestCase):
    """Each row's declared RunShapes (anthropic text_delta, chat arguments and content) are read at once
    only where each event is exactly what the parser reads: at the edge of each, the report is that of
    the general path (runs declined, and the whole document parsed and fed item by item)."""

    def agree(self, blob: bytes, limits=None) -> tuple[dict, list[int]]:
        report, taken = RunsAgree.agree(self, blob, limits)
        try:   # and fed item by item, where the whole document is strict JSON
            doc = vts.decode_document(blob.decode())
        except vts.JsonProblem:
            doc = None
        if doc is not None:
            gate = vts.StreamGate(doc["profile"], doc["tool_schemas"], limits)
            for item in doc[vts.PROFILES[doc["profile"]].stream_key]:
                gate.feed(item)
            self.assertEqual(report, gate.finish())
        return report, taken

    def streams(self):
        texts = [f"word {k} é \"q\" 😀 " for k in range(300)]
        fragments = rows_fragments(60)
        # (the last: an item in the middle of a run, where the edges are put)
        yield "anthropic", "text", anthropic_text_turn(texts, fragments), 150
        yield "openai", "content", chat_stream(texts, [fragments]), 150
        yield "openai", "arguments", chat_stream([], [fragments]), len(fragments) // 2
        yield "openai", "interleaved calls", chat_stream([], [rows_fragments(12)] * 8, interleave=True), 200

    def test_every_row_s_shapes_are_well_formed(self):
        for name, row in vts.PROFILES.items():
            leads = {shape.sse_lead for shape in row.wire.runs}
            with self.subTest(profile=name):
                self.assertLessEqual(len(leads), 1, "a row's shapes share one SSE lead")
                for shape in row.wire.runs:
                    self.assertTrue(shape.string and all(type(step) in (str, int) for step in shape.string))
                    self.assertTrue(all(path and path != shape.string for path in shape.numbers))
                    self.assertTrue(callable(shape.plain))
                    self.assertIn(shape.sse_lead, ("", "data: ") if not shape.sse_lead.startswith("event: ")
                                  else (shape.sse_lead,))
                    self.assertTrue(vts._RunReader(row.wire.runs).lead == shape.sse_lead)

    def test_each_shape_is_read_in_runs_and_agrees(self):
        for profile, name, items, at in self.streams():
            for layout in (True, False):
                with self.subTest(profile=profile, stream=name, compact=layout):
                    report, taken = self.agree(written(profile, items, compact_items=layout))
                    self.assertEqual(report["status"], "pass")
                    self.assertGreater(sum(taken), 50)

    def test_edges_of_each_shape_agree(self):
        for profile, name, items, at in self.streams():
            string = "text" if name == "text" else "content" if name == "content" else "arguments"
            number = '"index":0' if name != "interleaved calls" else '"index":7'
            edits = {
                "an escape in the string": (at, f'"{string}":"', f'"{string}":"\\u00e9\\n\\/'),
                "a lone surrogate": (at, f'"{string}":"', f'"{string}":"\\ud83d'),
                "a raw control character": (at, f'"{string}":"', f'"{string}":"\x01'),
                "an unknown escape": (at, f'"{string}":"', f'"{string}":"\\x41'),
                "a duplicate key": (at, number, number + "," + number),
                "a reordered member": (at, '"type":', '"zz":1,"type":') if profile == "anthropic"
                else (at, '"id":', '"created":0,"id":'),
                "a number spelled 1.0": (at, number, number + ".0"),
                "a number spelled 1e0": (at, number, number + "e0"),
                "a number spelled -0": (at, number, number[:-1] + "-" + number[-1]),
                "a number of 19 digits": (at, number, number[:-1] + "1000000000000000000"),
                "an index of another slot": (at, number, number[:-1] + "7"),
                "__proto__ with escapes": (at, "{", '{"\\u005f_proto__":{},'),
                "whitespace inside": (at, ":", ": \n\t"),
                "the first item's layout": (at - 1, ",", ", "),
            }
            for edit, (k, old, new) in edits.items():
                for separator in (",", ",\n  "):
                    with self.subTest(profile=profile, stream=name, edit=edit, separator=separator):
                        report, taken = self.agree(written(profile, items, [(k, old, new)], separator))
                        self.assertTrue(taken)

    def test_text_the_room_would_judge_goes_item_by_item(self):
        texts = [f"t{k}" for k in range(300)]
        stopped = anthropic_text_turn(texts)
        stop = stopped.index({"type": "content_block_stop", "index": 0})
        stopped[stop + 1:stop + 1] = stopped[3:200]          # text deltas after the text block stopped
        unstarted = anthropic_text_turn(texts)
        for event in unstarted[3:200]:
            event["index"] = 5                                # a block never started
        chat = chat_stream(texts, [["{}"]])
        finished = chat[:-1] + [chat[-1]] + chat[1:200]       # content after the finish
        untyped = [{k: v for k, v in item.items() if k != "object"} for item in chat]   # no "object" anywhere
        typed_late = untyped[:150] + chat[150:]                       # "object" said first in the middle of the text
        other = [{**item, "object": "chat.completion"} if k < 150 else item for k, item in enumerate(chat)]
        cases = {("anthropic", "after the block stopped"): stopped, ("anthropic", "a block never started"): unstarted,
                 ("openai", "after the finish"): finished, ("openai", "untyped chunks"): untyped,
                 ("openai", "typed from the middle"): typed_late, ("openai", "another object first"): other}
        for (profile, name), items in cases.items():
            with self.subTest(profile=profile, case=name):
                report, taken = self.agree(written(profile, items))
                self.assertTrue(taken)
        self.assertEqual(self.agree(written("anthropic", stopped), vts.Limits(max_findings=1))[0]["status"], "blocked")

    def test_an_event_long_but_for_its_string_is_parsed(self):
        # (a layout's patterns would cost more to build than such events to parse)
        items = chat_stream([f"w{k}" for k in range(200)], [["{}"]])
        padded = [{**item, "model": "m" * vts._RUN_LAYOUT_CHARS} for item in items]
        report, taken = self.agree(written("openai", padded))
        self.assertEqual((report["status"], taken), ("pass", []))
        self.assertTrue(self.agree(written("openai", items))[1])

    def test_a_window_boundary_inside_a_run(self):
        items = chat_stream([f"w{k}" for k in range(3000)], [rows_fragments(400)])
        for batch in (1 << 10, 5000, 1 << 15):
            with self.subTest(batch=batch), mock.patch.object(vts, "_BATCH_CHARS", batch):
                report, taken = self.agree(written("openai", items))
                self.assertEqual(report["status"], "pass")
                self.assertGreater(sum(taken), 3000)




if __name__ == "__main__":
    unittest.main()


def ollama_stream(texts, done_at=None):
    def line(message, done=False, **more):
        return {"model": "qwen3:8b", "created_at": "2026-11-20T09:14:00.1Z",
                "message": {"role": "assistant", **message}, "done": done, **more}
    out = [line({"content": t}) for t in texts]
    out.append(line({"content": "", "tool_calls": [{"function": {"name": "save", "arguments": {"a": 1}}}]}))
    done = line({"content": ""}, True, done_reason="stop", eval_count=41)
    return out + [done] if done_at is None else out[:done_at] + [done] + out[done_at:]


class OllamaTextRuns(unittest.TestCase):
    """Ollama's text lines (its RunShape, applied by OllamaNormalizer.apply_text) are read at once only where
    each line yields nothing: at the edge of it, the report is the general path's."""

    setUp = DeclaredRuns.setUp
    agree = DeclaredRuns.agree

    def test_text_lines_are_read_in_runs_and_agree(self):
        texts = [f"word {k} é \"q\" 😀 " for k in range(300)]
        for compact_items in (True, False):
            report, taken = self.agree(written("ollama", ollama_stream(texts), compact_items=compact_items))
            self.assertEqual(report["status"], "pass")
            self.assertGreater(sum(taken), 250)

    def test_edges_agree(self):
        texts = [f"w{k} " for k in range(300)]
        at = 150
        edits = {
            "a raw NEL in the text": (at, '"content":"', '"content":"\x85'),
            "an escaped NEL in the text": (at, '"content":"', '"content":"\\u0085'),
            "an escape in the text": (at, '"content":"', '"content":"\\u00e9\\n'),
            "a lone surrogate": (at, '"content":"', '"content":"\\ud83d'),
            "a duplicate key": (at, '"done":false', '"done":false,"done":false'),
            "done spelled 0": (at, '"done":false', '"done":0'),
            "done true": (at, '"done":false', '"done":true'),
            "another role": (at, '"assistant"', '"user"'),
            "an error member": (at, '"done":false', '"done":false,"error":"x"'),
            "an image": (at, '"content":', '"images":["x"],"content":'),
            "a call in the middle": (at, '"content":', '"tool_calls":[{"function":{"name":"save","arguments":{}}}],'
                                                       '"content":'),
            "a reordered member": (at, '"model":', '"zz":1,"model":'),
            "__proto__ with escapes": (at, "{", '{"\\u005f_proto__":{},'),
            "whitespace inside": (at, ":", ": \n\t"),
            "content not a string": (at, '"content":"w150 "', '"content":150'),
        }
        for edit, (k, old, new) in edits.items():
            with self.subTest(edit=edit):
                report, taken = self.agree(written("ollama", ollama_stream(texts), [(k, old, new)]))
                self.assertTrue(taken)
        for done_at in (0, 150):   # text after the line with "done": true
            with self.subTest(done_at=done_at):
                self.assertNotEqual(self.agree(written("ollama", ollama_stream(texts, done_at)))[0]["status"], "pass")

    def test_stamps_edges_agree(self):
        texts = [f"w{k} " for k in range(300)]
        stamped = ollama_stream(texts)
        for k, line in enumerate(stamped):
            line["created_at"] = f"2026-11-20T09:14:{k % 60:02d}.{k:09d}Z"
        report, taken = self.agree(written("ollama", stamped))
        self.assertGreater(sum(taken), 250)
        at, stamp = 150, stamped[150]["created_at"]
        edits = {
            "a raw NEL in the stamp": (at, stamp, stamp + "\x85"),
            "an escaped NEL in the stamp": (at, stamp, stamp + "\\u0085"),
            "a DEL in the stamp": (at, stamp, stamp + "\x7f"),
            "an escape in the stamp": (at, stamp, "\\u0032" + stamp[1:]),
            "a stamp that is a number": (at, f'"{stamp}"', "2026"),
            "a null stamp": (at, f'"{stamp}"', "null"),
            "no stamp": (at, f'"created_at":"{stamp}",', ""),
            "a stamp twice": (at, f'"created_at":"{stamp}"', f'"created_at":"{stamp}","created_at":"x"'),
            "a NEL in the text": (at, '"content":"', '"content":"\x85'),
        }
        for edit, (k, old, new) in edits.items():
            with self.subTest(edit=edit):
                self.agree(written("ollama", stamped, [(k, old, new)]))


class ObfuscationStamps(unittest.TestCase):
    """OpenAI's obfuscation padding, a random string in every chat chunk and Responses delta, is a stamp of their
    run shapes: streams with it are read in runs, and at its edges the report is the general path's."""

    setUp = DeclaredRuns.setUp
    agree = DeclaredRuns.agree

    def test_padded_streams_agree(self):
        rng = random.Random(7)
        chat = chat_stream([f"w{k} " for k in range(200)], [rows_fragments(40)])
        responses = responses_stream([f"w{k} " for k in range(200)], [rows_fragments(40)])
        for profile, items in (("openai", chat), ("openai-responses", responses)):
            padded = [{**item, "obfuscation": "".join(rng.choice("abcXYZ019") for _ in range(rng.randrange(0, 12)))}
                      for item in items]
            report, taken = self.agree(written(profile, padded))
            self.assertGreater(sum(taken), len(items) // 2)
            at, stamp = 100, padded[100]["obfuscation"]
            edits = {
                "an escape": (at, f'"obfuscation":"{stamp}"', '"obfuscation":"\\u0041"'),
                "a control character": (at, f'"obfuscation":"{stamp}"', '"obfuscation":"\x7f\x85"'),
                "null": (at, f'"obfuscation":"{stamp}"', '"obfuscation":null'),
                "a number": (at, f'"obfuscation":"{stamp}"', '"obfuscation":7'),
                "missing": (at, f',"obfuscation":"{stamp}"', ""),
                "twice": (at, f'"obfuscation":"{stamp}"', f'"obfuscation":"{stamp}","obfuscation":"x"'),
            }
            for edit, (k, old, new) in edits.items():
                with self.subTest(profile=profile, edit=edit):
                    self.agree(written(profile, padded, [(k, old, new)]))


class RunItemsRebuilt(unittest.TestCase):
    """FragmentRun.item(k) is exactly the k-th item as the parser reads it, names, counters and stamps
    included."""

    def test_items_of_each_run(self):
        stamped = ollama_stream([f"w{k}" for k in range(200)])
        for k, line in enumerate(stamped):
            line["created_at"] = f"2026-11-20T09:{k % 60:02d}Z" if k % 7 else "2026-11-20T09:00Z"
        padded = [{**item, "obfuscation": f"x{k % 13}"} for k, item in
                  enumerate(chat_stream([f"w{k}" for k in range(100)], [rows_fragments(12)] * 4, interleave=True))]
        streams = {"ollama": stamped, "openai": padded,
                   "openai-responses": responses_stream([], [rows_fragments(12)] * 8, interleave=True)}
        for profile, items in streams.items():
            for separator in (",", ", "):
                text = separator.join(json.dumps(item, separators=(",", ":")) for item in items)
                reader, pos, seen, in_runs = vts._RunReader(vts.PROFILES[profile].wire.runs), 0, 0, 0
                with self.subTest(profile=profile, separator=separator):
                    while pos < len(text):
                        hit = reader.list_run(text, pos)
                        if hit is None:
                            item, end = json.JSONDecoder().raw_decode(text, pos)
                            self.assertEqual(item, items[seen])
                            seen += 1
                        else:
                            run, end, count = hit
                            self.assertEqual([run.item(k) for k in range(count)], items[seen:seen + count])
                            seen, in_runs = seen + count, in_runs + count
                        pos = end + len(separator) if end < len(text) else end
                    self.assertEqual(seen, len(items))
                    self.assertGreater(in_runs, len(items) // 2)


def responses_stream(texts, calls, interleave=False):
    """An openai-responses stream (as tests/bench/floor.py writes it): a message's text deltas, then each call's
    arguments deltas (in turn when interleave), every event with its sequence_number."""
    response = {"id": "resp_1", "object": "response", "created_at": 1767225600, "status": "in_progress",
                "model": "gpt-4.1", "output": []}
    out, output = [{"type": "response.created", "response": response}], []
    if texts:
        whole = "".join(texts)
        message = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "annotations": [], "text": whole}]}
        where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        out += [{"type": "response.output_item.added", "output_index": 0,
                 "item": {**message, "status": "in_progress", "content": []}},
                {"type": "response.content_part.added", **where,
                 "part": {"type": "output_text", "annotations": [], "text": ""}}]
        out += [{"type": "response.output_text.delta", **where, "delta": t, "logprobs": []} for t in texts]
        out += [{"type": "response.output_text.done", **where, "text": whole, "logprobs": []},
                {"type": "response.content_part.done", **where, "part": message["content"][0]},
                {"type": "response.output_item.done", "output_index": 0, "item": message}]
        output.append(message)
    first, items = len(output), []
    for k, frags in enumerate(calls):
        call = {"id": f"fc_{k}", "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": f"call_{k}", "name": "save"}
        out.append({"type": "response.output_item.added", "output_index": first + k, "item": call})
        items.append({**call, "status": "completed", "arguments": "".join(frags)})
    deltas = [[{"type": "response.function_call_arguments.delta", "item_id": f"fc_{k}", "output_index": first + k,
                "delta": f} for f in frags] for k, frags in enumerate(calls)]
    out += ([d for j in range(max(map(len, deltas), default=0)) for d in (c[j] for c in deltas if j < len(c))]
            if interleave else [d for c in deltas for d in c])
    for k, done in enumerate(items):
        out += [{"type": "response.function_call_arguments.done", "item_id": done["id"], "output_index": first + k,
                 "arguments": done["arguments"]},
                {"type": "response.output_item.done", "output_index": first + k, "item": done}]
        output.append(done)
    out.append({"type": "response.completed", "response": {**response, "status": "completed", "output": output}})
    for k, event in enumerate(out):
        event["sequence_number"] = k
    return out


class ResponsesRuns(unittest.TestCase):
    """openai-responses' text and arguments deltas are read in runs (item_id a name, sequence_number a counter:
    RunShape.names and counters) only where each event is exactly what the parser reads; at the edges the
    report is the general path's."""

    setUp = DeclaredRuns.setUp
    agree = DeclaredRuns.agree

    def streams(self):
        texts = [f"word {k} é \"q\" 😀 " for k in range(300)]
        yield "text", responses_stream(texts, []), 150
        yield "arguments", responses_stream([], [rows_fragments(60)]), 30
        yield "interleaved calls", responses_stream([], [rows_fragments(12)] * 8, interleave=True), 50
        yield "calls in turn", responses_stream([], [rows_fragments(30)] * 8), 100

    def test_read_in_runs_and_agree(self):
        for name, items, at in self.streams():
            for compact_items in (True, False):
                with self.subTest(stream=name, compact=compact_items):
                    report, taken = self.agree(written("openai-responses", items, compact_items=compact_items))
                    self.assertEqual(report["status"], "not_applicable" if name == "text" else "pass")
                    self.assertGreater(sum(taken), len(items) // 2)

    def test_edges_agree(self):
        for name, items, at in self.streams():
            number = f'"sequence_number":{at}'
            item_id = items[at]["item_id"]
            edits = {
                "a counter spelled 1.0": (at, number, number + ".0"),
                "a counter spelled 1e0": (at, number, number + "e0"),
                "a negative counter": (at, number, number.replace(":", ":-")),
                "a counter of 19 digits": (at, number, number + "000000000000000000"),
                "a counter as a string": (at, number, number.replace(":", ':"') + '"'),
                "a counter repeated": (at, number, f'"sequence_number":{at - 1}'),
                "a counter twice": (at, number, number + "," + number),
                "no counter": (at, "," + number, ""),
                "an escape in the name": (at, f'"{item_id}"', f'"\\u00{ord(item_id[0]):x}{item_id[1:]}"'),
                "another item's name": (at, f'"{item_id}"', '"fc_7x"'),
                "a name that is a number": (at, f'"{item_id}"', "7"),
                "a name twice": (at, '"item_id":', f'"item_id":"{item_id}","item_id":'),
                "an escape in the delta": (at, '"delta":"', '"delta":"\\u00e9\\n'),
                "a lone surrogate": (at, '"delta":"', '"delta":"\\ud83d'),
                "an index of another item": (at, '"output_index":', '"output_index":9'),
                "a reordered member": (at, '"type":', '"zz":1,"type":'),
                "__proto__ with escapes": (at, "{", '{"\\u005f_proto__":{},'),
                "whitespace inside": (at, ":", ": \n\t"),
                "the first item's layout": (at - 1, ",", ", "),
            }
            if name == "text":
                edits["logprobs"] = (at, '"logprobs":[]', '"logprobs":[{"token":"a","logprob":0,"bytes":[]}]')
            for edit, (k, old, new) in edits.items():
                for separator in (",", ",\n  "):
                    with self.subTest(stream=name, edit=edit, separator=separator):
                        report, taken = self.agree(written("openai-responses", items, [(k, old, new)], separator))
                        self.assertTrue(taken)


class CalledFromADeepStack(unittest.TestCase):
    """Called with little stack left, the verdict is a blocked report, not an exception.

    (With fewer than about ten frames left even building that report fails; the
    sweep starts above that.)
    """

    def test_a_shallow_stack_blocks_instead_of_raising(self):
        import sys
        data, doc = load_fixture("openai/valid-fragmented-single-call.json")
        depth, frame = 0, sys._getframe()
        while frame is not None:
            depth, frame = depth + 1, frame.f_back
        allowed = [("pass", ()), ("blocked", ("limit_exceeded",)), ("blocked", ("invalid_fixture",)),
                   ("blocked", ("unsupported_schema",))]
        seen = set()

        def at_depth(remaining, judge_events):
            return at_depth(remaining - 1, judge_events) if remaining > 0 else judge_events()

        for free in range(20, 70, 2):
            for name, judge_events in (("validate_bytes", lambda: vts.validate_bytes(data)),
                              ("validate_envelope", lambda: vts.validate_envelope(doc))):
                with self.subTest(free_frames=free, api=name):
                    report = at_depth(sys.getrecursionlimit() - depth - free, judge_events)
                    outcome = (report["status"], tuple(f["code"] for f in report["findings"]))
                    self.assertIn(outcome, allowed)
                    seen.add(outcome)
        self.assertIn(("pass", ()), seen)  # with room to spare it still passes

    def test_running_out_of_stack_is_limit_exceeded(self):
        data, doc = load_fixture("openai/valid-fragmented-single-call.json")

        def exhausted(*args, **kwargs):
            raise RecursionError("maximum recursion depth exceeded")

        with mock.patch.object(vts, "_envelope_problems", exhausted):   # the envelope checks, where the gate calls them
            for report in (vts.validate_bytes(data), vts.validate_envelope(doc)):
                self.assertEqual(report["status"], "blocked")
                self.assertEqual([f["code"] for f in report["findings"]], ["limit_exceeded"])
                self.assertIn("stack ran out", report["findings"][0]["message"])


def windowed(data: bytes, window_bytes: int = 300, ahead: int = 200, batch_chars: int = 64) -> tuple[dict, bool]:
    """validate_bytes with tiny windows (see _TextWindow), and whether the stream was read window by window
    (the whole-document parse not taken)."""
    parsed = []
    real = vts._parse_envelope_text

    def spy(text):
        parsed.append(text)
        return real(text)

    with mock.patch.multiple(vts, _WINDOW_BYTES=window_bytes, _WINDOW_AHEAD=ahead, _BATCH_CHARS=batch_chars,
                             _RUNS_MIN_CHARS=0, _parse_envelope_text=spy):
        return vts.validate_bytes(data), not parsed


class Windows(unittest.TestCase):
    """validate_bytes decodes and reads the file a window at a time: the same report as the whole text's."""

    def test_decoding_window_by_window_fails_where_the_whole_file_does(self):
        import random
        pieces = [b"a", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9f",
                  b"\xed\xa0\x80", b"\xff", b"\xc0\xaf", b"\x80\x80\x80\x80\x80"]
        rng = random.Random(34)
        for trial in range(400):
            good = b"".join(rng.choice(pieces[:4]) for _ in range(rng.randrange(1, 40)))
            bad = rng.choice(pieces[4:]) if trial % 4 else b""
            at = rng.randrange(len(good) + 1)
            data = good[:at] + bad + good[at:]
            try:
                expected = vts._envelope_text(data)
            except vts.EnvelopeError as exc:
                expected = str(exc)
            for size in (1, 2, 3, 5, 7):
                with self.subTest(data=data, size=size), mock.patch.object(vts, "_WINDOW_BYTES", size):
                    window, text = vts._TextWindow(data), ""
                    try:
                        while not window.eof:
                            window.slide(len(window.text))
                            text += window.text
                        got = text
                    except vts.EnvelopeError as exc:
                        got = str(exc)
                    self.assertEqual(got, expected)

    def test_a_stream_read_in_tiny_windows_gives_the_whole_texts_report(self):
        value = 'é \"}},{\"type\":\"content_block_delta\" \\ / \b\f\n\r\t \u2028 \U0001f600 \x7f'
        text = json.dumps({"rows": [value, "}},{", "😀" * 40]}, ensure_ascii=False)
        fragments = [text[i:i + 3] for i in range(0, len(text), 3)]
        big = json.dumps({"rows": ["x" * 5000 + "😀"]})
        cases = {
            "escapes cut anywhere": compact(anthropic_turn(fragments), SAVE_SCHEMA),
            "escapes, ASCII": json.dumps({"profile": "anthropic", "tool_schemas": SAVE_SCHEMA,
                                          "events": anthropic_turn(fragments)}).encode(),
            "surrogate halves": compact(anthropic_turn(['{"rows":["\ud83d', '\ude00"]}'] * 30), SAVE_SCHEMA),
            "an event larger than a window": compact(anthropic_turn([big[:10], big[10:], "x"]), SAVE_SCHEMA),
            "one event per line": compact(anthropic_turn(fragments), SAVE_SCHEMA, ",\n"),
            "a number cut by a window": compact([7] * 300 + [123456789] * 300, SAVE_SCHEMA),
            "a blocked turn": compact(anthropic_turn(fragments, stop_reason="end_turn"), SAVE_SCHEMA),
        }
        for name, data in cases.items():
            for sizes in ((300, 200, 64), (97, 130, 16), (1000, 333, 128), (4, 4, 8)):
                with self.subTest(case=name, sizes=sizes):
                    report, streamed = windowed(data, *sizes)
                    self.assertTrue(streamed)
                    self.assertEqual(report, canonical(data))
                    self.assertEqual(report, vts.validate_envelope(json.loads(data)))

    def test_whole_calls_larger_than_a_window(self):
        """Gemini and ollama calls whose chunk or line outgrows its window (grown until the item ends, read as one
        item, the grown window dropped before the item is fed): the whole text's report, at every edge the
        arguments can hold."""
        body = "x" * 2500 + "\U0001f600"
        args = {
            "plain": '{"title":"t","body":"%s"}' % body,
            "proto": '{"title":"t","body":"%s","\\u005f_proto__":{"a":1}}' % body,
            "huge number": '{"title":"t","body":"%s","n":1%s}' % (body, "0" * 400),
            "float spellings": '{"title":"t","body":"%s","n":[1.0,1e0,-0,1E+2]}' % body,
            "duplicate key": '{"title":"t","body":"%s","body":"y"}' % body,
            "lone surrogate": '{"title":"t","body":"%s\\ud83d"}' % body,
            "deep": '{"title":"t","body":"%s","d":%s}' % (body, "[" * 150 + "]" * 150),
            "item ends in strings": '{"title":"t","body":"%s","e":["} ,{", "}]", {"a":"}\\n,"}]}' % ("}, " * 900),
            "not an object": '{"title":"t","body":"%s","d":[1}' % body,
        }
        schemas = {"save_note": {"type": "object", "required": ["title", "body"],
                                 "properties": {"title": {"type": "string"}, "body": {"type": "string"}}}}
        for name, text in args.items():
            gemini = ('{"candidates":[{"content":{"role":"model","parts":[%s,%s]},"finishReason":"STOP"}]}'
                      % tuple('{"functionCall":{"name":"save_note","args":%s}}' % text for _ in range(2)))
            ollama = ('{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"",'
                      '"tool_calls":[{"function":{"name":"save_note","arguments":%s}},{"function":{"name":"save_note",'
                      '"arguments":%s}}]},"done":false},{"model":"m","created_at":"2026-01-01T00:00:01Z","message":'
                      '{"role":"assistant","content":""},"done":true,"done_reason":"stop"}' % (text, text))
            for profile, key, items in (("gemini", "chunks", gemini), ("ollama", "chunks", ollama)):
                head = json.dumps({"profile": profile, "tool_schemas": schemas}, separators=(",", ":"))[:-1]
                data = (head + ',"%s":[{"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]}}]},'
                        % key if profile == "gemini" else head + ',"%s":[' % key).encode() + items.encode() + b"]}"
                for sizes in ((300, 200, 64), (1000, 333, 128)):
                    with self.subTest(case=name, profile=profile, sizes=sizes):
                        report, streamed = windowed(data, *sizes)
                        self.assertEqual(streamed, name not in ("duplicate key", "not an object"))   # (whole text)
                        self.assertEqual(report, canonical(data))

    def test_every_bundled_fixture_read_in_tiny_windows(self):
        for path in fixture_paths()[::7]:
            data, doc = load_fixture(path)
            blobs = [data]
            if isinstance(doc, dict):   # the members in reverse order (the stream first)
                text = json.dumps(dict(reversed(list(doc.items()))), ensure_ascii=False)
                if any("\ud800" <= char <= "\udfff" for char in text):   # a lone surrogate is written escaped only
                    text = json.dumps(dict(reversed(list(doc.items()))))
                blobs.append(text.encode())
            for blob in blobs:
                with self.subTest(fixture=path, stream_first=blob is not data):
                    self.assertEqual(windowed(blob, 211, 150, 40)[0], canonical(blob))

    def test_a_byte_order_mark_and_bytes_that_are_not_utf8_late_in_the_file(self):
        data = compact(anthropic_turn(rows_fragments(200)), SAVE_SCHEMA)
        for name, bad in (("bom", b"\xef\xbb\xbf" + data), ("late", data[:-40] + b"\xe2\x82" + data[-40:]),
                          ("last byte", data + b"\xc3"), ("at a window's end", data[:300] + b"\xff" + data[300:]),
                          ("split character", data[:299] + b"\xf0\x9f\x98" + data[299:]),
                          ("surrogate", data[:-100] + b"\xed\xa0\x80" + data[-100:])):
            with self.subTest(case=name):
                report = windowed(bad)[0]
                self.assertEqual(report, canonical(bad))
                self.assertEqual(report["findings"][0]["code"], "invalid_fixture")

    def test_broken_json_late_in_the_file_gets_the_whole_documents_message(self):
        data = compact(anthropic_turn(rows_fragments(200)), SAVE_SCHEMA)
        middle = data.rindex(b"}},{", 0, len(data) // 2)
        for name, bad in (("cut short", data[:-5]), ("trailing data", data + b" x"), ("a second document", data + data),
                          ("a bracket swapped", data[:middle] + b"]" + data[middle + 1:]),
                          ("whitespace only after", data + b" " * 5000),
                          ("a NaN", data.replace(b'"index":0', b'"index":NaN', 1))):
            with self.subTest(case=name):
                report, streamed = windowed(bad)
                self.assertEqual(report, canonical(bad))
                self.assertEqual(streamed, name == "whitespace only after")

    def test_a_run_cut_by_a_window_declines_there(self):
        # runs stop at each window's end, are asked again after it, and the turn is the parser's
        fragments = ["ab\\u00e9", "\\ud83d", "\\ude00", "é", '\\"'] * 200
        data = compact(anthropic_turn(fragments), SAVE_SCHEMA)
        expected = without_runs(data)
        for window_bytes in (1500, 1501, 1502, 1503, 4099):
            with self.subTest(window_bytes=window_bytes):
                report, taken = with_runs_counted_in(data, window_bytes)
                self.assertEqual(report, expected)
                self.assertGreater(len(taken), 3)
                self.assertGreater(sum(taken), len(fragments) // 2)


def with_runs_counted_in(data: bytes, window_bytes: int) -> tuple[dict, list[int]]:
    with mock.patch.multiple(vts, _WINDOW_BYTES=window_bytes, _WINDOW_AHEAD=window_bytes // 2,
                             _RUNS_MIN_CHARS=0, _BATCH_CHARS=256):
        return with_runs_counted(data)


class PackedFragments(unittest.TestCase):
    """A slot's fragments are packed as UTF-8 every _PACK_PARTS: the same report as fragments held one by one."""

    def both(self, data: bytes) -> dict:
        with mock.patch.object(vts, "_PACK_PARTS", 1 << 30):
            unpacked = vts.validate_bytes(data)
        for every in (0, 1, 2, 5):
            with self.subTest(pack_parts=every), mock.patch.object(vts, "_PACK_PARTS", every):
                self.assertEqual(vts.validate_bytes(data), unpacked)
        return unpacked

    def test_surrogate_halves_and_lone_surrogates_across_a_pack(self):
        for name, fragments, status in (
                ("a pair split between two fragments", ['{"rows":["', "\\ud83d", "\\ude00", "é😀", '"]}'], "pass"),
                ("a lone high surrogate", ['{"rows":["', "\\ud83d", "x", '"]}'], "blocked"),
                ("a lone low surrogate last", ['{"rows":["', "x", '"]}', "\\ude00"], "blocked")):
            with self.subTest(case=name):
                data = compact(anthropic_turn(fragments), SAVE_SCHEMA)
                self.assertEqual(self.both(data)["status"], status)

    def test_bundled_fixtures(self):
        for path in fixture_paths()[::5]:
            with self.subTest(fixture=path):
                self.both(load_fixture(path)[0])
