"""The fast paths of issue 34 against the general path, on inputs at their edges (from the differential fuzz).

Each row's run strings (its RunShapes' string paths) get a character at a run's start, middle or end that a
literal reading of the text must get right: half of a surrogate pair in one piece and half in the next, a
lone surrogate, U+0085, U+2028, a quote, a backslash, an empty piece, __proto__ written into the arguments;
the envelope is written ASCII-escaped, compact, and with "_" and "/" escaped everywhere (keys included).
validate_bytes, with runs looked for however short the text, must report what validate_envelope reports for
the parsed document (no run, no walk skipped, no argument kept); StreamGate.feed_bytes of the provider's body
must report the same whole, split in pieces, and byte by byte.  Also: Vertex partialArgs runs broken by a
state change (a finishReason, a text part, a second call, another candidate, willContinue false), with
__proto__ and constructor.prototype in jsonPath; Ollama lines with a line break in each place.
"""

import json
import random
import sys
import unittest
from pathlib import Path
from unittest import mock

from support import vts

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))
import floor  # noqa: E402  (the benchmark's stream builders)

INSERTS = (("pair", None), ("high", "\ud83d"), ("low", "\ude00"), ("nel", "\u0085"), ("ls", "\u2028"),
           ("quote", '"'), ("backslash", "\\"), ("empty", ""), ("proto", '"__proto__":{},'),
           ("ctor", '"constructor":{"prototype":1},'), ("escaped-proto", '"\\u005f_proto__":1,'))
LAYOUTS = {
    "ascii": lambda event: json.dumps(event),
    "compact": lambda event: json.dumps(event, separators=(",", ":"), ensure_ascii=False),
    "escaped": lambda event: json.dumps(event).replace("_", "\\u005f").replace("/", "\\/"),
}


def at(value, path):
    for step in path:
        if isinstance(step, int) and not (isinstance(value, list) and len(value) > step):
            return None
        if isinstance(step, str) and not (isinstance(value, dict) and step in value):
            return None
        value = value[step]
    return value


def put(value, path, new):
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def general(profile, stream, schemas):
    """The general path: the parsed document, every item fed as it is."""
    return vts.validate_envelope({"profile": profile, "tool_schemas": schemas, vts.STREAM_KEY[profile]: stream})


def body_of(profile, stream, texts):
    """The provider's body (its HttpRules.frame) with each payload written as texts gives it."""
    kind, framed = vts.PROFILES[profile].http.frame(stream, "alt=sse")
    if kind == "application/x-ndjson":
        return "".join(text + "\n" for text in texts).encode("utf-8", "surrogatepass")
    if not kind.startswith("text/event-stream"):
        return None
    named, end = framed.startswith(b"event:"), "\r\n" if b"\r\n" in framed else "\n"
    out = "".join((f"event: {event['type']}{end}" if named else "") + f"data: {text}{end}{end}"
                  for event, text in zip(stream, texts))
    return (out + (f"data: [DONE]{end}{end}" if b"[DONE]" in framed else "")).encode("utf-8", "surrogatepass")


def fed(profile, schemas, body, splits):
    gate = vts.StreamGate(profile, schemas)
    start = 0
    for end in splits:
        gate.feed_bytes(body[start:end])
        start = end
    gate.feed_bytes(body[start:])
    return gate.finish()


class FastPathsAgree(unittest.TestCase):
    def agree(self, profile, stream, schemas, layouts=LAYOUTS, byte_by_byte=False, rng=None):
        expected = general(profile, stream, schemas)
        key = vts.STREAM_KEY[profile]
        for name, write in layouts.items():
            texts = [write(event) for event in stream]
            blob = (json.dumps({"profile": profile, "tool_schemas": schemas})[:-1] + f', "{key}": [\n'
                    + ",\n".join(texts) + "\n]}").encode("utf-8", "surrogatepass")
            if name != "compact" or blob.decode("utf-8", "replace").encode() == blob:   # (compact: valid UTF-8 only)
                with self.subTest(layout=name, read="validate_bytes"), mock.patch.object(vts, "_RUNS_MIN_CHARS", 0):
                    self.assertEqual(vts.validate_bytes(blob), expected)
            body = body_of(profile, stream, texts) if name != "compact" else None
            if body is None:
                continue
            cuts = [[], sorted((rng or random.Random(len(body))).sample(range(1, len(body)), min(12, len(body) - 1)))]
            if byte_by_byte:
                cuts.append(list(range(1, len(body))))
            for splits in cuts:
                with self.subTest(layout=name, read="feed_bytes", pieces=len(splits) + 1):
                    self.assertEqual(fed(profile, schemas, body, splits), expected)

    def test_run_strings_at_the_edges(self):
        rng = random.Random(34)
        rows = [row for row in ("openai", "mistral", "anthropic", "openai-responses", "bedrock", "gemini",
                                "gemini-vertex", "cohere")]
        checked = 0
        for row in rows:
            profile, stream = floor.stream_of(row, "fragments", 12)
            shapes = vts.PROFILES[profile].wire.runs or ()
            strings = [(k, shape.string) for k, event in enumerate(stream) for shape in shapes
                       if isinstance(at(event, shape.string), str)]
            if not strings:
                continue
            for (name, insert), where in zip(INSERTS * 3, ["first", "middle", "last"] * len(INSERTS)):
                turn = json.loads(json.dumps(stream))
                pick = {"first": 0, "middle": len(strings) // 2, "last": len(strings) - 1}[where]
                k, path = strings[pick]
                text = at(turn[k], path)
                if insert is None:   # a surrogate pair cut between two pieces
                    put(turn[k], path, text + "\ud83d")
                    if pick + 1 < len(strings):
                        k2, path2 = strings[pick + 1]
                        put(turn[k2], path2, "\ude00" + at(turn[k2], path2))
                else:
                    cut = rng.randint(0, len(text))
                    put(turn[k], path, text[:cut] + insert + text[cut:])
                with self.subTest(row=row, insert=name, where=where):
                    self.agree(profile, turn, floor.SCHEMAS, rng=rng)
                checked += 1
        self.assertGreater(checked, 100)

    def test_vertex_runs_broken_by_a_state_change(self):
        schemas = {"f": {"type": "object"}}

        def piece(text, path="$.a", more=True, call_more=True, index=0):
            call = {"partialArgs": [{"jsonPath": path, "stringValue": text, "willContinue": more}],
                    "willContinue": call_more}
            return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "index": index}]}

        def part(value, index=0, **candidate):
            return {"candidates": [{"content": {"role": "model", "parts": [value]}, "index": index, **candidate}]}

        def start(path="$.a"):
            return part({"functionCall": {"name": "f", "id": "c1", "willContinue": True, "partialArgs": [
                {"jsonPath": path, "stringValue": "x", "willContinue": True}]}})

        between = {"none": [], "finish": [part({"text": ""}, finishReason="STOP")], "text": [part({"text": "hi"})],
                   "second-call": [start("$.b")], "other-candidate": [piece("zz", index=1)],
                   "call-ends": [piece("zz", call_more=False)], "string-ends": [piece("zz", more=False)],
                   "text-new-candidate": [part({"text": "hi"}, index=2)]}
        for path in ("$.a", "$.__proto__", "$.constructor.prototype", "$['a']", "$.a[0]", "$.b"):
            for name, events in between.items():
                stream = ([start()] + [piece(p, path) for p in ("ab", "c\u0085d", "__proto__")] + events
                          + [piece(p, path) for p in ("\U0001F600", "", "\u2028")]
                          + [piece("", more=False, call_more=False), part({"text": ""}, finishReason="STOP")])
                with self.subTest(path=path, between=name):
                    self.agree("gemini", stream, schemas)

    def test_ollama_line_breaks_in_each_place(self):
        schemas = {"f": {"type": "object"}}

        def line(content, done=False, **more):
            return {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": content},
                    "done": done, **more}

        for char in ("\u0085", "\u2028", "\u2029", "\x0b", "\r"):
            for where in ("content", "model", "key", "arguments", "thinking"):
                odd = line("c")
                if where == "content":
                    odd["message"]["content"] = "c" + char
                elif where == "model":
                    odd["model"] = "m" + char
                elif where == "key":
                    odd["message"]["x" + char] = "y"
                elif where == "thinking":
                    odd["message"]["thinking"] = char
                else:
                    odd["message"]["tool_calls"] = [{"function": {"name": "f", "arguments": {"a": "v" + char}}}]
                stream = [line("a"), line("b"), line("a"), odd, line("d"), line("", True, done_reason="stop")]
                with self.subTest(char=hex(ord(char)), where=where):
                    self.agree("ollama", stream, schemas, byte_by_byte=True)


if __name__ == "__main__":
    unittest.main()
