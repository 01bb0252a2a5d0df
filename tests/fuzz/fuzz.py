#!/usr/bin/env python3
"""Deterministic mutation fuzzer for scripts/validate_tool_stream.py (standard library only).

Usage
-----
    PYTHONDONTWRITEBYTECODE=1 python3 tests/fuzz/fuzz.py [--seed N] [--seconds S] [--corpus DIR]
                                                   [--cli-every N] [--max-cases N]
                                                   [--failures-dir DIR] [--replay I] [--quiet]
                                                   [--mode stream|schema|thread]
    python3 tests/fuzz/fuzz.py --atheris [atheris/libFuzzer options...]   # only if atheris is installed

    --seed N          seed of the case sequence (default 0); case I of seed N is always the same input
    --seconds S       time budget (default 60); the run stops after the first case past it
    --corpus DIR      fixtures to mutate (default: the repository's fixtures/)
    --cli-every N     every Nth case also runs through the real CLI in a subprocess (default 100; 0 = never)
    --max-cases N     stop after N cases even when time is left
    --failures-dir D  where failing inputs are saved (default /tmp/fuzz-failures)
    --replay I        rebuild case I of --seed, check it once (in-process and CLI) and print it
    --mode M          stream (default): mutated fixtures; schema: generated schemas and patterns
                      (every keyword of the subset, ambiguous and proven patterns, huge counts,
                      adversarial subjects up to --max-pattern-subject) with one call to check;
                      thread: the cases of both modes validated in a worker thread
    --atheris         hand the same checks to atheris (coverage-guided); ignored with a note when
                      atheris is not importable -- it is never required

Exit status: 0 when no invariant broke, 1 when at least one did (each failing input is saved
under --failures-dir and printed), 2 on bad usage.

What a case is
--------------
A fixture from the corpus, parsed and mutated at the JSON-structure level (change a value's
type, drop or duplicate a key, add a protocol key, swap / duplicate / delete / splice stream
elements between fixtures, change numbers to huge / negative / float / bool / raw tokens such
as 1e400 or a 5000-digit integer, insert lone or split UTF-16 surrogates, split or merge argument
fragments, replace strings with protocol words), then serialised (sometimes with a duplicate key
or a raw token), and sometimes mutated again at the byte level (flip / insert / delete / splice
bytes, BOM, invalid UTF-8, truncation).  Raw fixture bytes are also mutated directly.

Invariants (checked in-process for every case, through the CLI every Nth case)
------------------------------------------------------------------------------
* no exception escapes vts.validate_bytes; the report renders (JSON, ASCII-only, and text);
* status is pass / blocked / not_applicable; executable is true only for pass, applicable false
  only for not_applicable; blocked has findings, pass and not_applicable have none; every code
  is one of SPEC section 5;
* a pass report has at least one call, every call "validated" with no findings;
* findings are in stream order (null positions last); calls are sorted by choice then index;
  every finding listed under a call is also in the report's findings;
* determinism and path independence: the same bytes give an identical report a second time,
  through the whole-document parse or through tiny read batches with runs of Anthropic deltas
  looked for in any stream, however short (alternately);
* metamorphic: a passing input still passes, with the same calls, after re-serialisation (other
  whitespace and key order), a split of one argument fragment and an ignorable noise element;
* CLI: exit code in {0,1,2,3}; never "Traceback" on stderr; for 0-2 stdout is one JSON report
  whose status matches the exit code, equal to the in-process report; --report text and
  --expect runs exit with a code consistent with it.

Schema mode adds: compile and evaluation never raise; every pattern of the schema that parses
gives the same verdict on the automaton simulator and on Python's re (the translation), and a
pattern proven for re finishes on a worst-case subject of the longest allowed length in under a
second.  Thread mode adds: the worker thread finishes within --slow-seconds (no pattern or schema
freezes it) and gives the same report as the main thread (unless the main thread's wall-clock
backstop decided).

tests/test_properties.py runs `run_fuzz()` for a short fixed-seed budget in CI, in every mode.
"""


import argparse
import copy
import hashlib
import json
import os
import random
import subprocess
import sys
import time

# tests/fuzz/ -> the repository
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "validate_tool_stream.py")
DEFAULT_CORPUS = os.path.join(ROOT, "fixtures")
DEFAULT_FAILURES = "/tmp/fuzz-failures"
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import validate_tool_stream as vts  # noqa: E402

# SPEC section 5: the stable codes (hard-coded here on purpose: the tool is checked against them).
CODES = frozenset("""
invalid_fixture unknown_profile unsupported_event unexpected_event stream_error missing_index
missing_slot identity_collision missing_id missing_name delta_after_terminal duplicate_terminal
missing_terminal wrong_terminal_reason ambiguous_choice malformed_json trailing_data
non_finite_number duplicate_key invalid_unicode limit_exceeded non_object_arguments unknown_tool
unsupported_schema schema_violation request_violation
""".split())
EXIT_BY_STATUS = {"pass": 0, "blocked": 1, "not_applicable": 2}
REPORT_KEYS = ("tool", "version", "profile", "status", "applicable", "executable", "calls", "findings", "meta")
CALL_KEYS = ("choice", "index", "id", "name", "arguments", "state", "findings")


# ---------------------------------------------------------------------------
# Serialisation that can express what Python's json cannot: duplicate keys and raw tokens
# ---------------------------------------------------------------------------


class Pairs:
    """An object written from (key, value) pairs: may repeat a key (opaque to the mutators)."""

    def __init__(self, pairs):
        self.pairs = list(pairs)


class Raw(str):
    """A token written verbatim (NaN, 1e400, a 5000-digit integer, deep nesting...)."""


_OPEN_OBJECT, _CLOSE_OBJECT, _OPEN_ARRAY, _CLOSE_ARRAY, _COMMA, _COLON = map(Raw, "{}[],:")
_SCALARS = {None: "null", True: "true", False: "false"}


def serialize(value, ensure_ascii=True):
    """value as JSON text, Pairs and Raw tokens written as they are (iterative: any depth)."""
    string = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    out = []
    write = out.append
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        kind = type(item)
        if kind is Raw:
            write(str(item))
        elif kind is str or isinstance(item, str):
            write(string(item))
        elif item is None or kind is bool:
            write(_SCALARS[item])
        elif isinstance(item, (int, float)):
            write(json.dumps(item))
        elif isinstance(item, (dict, Pairs)):
            pairs = list(item.items()) if isinstance(item, dict) else item.pairs
            push(_CLOSE_OBJECT)
            for i in range(len(pairs) - 1, -1, -1):
                k, v = pairs[i]
                push(v)
                push(_COLON)
                push(k if isinstance(k, str) else str(k))
                if i:
                    push(_COMMA)
            push(_OPEN_OBJECT)
        elif isinstance(item, (list, tuple)):
            push(_CLOSE_ARRAY)
            for i in range(len(item) - 1, -1, -1):
                push(item[i])
                if i:
                    push(_COMMA)
            push(_OPEN_ARRAY)
        else:
            write("null")
    return "".join(out)


def to_bytes(doc, rng):
    ensure_ascii = rng.random() < 0.6
    text = serialize(doc, ensure_ascii)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:   # a lone surrogate written raw
        if rng.random() < 0.5:
            return text.encode("utf-8", "surrogatepass")   # invalid UTF-8 on purpose
        return serialize(doc, True).encode("utf-8")


# ---------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------


def load_corpus(folder):
    items = []
    for base, _, files in os.walk(folder):
        for name in sorted(files):
            if name.endswith(".json"):
                path = os.path.join(base, name)
                with open(path, "rb") as handle:
                    data = handle.read()
                try:
                    doc = json.loads(data)
                except ValueError:
                    doc = None
                items.append((os.path.relpath(path, folder), data, doc))
    items.sort(key=lambda item: item[0])
    if not items:
        raise ValueError("no .json fixtures under %s" % folder)
    return items


# ---------------------------------------------------------------------------
# Structure-level mutations
# ---------------------------------------------------------------------------

WORDS = ("tool_calls", "stop", "length", "content_filter", "function_call", "error", "tool_use", "end_turn",
         "max_tokens", "pause_turn", "message_start", "content_block_start", "content_block_delta",
         "content_block_stop", "message_delta", "message_stop", "ping", "text", "thinking", "redacted_thinking",
         "server_tool_use", "input_json_delta", "text_delta", "thinking_delta", "signature_delta",
         "citations_delta", "function", "custom", "openai", "mistral", "anthropic", "", "null", "{}", "{", "}",
         "{\"a\":1}", "\"", "\\", "\\u00", "\\ud83d", "NaN", "\u2028", "\x00", "\U0001F4A9",
         "gemini", "STOP", "MAX_TOKENS", "MALFORMED_FUNCTION_CALL", "model", "$", "$.a", "$..a", "$.a[0]",
         "$['a']", "$[0]", "OUTCOME_OK", "NULL_VALUE")
KEYS = ("index", "id", "type", "function", "arguments", "name", "finish_reason", "delta", "tool_calls",
        "choices", "error", "object", "stop_reason", "partial_json", "input", "content_block", "usage",
        "custom", "function_call", "content", "role", "message", "events", "chunks", "profile",
        "tool_schemas", "meta", "expect", "$ref", "$defs", "required", "properties", "if",
        "candidates", "parts", "functionCall", "args", "partialArgs", "willContinue", "jsonPath", "stringValue",
        "numberValue", "boolValue", "nullValue", "finishReason", "promptFeedback", "blockReason", "thought",
        "thoughtSignature", "executableCode", "codeExecutionResult", "groundingMetadata")


def interesting_value(rng):
    r = rng.randrange(24)
    return [
        None, True, False, 0, -1, 1, 2, 10 ** 18, -(10 ** 18), 0.0, 1.5, -0.0, "", "x", [], {},
        Raw("1e400"), Raw("-1e400"), Raw("NaN"), Raw("1" + "0" * 5000), Raw("[" * 3000 + "]" * 3000),
        Raw("-0"), rng.choice(WORDS), [{}],
    ][r]


def collect(node, path=()):
    """Every (container, key, value) below node, iteratively."""
    found = []
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            for k, v in cur.items():
                found.append((cur, k, v))
                if isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(cur, list):
            for i, v in enumerate(cur):
                found.append((cur, i, v))
                if isinstance(v, (dict, list)):
                    stack.append(v)
    return found


def stream_of(doc):
    if not isinstance(doc, dict):
        return None
    for key in ("chunks", "events"):
        if isinstance(doc.get(key), list):
            return doc[key]
    return None


def fragment_sites(doc):
    """(container, key) of argument-fragment strings: function.arguments and partial_json."""
    sites = []
    for cont, key, val in collect(doc):
        if isinstance(val, str) and key in ("arguments", "partial_json"):
            sites.append((cont, key))
    return sites


def surrogate_text(text, rng):
    r = rng.randrange(6)
    at = rng.randint(0, len(text))
    if r == 0:
        return text[:at] + "\ud83d" + text[at:]
    if r == 1:
        return text[:at] + "\ude00" + text[at:]
    if r == 2:
        return text[:at] + "\\ud83d" + text[at:]
    if r == 3:
        return text[:at] + "\\ud83d\\ude00" + text[at:]
    if r == 4:
        return text[:at] + "\U0001F600" + text[at:]
    return text[:at] + "\\udc00" + text[at:]


def m_change_type(doc, rng, corpus):
    nodes = collect(doc)
    if nodes:
        cont, key, _ = rng.choice(nodes)
        cont[key] = interesting_value(rng)


def m_drop_key(doc, rng, corpus):
    dicts = [v for _, _, v in collect(doc) if isinstance(v, dict) and v] + [doc]
    d = rng.choice(dicts)
    if isinstance(d, dict) and d:
        del d[rng.choice(list(d))]


def m_add_key(doc, rng, corpus):
    dicts = [v for _, _, v in collect(doc) if isinstance(v, dict)] + [doc]
    d = rng.choice(dicts)
    if isinstance(d, dict):
        d[rng.choice(KEYS)] = interesting_value(rng)


def m_dup_key(doc, rng, corpus):
    nodes = [(c, k, v) for c, k, v in collect(doc) if isinstance(v, dict) and v]
    if not nodes:
        return
    cont, key, d = rng.choice(nodes)
    pairs = Pairs(d.items())
    k = rng.choice(list(d))
    pairs.pairs.insert(rng.randint(0, len(pairs.pairs)), (k, d[k] if rng.random() < 0.5 else interesting_value(rng)))
    cont[key] = pairs


def m_stream_edit(doc, rng, corpus):
    stream = stream_of(doc)
    if not stream:
        return
    r = rng.randrange(4)
    i, j = rng.randrange(len(stream)), rng.randrange(len(stream))
    if r == 0:
        stream[i], stream[j] = stream[j], stream[i]
    elif r == 1:
        stream.insert(j, copy.deepcopy(stream[i]))
    elif r == 2:
        del stream[i]
    else:
        stream.append(copy.deepcopy(stream[i]))


def m_splice(doc, rng, corpus):
    other = rng.choice(corpus)[2]
    if not isinstance(other, dict) or not isinstance(doc, dict):
        return
    r = rng.randrange(3)
    mine, theirs = stream_of(doc), stream_of(other)
    if r == 0 and mine is not None and theirs:
        a = rng.randrange(len(theirs))
        piece = copy.deepcopy(theirs[a:a + rng.randint(1, 4)])
        at = rng.randint(0, len(mine))
        mine[at:at] = piece
    elif r == 1 and isinstance(other.get("tool_schemas"), dict):
        doc["tool_schemas"] = copy.deepcopy(other["tool_schemas"])
    elif "profile" in other:
        doc["profile"] = other["profile"]


def m_number(doc, rng, corpus):
    nodes = [(c, k, v) for c, k, v in collect(doc) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not nodes:
        return
    cont, key, v = rng.choice(nodes)
    cont[key] = rng.choice((10 ** 18, -v if v else -1, float(v) if abs(v) < 1e300 else 0.5, v + 0.5 if abs(v) < 1e300 else 1.5,
                            True, False, None, str(v) if abs(v) < 1e300 else "1", Raw("1e400"), Raw("1" + "0" * 4000),
                            Raw("-0"), Raw("0.0"), 2 ** 63, -(2 ** 63) - 1, v + 1 if isinstance(v, int) else v))


def m_surrogate(doc, rng, corpus):
    sites = fragment_sites(doc) if rng.random() < 0.7 else []
    if not sites:
        sites = [(c, k) for c, k, v in collect(doc) if isinstance(v, str)]
    if sites:
        cont, key = rng.choice(sites)
        cont[key] = surrogate_text(cont[key], rng)


def m_string(doc, rng, corpus):
    sites = [(c, k) for c, k, v in collect(doc) if isinstance(v, str)]
    if not sites:
        return
    cont, key = rng.choice(sites)
    text = cont[key]
    r = rng.randrange(5)
    if r == 0:
        cont[key] = rng.choice(WORDS)
    elif r == 1:
        cont[key] = text[:rng.randint(0, len(text))]
    elif r == 2:
        cont[key] = text + rng.choice(("}", "{}", " ", "\\", "\"", ",", "\n"))
    elif r == 3:
        at = rng.randint(0, len(text))
        cont[key] = text[:at] + rng.choice(WORDS) + text[at:]
    else:
        cont[key] = text * 2


def m_split_fragment(doc, rng, corpus):
    """Split one argument fragment in two (on UTF-16 code units) -- meaning-preserving on the wire."""
    stream = stream_of(doc)
    if not stream:
        return
    sites = []
    for pos, item in enumerate(stream):
        if not isinstance(item, dict):
            continue
        delta = item.get("delta")
        if (item.get("type") == "content_block_delta" and isinstance(delta, dict)
                and isinstance(delta.get("partial_json"), str) and len(delta["partial_json"]) > 1):
            sites.append((pos, None, item, delta))
        for choice in item.get("choices") or [] if isinstance(item.get("choices"), list) else []:
            cdelta = choice.get("delta") if isinstance(choice, dict) else None
            calls = cdelta.get("tool_calls") if isinstance(cdelta, dict) else None
            for entry in calls if isinstance(calls, list) else []:
                fn = entry.get("function") if isinstance(entry, dict) else None
                index = entry.get("index") if isinstance(entry, dict) else None
                if (isinstance(fn, dict) and isinstance(fn.get("arguments"), str) and len(fn["arguments"]) > 1
                        and isinstance(index, int) and not isinstance(index, bool)):
                    sites.append((pos, choice, entry, fn))
    if not sites:
        return
    pos, choice, owner, holder = rng.choice(sites)
    key = "partial_json" if choice is None else "arguments"
    units = holder[key].encode("utf-16-le", "surrogatepass")
    cut = rng.randint(0, len(units) // 2) * 2
    holder[key] = units[:cut].decode("utf-16-le", "surrogatepass")
    second = units[cut:].decode("utf-16-le", "surrogatepass")
    if choice is None:
        twin = {"type": "content_block_delta", "index": owner.get("index"),
                "delta": {"type": "input_json_delta", "partial_json": second}}
    else:
        # the twin chunk keeps the original's top-level members ("object" among them: SDK stream helpers
        # drop chunks of another object type, so a twin without it would change the meaning)
        twin = {**{k: v for k, v in stream[pos].items() if k != "choices"},
                "choices": [{"index": choice.get("index"),
                             "delta": {"tool_calls": [{"index": owner.get("index"), "function": {"arguments": second}}]},
                             "finish_reason": choice.get("finish_reason")}]}
        choice["finish_reason"] = None
    stream.insert(pos + 1, twin)


def m_shuffle_keys(doc, rng, corpus):
    nodes = [(c, k, v) for c, k, v in collect(doc) if isinstance(v, dict) and len(v) > 1]
    if nodes:
        cont, key, d = rng.choice(nodes)
        items = list(d.items())
        rng.shuffle(items)
        cont[key] = dict(items)


STRUCT_MUTATORS = (m_change_type, m_drop_key, m_add_key, m_dup_key, m_stream_edit, m_stream_edit, m_splice,
                   m_number, m_number, m_surrogate, m_surrogate, m_string, m_split_fragment, m_split_fragment,
                   m_shuffle_keys)


# ---------------------------------------------------------------------------
# Byte-level mutations
# ---------------------------------------------------------------------------

BYTE_TOKENS = (b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00", b"\\ud800", b"NaN", b"1e400",
               b"[", b"]", b"{", b"}", b'"', b",", b":", b"\\", b"-", b"0", b"\xf0\x9f\x98", b"\x7f", b"\x0b",
               b"9" * 400, b"[" * 2000)


def mutate_bytes(data, rng, corpus):
    data = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        r = rng.randrange(9)
        at = rng.randint(0, len(data))
        if r == 0 and data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif r == 1:
            data[at:at] = bytes([rng.randrange(256)])
        elif r == 2 and data:
            del data[at:at + rng.randint(1, 16)]
        elif r == 3:
            data[at:at] = rng.choice(BYTE_TOKENS)
        elif r == 4 and data:
            j = rng.randrange(len(data))
            data[at:at] = data[j:j + rng.randint(1, 64)]
        elif r == 5:
            other = rng.choice(corpus)[1]
            j = rng.randrange(len(other))
            data[at:at] = other[j:j + rng.randint(1, 256)]
        elif r == 6:
            del data[at:]
        elif r == 7:
            data[0:0] = b"\xef\xbb\xbf"
        elif data:
            i = rng.randrange(len(data))
            data[i] = rng.choice(b'{}[]",:0123456789-+.eE \t\n\r\\u')
    return bytes(data)


def make_case(seed, number, corpus):
    """The bytes of case `number` of `seed`: deterministic."""
    rng = random.Random("%d:%d" % (seed, number))
    name, raw, doc = corpus[rng.randrange(len(corpus))]
    r = rng.random()
    if r < 0.15 or doc is None:
        return mutate_bytes(raw, rng, corpus), "bytes:" + name
    doc = json.loads(raw)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 5))):
        rng.choice(STRUCT_MUTATORS)(doc, rng, corpus)
    data = to_bytes(doc, rng)
    if r > 0.85:
        data = mutate_bytes(data, rng, corpus)
        return data, "struct+bytes:" + name
    return data, "struct:" + name


# ---------------------------------------------------------------------------
# Schema mode: generated schemas, patterns and instances
# ---------------------------------------------------------------------------

PATTERN_ATOMS = ("a", "b", "x", "-", "\\.", "[a-z]", "[^a]", ".", "\\d", "\\w", "\\s", "\\b", "\\B", "^", "$",
                 "[]", "[^]", "\\p{L}", "\\u00e9", "(?=a)", "(?!b)")
QUANTIFIERS = ("*", "+", "?", "{2}", "{1,3}", "{0,2}", "{2,}", "*?", "+?", "{1,1000}", "{0,100000}", "{100001}",
               "{" + "9" * 12 + "}")


def random_pattern(rng, depth=0):
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice(PATTERN_ATOMS)
    if roll < 0.5:
        return random_pattern(rng, depth + 1) + random_pattern(rng, depth + 1)
    if roll < 0.65:
        return "(?:" + "|".join(random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 4))) + ")"
    if roll < 0.7:
        return "(" + random_pattern(rng, depth + 1) + ")"
    atom = random_pattern(rng, depth + 1)
    if atom[-1:] in "*+?}" or atom in ("^", "$", "\\b", "\\B") or atom.startswith(("(?=", "(?!")):
        atom = "(?:" + atom + ")"
    return atom + rng.choice(QUANTIFIERS)


def random_subject(rng, limit):
    if rng.random() < 0.3:
        unit = "".join(rng.choice("ab x-.1\u00e9") for _ in range(rng.randint(1, 3)))
        return (unit * (limit // len(unit) + 1))[:rng.choice((limit, limit - 1, 40))] + rng.choice(("", "!", "\n"))
    return "".join(rng.choice("abx -.1_\n\u00e9") for _ in range(rng.randint(0, 12)))


def random_schema(rng, depth=0):
    if depth > 3 or rng.random() < 0.2:
        return rng.choice(({}, True, False, {"type": "string"}, {"pattern": random_pattern(rng)}))
    schema = {}
    for _ in range(rng.randint(1, 4)):
        key = rng.choice(("type", "pattern", "properties", "items", "anyOf", "oneOf", "allOf", "not", "enum",
                          "const", "uniqueItems", "patternProperties", "additionalProperties", "propertyNames",
                          "minLength", "maxLength", "required", "$ref", "multipleOf", "maximum", "prefixItems"))
        if key == "type":
            schema[key] = rng.choice(("string", "object", "array", "integer", ["string", "null"]))
        elif key == "pattern":
            schema[key] = random_pattern(rng)
        elif key in ("properties", "patternProperties"):
            names = [random_pattern(rng) if key == "patternProperties" else rng.choice("xyz") for _ in range(2)]
            schema[key] = {name: random_schema(rng, depth + 1) for name in names}
        elif key in ("items", "not", "additionalProperties", "propertyNames"):
            schema[key] = random_schema(rng, depth + 1)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            schema[key] = [random_schema(rng, depth + 1) for _ in range(rng.randint(1, 3))]
        elif key in ("enum",):
            schema[key] = [random_subject(rng, 10), 1, None, [1]]
        elif key == "const":
            schema[key] = random_subject(rng, 5)
        elif key == "uniqueItems":
            schema[key] = True
        elif key in ("minLength", "maxLength"):
            schema[key] = rng.randint(0, 5)
        elif key == "required":
            schema[key] = ["x"]
        elif key == "$ref":
            schema[key] = "#"
        elif key == "multipleOf":
            schema[key] = rng.choice((0.01, 3, 1e-300))
        else:
            schema[key] = rng.choice((10, 1e308, 10 ** 40))
    return schema


def random_instance(rng, limit, depth=0):
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return random_subject(rng, limit)
    if roll < 0.6:
        return {rng.choice(("x", "y", "z", random_subject(rng, 20))): random_instance(rng, limit, depth + 1)
                for _ in range(rng.randint(0, 3))}
    if roll < 0.8:
        return [random_instance(rng, limit, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice((1, 1.5, None, True, 10 ** 30, 0.01))


def make_schema_case(seed, number):
    """An openai envelope with one call of a generated schema and arguments: deterministic."""
    rng = random.Random("schema:%d:%d" % (seed, number))
    limit = vts.Limits().max_pattern_subject
    schema = {"type": "object", "properties": {"x": random_schema(rng)}}
    arguments = json.dumps({"x": random_instance(rng, limit)})
    doc = {"profile": "openai", "tool_schemas": {"f": schema}, "chunks": [
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]}
    return json.dumps(doc, ensure_ascii=True).encode("ascii"), "schema"


def patterns_in(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "pattern" and isinstance(item, str):
                yield item
            if key == "patternProperties" and isinstance(item, dict):
                yield from item
            yield from patterns_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from patterns_in(item)


class _Unbounded:
    count, max_evaluations, max_subject = 0, 10 ** 12, 10 ** 6


def _reference_search(python, subject, seconds=1.0):
    """re's verdict as the reference, or None when it backtracks longer than `seconds`.

    The patterns that reach this check are not all proven for re (that is the point of
    the simulator), so the reference run is cut short with an alarm where one exists.
    """
    import signal
    import threading

    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return python.search(subject) is not None if len(subject) <= 6 else None

    class _Late(Exception):
        pass

    def late(*_):
        raise _Late()

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return python.search(subject) is not None
    except _Late:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_patterns(data, rng_seed):
    """Simulator and re agree on every parseable pattern; proven patterns are fast on worst cases."""
    import re

    problems = []
    doc = json.loads(data)
    rng = random.Random(rng_seed)
    limit = vts.Limits().max_pattern_subject
    for source in sorted(set(patterns_in(doc.get("tool_schemas")))):   # sorted: the same case in every process
        try:
            tree = vts._RxParser(source).parse()
            matcher = vts._rx_compile(source, limit)
            python = re.compile(vts._rx_emit(tree), re.ASCII)
        except (vts._RxError, vts._RxTooBig, re.error, RecursionError, OverflowError):
            continue
        try:
            code = vts._RxBuilder().program(tree)
        except vts._RxTooBig:
            code = None
        for _ in range(4):
            subject = random_subject(rng, 12)
            if code is None:
                break
            reference = _reference_search(python, subject)   # re itself may backtrack for ages here
            if reference is not None and vts._rx_vm_search(code, subject, 0, False, _Unbounded(), {}) != reference:
                problems.append("the simulator and re disagree on pattern %r, subject %r" % (source, subject))
                break
        if matcher.regex is not None:
            for subject in ("a" * limit, "ab" * (limit // 2), "a " * (limit // 2), "a-" * (limit // 2),
                            random_subject(rng, limit)):
                started = time.monotonic()
                matcher.regex.search(subject[:limit])
                if time.monotonic() - started > 1.0:
                    problems.append("a pattern proven for re took %.1f s: %r" % (time.monotonic() - started, source))
                    break
    return problems


def check_in_thread(data, report, slow_seconds):
    """The same bytes in a worker thread: it ends in time and agrees with the main thread."""
    import threading

    out = []
    worker = threading.Thread(target=lambda: out.append(vts.validate_bytes(data)), daemon=True)
    worker.start()
    worker.join(slow_seconds)
    if worker.is_alive():
        return ["a worker thread was still running after %.0f s (frozen?)" % slow_seconds]
    if not out:
        return ["validate_bytes raised in a worker thread"]
    wall_clock = any("longer than" in f["message"] and " s " in f["message"] + " "
                     for r in (report or {"findings": []}, out[0]) for f in r["findings"])
    if report is not None and not wall_clock and vts.render_json(out[0]) != vts.render_json(report):
        return ["a worker thread gave another report than the main thread"]
    return []


# ---------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------


def utf16_normal(value):
    """value with every string read as UTF-16 code units: a surrogate pair kept as two code points
    (the plain concatenation of fragments) equals the character JSON escapes turn it into."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, list):
        return [utf16_normal(v) for v in value]
    if isinstance(value, dict):
        return {utf16_normal(k): utf16_normal(v) for k, v in value.items()}
    return value


def check_report(report):
    problems = []
    if not isinstance(report, dict):
        return ["report is %s, not a dict" % type(report).__name__]
    for key in REPORT_KEYS:
        if key not in report:
            problems.append("report lacks %r" % key)
    if problems:
        return problems
    status = report["status"]
    if status not in EXIT_BY_STATUS:
        problems.append("status %r" % (status,))
    if report["executable"] is not (status == "pass"):
        problems.append("executable=%r with status %r" % (report["executable"], status))
    if report["applicable"] is not (status != "not_applicable"):
        problems.append("applicable=%r with status %r" % (report["applicable"], status))
    codes = [f.get("code") for f in report["findings"]]
    unknown = sorted({c for c in codes if c not in CODES}, key=str)
    if unknown:
        problems.append("finding codes outside SPEC: %r" % unknown)
    if status == "blocked" and not codes:
        problems.append("blocked without a finding")
    if status in ("pass", "not_applicable") and codes:
        problems.append("%s with findings %r" % (status, codes[:5]))
    if status == "not_applicable" and report["calls"]:
        problems.append("not_applicable with calls")
    if status == "pass":
        if not report["calls"]:
            problems.append("pass without a call")
        for call in report["calls"]:
            if call.get("state") != "validated" or call.get("findings"):
                problems.append("pass with a call in state %r / findings %r" % (call.get("state"), call.get("findings")))
    for call in report["calls"]:
        for key in CALL_KEYS:
            if key not in call:
                problems.append("call lacks %r" % key)
        if call.get("state") not in ("validated", "blocked"):
            problems.append("call state %r" % (call.get("state"),))
        if not isinstance(call.get("arguments"), str):
            problems.append("call arguments not a string")
    seen_none, last = False, -1
    for f in report["findings"]:
        pos = f.get("position")
        if pos is None:
            seen_none = True
        elif not isinstance(pos, int) or isinstance(pos, bool) or pos < 0:
            problems.append("finding position %r" % (pos,))
        elif seen_none or pos < last:
            problems.append("findings not in stream order (position %r after %r)" % (pos, "null" if seen_none else last))
            break
        else:
            last = pos
    order = [((c.get("choice") if c.get("choice") is not None else -1), c.get("index")) for c in report["calls"]]
    try:
        if order != sorted(order):
            problems.append("calls not sorted by choice then index")
    except TypeError:
        problems.append("call choice/index are not comparable integers: %r" % order[:4])
    if len(report["findings"]) < 1000:
        listed = report["findings"]
        for call in report["calls"]:
            for f in call.get("findings") or []:
                if f not in listed:
                    problems.append("a call finding (%s) is missing from the report's findings" % f.get("code"))
                    break
    return problems


def check_in_process(data, slow_seconds):
    """(problems, report or None, rendered JSON or None)."""
    started = time.monotonic()
    try:
        report = vts.validate_bytes(data)
    except BaseException as exc:  # noqa: BLE001 - the invariant is that nothing escapes
        if isinstance(exc, KeyboardInterrupt):
            raise
        return ["exception escaped validate_bytes: %s: %s" % (type(exc).__name__, str(exc)[:200])], None, None
    elapsed = time.monotonic() - started
    problems = check_report(report)
    if elapsed > slow_seconds:
        problems.append("slow: %.1f s in-process" % elapsed)
    try:
        rendered = vts.render_json(report)
        rendered.encode("ascii")
        if utf16_normal(json.loads(rendered)) != utf16_normal(report):
            problems.append("render_json does not round-trip the report")
        vts.render_text(report)
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        problems.append("rendering failed: %s: %s" % (type(exc).__name__, str(exc)[:200]))
        rendered = None
    # The second run takes another path: the whole-document parse (the reader declining) or
    # tiny read batches with runs of deltas looked for in any stream, however short.  Any
    # difference is nondeterminism or a fast path changing a verdict.
    whole = len(data) % 2 == 0
    saved = vts._stream_envelope, vts._BATCH_CHARS, vts._RUNS_MIN_CHARS
    if whole:
        vts._stream_envelope = lambda text, limits: None
    else:
        vts._BATCH_CHARS, vts._RUNS_MIN_CHARS = 7, 0
    try:
        again = vts.validate_bytes(data)
        if vts.render_json(again) != rendered:
            problems.append("a second run (%s) gave a different report"
                            % ("whole-document parse" if whole else "7-character read batches, runs everywhere"))
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        problems.append("second run raised %s" % type(exc).__name__)
    finally:
        vts._stream_envelope, vts._BATCH_CHARS, vts._RUNS_MIN_CHARS = saved
    return problems, report, rendered


def run_cli(args, data, timeout=120):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run([sys.executable, SCRIPT, *args], input=data, capture_output=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, b"", b"timeout"
    return proc.returncode, proc.stdout, proc.stderr


def check_cli(data, report, variant):
    problems = []
    args = {"json": ["-"], "text": ["-", "--report", "text"], "expect": ["-", "--expect"]}[variant]
    code, out, err = run_cli(args, data)
    if code is None:
        return ["CLI (%s) timed out" % variant]
    if code not in (0, 1, 2, 3):
        problems.append("CLI (%s) exit code %r" % (variant, code))
    if b"Traceback" in err:
        problems.append("CLI (%s) printed a Traceback: %r" % (variant, err[-300:]))
    if code == 3:
        if report is not None:
            problems.append("CLI (%s) exit 3 (%r) but the in-process run gave a verdict" % (variant, err[:200]))
        if out:
            problems.append("CLI exit 3 with a report on stdout")
        return problems
    if variant == "text":
        if report is not None and code != EXIT_BY_STATUS[report["status"]]:
            problems.append("CLI text exit %d but status %r" % (code, report["status"]))
        header, _, rest = out.decode("utf-8", "replace").partition("\n")
        first = rest.split("\n", 1)[0]
        if header != "== -" or not first.startswith(("PASS", "BLOCKED", "NOT APPLICABLE")):
            problems.append("text report starts with %r" % (header + "\n" + first)[:80])
        return problems
    try:
        parsed = json.loads(out.decode("utf-8"))
    except ValueError as exc:
        return problems + ["CLI (%s) stdout is not one JSON document: %s" % (variant, exc)]
    problems += check_report({k: v for k, v in parsed.items() if k != "expectation"} if isinstance(parsed, dict) else parsed)
    if not isinstance(parsed, dict):
        return problems
    if parsed.pop("fixture", None) != "-":
        problems.append("CLI (%s) report does not name its fixture" % variant)
    status = parsed.get("status")
    if variant == "json":
        if code != EXIT_BY_STATUS.get(status):
            problems.append("CLI exit %d but status %r" % (code, status))
        if parsed.get("executable") is not (status == "pass"):
            problems.append("CLI executable %r with status %r" % (parsed.get("executable"), status))
    else:
        matched = (parsed.get("expectation") or {}).get("matched")
        if code not in (0, 1) or (code == 0) is not (matched is True):
            problems.append("CLI --expect exit %d with expectation %r" % (code, parsed.get("expectation")))
        parsed.pop("expectation", None)
    if report is not None and utf16_normal(parsed) != utf16_normal(report):
        problems.append("CLI (%s) report differs from the in-process report" % variant)
    return problems


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


class FuzzResult:
    def __init__(self):
        self.cases = 0
        self.cli_runs = 0
        self.failures = []   # dicts: case, origin, problems, path
        self.statuses = {}
        self.elapsed = 0.0

    def summary(self):
        return ("%d cases (%s), %d CLI runs, %d failures, %.1f s"
                % (self.cases, ", ".join("%s %d" % kv for kv in sorted(self.statuses.items())),
                   self.cli_runs, len(self.failures), self.elapsed))


def save_failure(folder, seed, number, data, origin, problems, quiet):
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    path = os.path.join(folder, "seed%d-case%d-%s.json" % (seed, number, digest))
    with open(path, "wb") as handle:
        handle.write(data)
    if not quiet:
        print("FAILURE case %d (%s), saved to %s" % (number, origin, path))
        for problem in problems:
            print("  - " + problem)
        preview = data[:600]
        print("  input (%d bytes): %r%s" % (len(data), preview, " ..." if len(data) > 600 else ""))
    return path


def check_metamorphic(data, report, number):
    """A pass must survive meaning-preserving rewrites: re-serialisation with other whitespace and
    key order, a fragment split on UTF-16 code units, and ignorable noise (usage chunk / ping)."""
    rng = random.Random("meta:%d" % number)
    doc = json.loads(data)
    m_shuffle_keys(doc, rng, None)
    m_split_fragment(doc, rng, None)
    stream = stream_of(doc)
    if doc.get("profile") in ("openai", "mistral") and stream is not None:
        stream.insert(rng.randint(0, len(stream)), {"choices": [], "usage": {"total_tokens": 1}})
    elif doc.get("profile") == "anthropic" and stream:
        stream.insert(rng.randint(1, max(1, len(stream) - 1)), {"type": "ping"})   # before message_stop
    elif doc.get("profile") == "gemini" and stream is not None:
        stream.insert(rng.randint(0, len(stream)), {"usageMetadata": {"totalTokenCount": 1}})
    again = vts.validate_bytes(json.dumps(doc, indent=rng.choice((None, 1)), ensure_ascii=True).encode("ascii"))
    # Arguments that arrive as an object (gemini args, an anthropic start input) are written in the
    # order received, so a shuffled object is the same value with other text: compare the values.
    as_value = doc.get("profile") in ("gemini", "anthropic")
    want = [{k: c[k] for k in ("choice", "index", "id", "name", "arguments")} for c in report["calls"]]
    got = [{k: c[k] for k in ("choice", "index", "id", "name", "arguments")} for c in again["calls"]]
    if as_value:
        for call in want + got:
            try:
                call["arguments"] = json.loads(call["arguments"])
            except ValueError:
                pass
    if again["status"] != "pass" or utf16_normal(got) != utf16_normal(want):
        return ["metamorphic: a meaning-preserving rewrite of a passing input gave %s %r"
                % (again["status"], [f["code"] for f in again["findings"]][:5])]
    return []


def check_case(data, number, cli_every, slow_seconds, result, mode="stream"):
    problems, report, _ = check_in_process(data, slow_seconds)
    if mode == "schema" or (mode == "thread" and number % 2):
        problems += check_patterns(data, number)
    if mode == "thread":
        problems += check_in_thread(data, report, slow_seconds)
    if report is not None and isinstance(report, dict):
        status = report.get("status")
        result.statuses[status] = result.statuses.get(status, 0) + 1
        if status == "pass" and not problems:
            try:
                problems += check_metamorphic(data, report, number)
            except Exception as exc:  # noqa: BLE001 - reported, never hidden
                problems.append("metamorphic check raised %s: %s" % (type(exc).__name__, str(exc)[:200]))
    if cli_every and number % cli_every == 0:
        variant = ("json", "json", "text", "expect")[(number // cli_every) % 4]
        result.cli_runs += 1
        problems += check_cli(data, report, variant)
    return problems


def make_mode_case(mode, seed, number, items):
    if mode == "schema" or (mode == "thread" and number % 2):
        return make_schema_case(seed, number)
    return make_case(seed, number, items)


def run_fuzz(seed=0, seconds=60.0, corpus=DEFAULT_CORPUS, cli_every=100, max_cases=None,
             failures_dir=DEFAULT_FAILURES, quiet=False, slow_seconds=10.0, mode="stream"):
    """Run the fuzzer; returns a FuzzResult (the CI test imports this)."""
    items = load_corpus(corpus)
    result = FuzzResult()
    started = time.monotonic()
    number = 0
    while time.monotonic() - started < seconds and (max_cases is None or number < max_cases):
        data, origin = make_mode_case(mode, seed, number, items)
        problems = check_case(data, number, cli_every, slow_seconds, result, mode)
        if problems:
            path = save_failure(failures_dir, seed, number, data, origin, problems, quiet)
            result.failures.append({"case": number, "origin": origin, "problems": problems, "path": path})
        number += 1
        result.cases = number
    result.elapsed = time.monotonic() - started
    return result


def run_atheris(argv, corpus):
    try:
        import atheris  # type: ignore
    except ImportError:
        print("fuzz: atheris is not installed; use the built-in driver (no --atheris)", file=sys.stderr)
        return 2

    def one_input(data):
        problems, _, _ = check_in_process(bytes(data), 10.0)
        if problems:
            raise AssertionError("; ".join(problems))

    atheris.Setup([sys.argv[0]] + list(argv), one_input)
    atheris.Fuzz()
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="fuzz.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument("--cli-every", type=int, default=100)
    parser.add_argument("--max-cases", type=int, default=None)
    parser.add_argument("--failures-dir", default=DEFAULT_FAILURES)
    parser.add_argument("--replay", type=int, default=None)
    parser.add_argument("--slow-seconds", type=float, default=10.0)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--atheris", action="store_true")
    parser.add_argument("--mode", choices=("stream", "schema", "thread"), default="stream")
    args, rest = parser.parse_known_args(argv)
    if args.atheris:
        return run_atheris(rest, args.corpus)
    if not os.path.isdir(args.corpus):
        print("fuzz: corpus %s is not a folder" % args.corpus, file=sys.stderr)
        return 2
    if rest:
        parser.error("unrecognized arguments: %s" % " ".join(rest))
    if args.replay is not None:
        items = load_corpus(args.corpus)
        data, origin = make_mode_case(args.mode, args.seed, args.replay, items)
        result = FuzzResult()
        problems = check_case(data, args.replay, 1, args.slow_seconds, result, args.mode)
        print("case %d of seed %d (%s), %d bytes:" % (args.replay, args.seed, origin, len(data)))
        print(repr(data[:4000]))
        for problem in problems:
            print("  - " + problem)
        return 1 if problems else 0
    result = run_fuzz(args.seed, args.seconds, args.corpus, args.cli_every, args.max_cases,
                      args.failures_dir, args.quiet, args.slow_seconds, args.mode)
    print(result.summary())
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())
