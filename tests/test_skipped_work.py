"""Work validate_bytes skips where it cannot change the report, against the general path on inputs at the edge.

Reader checks that walk a parsed payload for a word (secure-json-parse's __proto__, U+0085 for ollama's line
readers) run only where the capture's bytes can spell the word (see _may_hold): every spelling a JSON string
can use -- the character as it is, \\uXXXX in lower, upper and mixed-case hex, short escapes, surrogate
pairs -- in keys and values, nested, across the loader's 32 KiB window, gives the report validate_envelope
gives the parsed envelope (which walks every payload).  A whole call's arguments object is not parsed again
from its text (see _kept_arguments): numbers at every edge, surrogates, nesting, limits.
"""

import json
import random
import unittest

from support import vts

SCHEMAS = {"f": {"type": "object"}, "g": {"type": "object"}}
PLACEHOLDER = "QQWORDQQ"


def spellings_of(word, rng, count=12):
    """JSON-string spellings (ASCII text, no quotes) of word: each character as it is, escaped with
    lower/upper/mixed-case hex digits, or short-escaped; always the all-plain and all-escaped ones."""
    def one(char, how):
        units = char.encode("utf-16-be")
        hexes = [f"{int.from_bytes(units[k:k + 2], 'big'):04x}" for k in range(0, len(units), 2)]
        short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\n": "\\n", "\t": "\\t"}.get(char)
        if how == "plain":
            return json.dumps(char, ensure_ascii=False)[1:-1]
        if how == "short" and short:
            return short
        if how == "upper":
            return "".join("\\u" + h.upper() for h in hexes)
        if how == "mixed":
            return "".join("\\u" + "".join(d.upper() if k % 2 else d for k, d in enumerate(h)) for h in hexes)
        return "".join("\\u" + h for h in hexes)

    hows = ("plain", "lower", "upper", "mixed", "short")
    out = ["".join(one(c, "plain") for c in word), "".join(one(c, "lower") for c in word),
           "".join(one(c, "upper") for c in word)]
    out += ["".join(one(c, "plain" if k != j else how) for k, c in enumerate(word))
            for j in range(len(word)) for how in hows[1:]]
    out += ["".join(one(c, rng.choice(hows)) for c in word) for _ in range(count)]
    return sorted(set(out))


class SpellingsTest(unittest.TestCase):
    def test_every_spelling_is_found(self):
        rng = random.Random(34)
        for word in ("proto", "__proto__", "prototype", "\x85", "a\x85b", "\u00ab/\"\\\n\U0001F600z"):
            for spelled in spellings_of(word, rng):
                with self.subTest(word=word, spelled=spelled):
                    text = '{"k' + spelled + '": ["x' + spelled + 'y"]}'
                    (key, value), = json.loads(text).items()   # it does spell the word, twice
                    self.assertEqual((key, value), ("k" + word, ["x" + word + "y"]))
                    data = b"[" + b"0," * 9000 + text.encode("utf-8") + b"]"
                    self.assertTrue(vts._SpelledIn(data).spells((word,)))
                    self.assertTrue(vts._SpelledIn(data).spells(("nowhere", word)))

    def test_near_misses_skip_the_walk(self):
        for text in (b'{"prot": "o", "PROTO": 1, "p-roto": 2}', b'{"\\u0050roto": "\\u0086 \xc2\x86"}',
                     b'{"\\u00e9": "\xc3\xa9"}'):
            with self.subTest(text=text):
                self.assertFalse(vts._SpelledIn(text).spells(("proto", "\x85")))

    def test_only_while_reading_bytes(self):
        self.assertIsNone(vts._PARSED_FROM.get())   # set only inside validate_bytes, and reset after it
        self.assertTrue(vts._secure_parse_refuses({"a": [{"__proto__": 1}]}))
        vts.validate_bytes(b'{"profile": "cohere", "tool_schemas": {}, "events": []}')
        self.assertIsNone(vts._PARSED_FROM.get())


def cohere_turn(pad, hostile):
    start = {"id": "c0ffee00-1", "type": "message-start", "delta": {"message": {"role": "assistant",
                                                                                "content": [], "tool_calls": []}}}
    text = [{"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
            {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": pad}}}},
            {"type": "content-end", "index": 0}]
    call = [{"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
        "id": "f_abc123def456", "type": "function", "function": {"name": "f", "arguments": ""}}}}},
        {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {
            "arguments": "{\"a\":1}"}}}}}, {"type": "tool-call-end", "index": 0}]
    end = {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}
    call[1]["delta"].update(hostile)
    return "cohere", [start] + text + call + [end]


def gemini_turn(pad, hostile):
    text = {"candidates": [{"content": {"role": "model", "parts": [{"text": pad}]}}]}
    call = {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                            "finishReason": "STOP"}], **hostile}
    return "gemini", [text, call]


def ollama_turn(pad, hostile):
    def line(message, done=False):
        return {"model": "qwen3:8b", "created_at": "2026-11-20T09:14:00Z",
                "message": {"role": "assistant", "content": "", **message}, "done": done}
    call = line({"tool_calls": [{"function": {"index": 0, "name": "f", "arguments": {"a": 1}}}]})
    call.update(hostile)
    return "ollama", [line({"content": pad}), call, dict(line({}, True), done_reason="stop")]


# (room's turn, hostile members holding PLACEHOLDER where the word goes, the word)
CASES = [
    (cohere_turn, {PLACEHOLDER: {}}, "__proto__"),
    (cohere_turn, {"x": [{"constructor": {PLACEHOLDER: 1}}]}, "prototype"),
    (gemini_turn, {PLACEHOLDER: {}}, "__proto__"),
    (gemini_turn, {"usageMetadata": {"x": {"constructor": {PLACEHOLDER: {}}}}}, "prototype"),
    (ollama_turn, {"model": "m" + PLACEHOLDER}, "a\x85b"),
    (ollama_turn, {"extra": {"deep": [{"k" + PLACEHOLDER: "v"}]}}, "\x85"),
]


class SameFindingsTest(unittest.TestCase):
    """validate_bytes (which may skip a walk) against validate_envelope (which walks every payload)."""

    def check(self, turn, hostile, word, spelled, pad):
        profile, stream = turn("p" * pad, hostile)
        head = json.dumps({"profile": profile, "tool_schemas": SCHEMAS})[:-1]
        text = head + ', "' + vts.STREAM_KEY[profile] + '": [\n' + ",\n".join(map(json.dumps, stream)) + "]}"
        data = text.replace(PLACEHOLDER, spelled).encode("utf-8")
        expected = vts.validate_envelope(json.loads(data))
        self.assertEqual(vts.validate_bytes(data), expected)
        self.assertIn("unexpected_event", [f["code"] for f in expected["findings"]])
        return data.index(spelled.encode("utf-8"))

    def test_every_spelling_in_keys_and_values_nested(self):
        rng = random.Random(3434)
        for turn, hostile, word in CASES:
            for spelled in spellings_of(word, rng, count=4):
                with self.subTest(room=turn.__name__, hostile=hostile, spelled=spelled):
                    self.check(turn, hostile, word, spelled, 10)

    def test_across_the_window(self):
        # the spelling starts some characters before the loader's 32 KiB batch boundary, and ends after it
        for turn, hostile, word in CASES[::2]:
            escaped = "".join(f"\\u{ord(c):04X}" if c in "ot\x85" else c for c in word)
            where = self.check(turn, hostile, word, escaped, 32768)
            for pad in (32768 - (where - 32768) - 3, 32768 - (where - 32768) - 7):
                with self.subTest(room=turn.__name__, pad=pad):
                    where = self.check(turn, hostile, word, escaped, pad)
                    self.assertLess(where, 32768)
                    self.assertGreater(where + len(escaped), 32768)

    def test_a_clean_capture_still_passes(self):
        for turn, _, _ in CASES[::2]:
            profile, stream = turn("p", {})
            data = json.dumps({"profile": profile, "tool_schemas": SCHEMAS, vts.STREAM_KEY[profile]: stream})
            self.assertEqual(vts.validate_bytes(data.encode())["status"], "pass", turn.__name__)


# --- a whole call's arguments object taken as it is (_kept_arguments) ------------------------------------

EDGE_ARGS = [
    '{"a": 9007199254740991, "b": -9007199254740991}', '{"a": 9007199254740992}', '{"a": -9007199254740992}',
    '{"a": 1.0, "b": 1e0, "c": -0, "d": -0.0, "e": 1E400}', '{"a": 1e308, "b": 5e-324, "c": -2.2250738585072014e-308}',
    '{"a": 12345678901234567890123}', '{"a": 1' + '0' * 400 + '}', '{"a": "\\ud800"}', '{"\\udc00": 1}',
    '{"a": "\\\\ud800"}', '{"a": "\\ud83d\\ude00 \\u0000"}', '{"a": [[[[[[1]]]]]]}', '{}', '{"a": {}}',
    '{"a": ' + "[" * 64 + "]" * 64 + '}', '{"a": ' + "[" * 63 + "]" * 63 + '}', '{"a": ' + "[" * 99 + "]" * 99 + '}',
    '{"a": ' + "[" * 101 + "]" * 101 + '}', '{"a": "' + "x" * 3000 + '"}', '{"a": 1, "a": 2}', '[1]', '"s"', 'null',
    '{"q": "{\\"x\\": 1}"}', '{"a": 1.5e-7, "b": 123456789012345.6, "c": 0.1}',
]
LIMITS = [None, {"max_number_length": 16}, {"max_number_length": 23}, {"max_number_length": 24},
          {"max_depth": 100, "max_number_length": 24}, {"max_argument_bytes": 100}, {"max_depth": 200}]


def whole_call_envelope(profile, args_text):
    if profile == "ollama":
        line = '{"model": "m", "created_at": "t", "message": {"role": "assistant", "content": "", "tool_calls": ' \
               '[{"function": {"name": "f", "arguments": %s}}]}, "done": false}' % args_text
        stream = [line, '{"model": "m", "created_at": "t", "message": {"role": "assistant", "content": ""}, ' \
                        '"done": true, "done_reason": "stop"}']
    else:
        stream = ['{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": '
                  '%s}}]}, "finishReason": "STOP"}]}' % args_text]
    return ('{"profile": "%s", "tool_schemas": {"f": {"type": "object"}}, "%s": [\n%s\n]}'
            % (profile, vts.STREAM_KEY[profile], ",\n".join(stream))).encode("utf-8")


class KeptArgumentsTest(unittest.TestCase):
    def test_the_report_of_the_text_parsed_again(self):
        for profile in ("ollama", "gemini"):
            for args in EDGE_ARGS:
                data = whole_call_envelope(profile, args)
                for limits in LIMITS:
                    with self.subTest(profile=profile, args=args[:60], limits=limits):
                        made = vts.Limits(**limits) if limits else None
                        real = vts._kept_arguments
                        vts._kept_arguments = lambda slot, limits: None   # always parse the text again
                        try:
                            expected = vts.validate_bytes(data, made)
                        finally:
                            vts._kept_arguments = real
                        self.assertEqual(vts.validate_bytes(data, made), expected)

    def test_kept_only_from_bytes(self):
        args = {"a": [1, 2]}
        snapshot = vts._input_snapshot(args, 64)
        self.assertIsNone(snapshot[3])   # a caller's object: it may change it after feeding it
        token = vts._PARSED_FROM.set(vts._SpelledIn(b""))
        try:
            self.assertIs(vts._input_snapshot(args, 64)[3], args)
            plain = {"a": True, "b": [{"c": 1.5, "d": None}]}
            for odd in ({"a": (1, 2)}, {1: 2}, {"a": 2 ** 53}, plain):
                self.assertEqual(vts._input_snapshot(odd, 64)[3] is odd, odd is plain)
        finally:
            vts._PARSED_FROM.reset(token)


class TextProblemsTest(unittest.TestCase):
    def test_counted_as_its_utf8(self):
        """_text_problems counts an ASCII text by its length and any other by its UTF-8: the same problems as
        encoding every text, at the size limit and either side of it, surrogates, astral and control text."""
        def by_encoding(text, limits):
            try:
                size = len(text.encode("utf-8"))
            except UnicodeEncodeError:
                return [(vts.INVALID_UNICODE, "the joined arguments hold an unpaired UTF-16 surrogate")]
            return [(vts.LIMIT_EXCEEDED, f"the arguments exceed {limits.max_argument_bytes} bytes")] \
                if size > limits.max_argument_bytes else []
        for text in ("", "{}", '{"a":"x"}', '{"a":"\x00\x1f\x7f"}', '{"a":"\u00e9"}', "\u00e9", "\U0001f600",
                     "\ud83d", "a\udfff", "\ud83d\ude00", "x" * 100 + "\U0001f600", "\x80" * 3):
            for delta in (-1, 0, 1):
                for size in {len(text), len(text.encode("utf-8", "surrogatepass"))}:
                    limits = vts.Limits(max_argument_bytes=max(1, size + delta))
                    with self.subTest(text=text[:20], limit=limits.max_argument_bytes):
                        self.assertEqual(vts._text_problems(text, limits, "arguments"), by_encoding(text, limits))


class BodyInPiecesTest(unittest.TestCase):
    """StreamGate.feed_bytes: a text body's pieces are searched as they come (_BodySpelled), with the end of the
    pieces before: a spelling cut by a piece's end at any byte is still found."""

    def report(self, profile, body, cuts):
        gate = vts.StreamGate(profile, SCHEMAS)
        for start, end in zip((0,) + cuts, cuts + (len(body),)):
            gate.feed_bytes(body[start:end])
        return gate.finish()

    def test_a_spelling_cut_anywhere(self):
        for (turn, hostile, word), query in zip(CASES, ("", "", "alt=sse", "", "", "")):
            profile, stream = turn("p", hostile)
            escaped = "".join(f"\\u{ord(c):04x}" if c in "pt\x85" else c for c in word)
            for spelled, raw in ((escaped, False), (word, True)):
                body = vts.PROFILES[profile].http.frame(stream, query)[1]
                replaced = spelled.encode("utf-8") if raw else json.dumps(spelled)[1:-1].replace("\\\\", "\\").encode()
                body = body.replace(PLACEHOLDER.encode(), replaced)
                where = body.index(replaced)
                whole = self.report(profile, body, ())
                self.assertEqual(whole["status"], "blocked")
                if not raw or profile != "ollama":   # (a raw U+0085 ends the line: capture refuses such a body)
                    self.assertIn("unexpected_event", [f["code"] for f in whole["findings"]], (profile, spelled))
                for cut in range(where - 1, where + len(replaced) + 2):
                    with self.subTest(profile=profile, spelled=spelled, cut=cut - where):
                        self.assertEqual(self.report(profile, body, (cut,)), whole)
                self.assertEqual(self.report(profile, body, tuple(range(1, len(body)))), whole)   # byte by byte

    def test_first_asked_past_the_kept_start(self):
        # a first line longer than the body's start kept for a check's first question: the check walks
        for turn, hostile, word in CASES[4:]:
            profile, stream = turn("p" * 70_000, hostile)
            body = vts.PROFILES[profile].http.frame(stream, "")[1].replace(PLACEHOLDER.encode(), b"\\u0085")
            whole = self.report(profile, body, ())
            self.assertIn("unexpected_event", [f["code"] for f in whole["findings"]])
            self.assertEqual(self.report(profile, body, tuple(range(4096, len(body), 4096))), whole)

    def test_a_clean_body_in_pieces_passes(self):
        for turn, _, _ in CASES[::2]:
            profile, stream = turn("p", {})
            body = vts.PROFILES[profile].http.frame(stream, "alt=sse")[1]
            self.assertEqual(self.report(profile, body, tuple(range(7, len(body), 7)))["status"], "pass")


if __name__ == "__main__":
    unittest.main()
