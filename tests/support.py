"""Shared helpers for the test suite: import the single-file tool and run its CLI.

Full suite (what CI runs):

    PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests -p 'test_*.py'

Quick run of the in-memory tests (no fuzzing, no random or work budget run to its end, no SDK, no big
inputs, no process but one conform run), about 18 s of CPU:

    PYTHONDONTWRITEBYTECODE=1 python3 tests/quick.py

It sets VTS_QUICK=1, under which every test marked @slow (it starts a process, fuzzes, runs a random
budget, runs a work budget to its end or feeds megabytes) is skipped with the reason "slow: ...", and leaves out test_readme,
test_adapters and test_sdk_differential (they exist to run other programs).  VTS_QUICK=1 with the
full command above also works (those three modules then run as usual).  Nothing else changes: the
quick run is a subset of the full run.

run_cli() runs the command line in this process (vts.main with its standard streams swapped), which
costs no interpreter start and no new compile of the 9,000-line script; run_process() starts the
real script in a subprocess and is kept for what only a process shows (exit at interpreter level,
signals, closed or full standard streams, resource limits, the installed command).
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "validate_tool_stream.py")
FIXTURES = os.path.join(ROOT, "fixtures")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import validate_tool_stream as vts  # noqa: E402  (path set up just above)

QUICK = os.environ.get("VTS_QUICK", "") not in ("", "0")
ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")   # for every subprocess the tests start


def slow(reason):
    """Mark a test (or a whole class) that the quick run skips; `reason` says why it is slow."""
    return unittest.skipIf(QUICK, f"slow: {reason} (VTS_QUICK=1)")


def fixture_paths():
    """Every bundled fixture, sorted, as paths relative to fixtures/."""
    found = []
    for folder, _, files in os.walk(FIXTURES):
        for name in files:
            if name.endswith(".json"):
                found.append(os.path.relpath(os.path.join(folder, name), FIXTURES))
    return sorted(found)


_FIXTURE_CACHE = {}


def load_fixture(relpath):
    """(bytes, parsed JSON) of one bundled fixture; read and parsed once per run, a fresh copy each call."""
    if relpath not in _FIXTURE_CACHE:
        with open(os.path.join(FIXTURES, relpath), "rb") as handle:
            _FIXTURE_CACHE[relpath] = handle.read()
    data = _FIXTURE_CACHE[relpath]
    return data, json.loads(data)


_REPORT_CACHE = {}


def fixture_report(relpath):
    """vts.validate_bytes of one bundled fixture as written, computed once per run and shared by every
    module that checks it (read it, never change it)."""
    if relpath not in _REPORT_CACHE:
        _REPORT_CACHE[relpath] = vts.validate_bytes(load_fixture(relpath)[0])
    return _REPORT_CACHE[relpath]


_ENVELOPE_REPORT_CACHE = {}


def fixture_envelope_report(relpath):
    """vts.validate_envelope of one bundled fixture's parsed document, computed once per run and shared
    (read it, never change it)."""
    if relpath not in _ENVELOPE_REPORT_CACHE:
        _ENVELOPE_REPORT_CACHE[relpath] = vts.validate_envelope(load_fixture(relpath)[1])
    return _ENVELOPE_REPORT_CACHE[relpath]


def one_per_shape(places, rng, path=lambda place: place, kind=lambda place: ()):
    """One of `places` per class, chosen with rng (a seeded random.Random).  A class is a place's
    kind and its path with every list index replaced by "*": every member name at every depth is
    kept, and of the places that differ only by which list item they are in, one is taken."""
    classes = {}
    for place in places:
        shape = tuple(kind(place)) + tuple("*" if isinstance(key, int) else key for key in path(place))
        classes.setdefault(shape, []).append(place)
    return [rng.choice(members) for members in classes.values()]


def copy_along(doc, path):
    """(copy, holder): a copy of doc in which only the containers on path[:-1] are new (the rest is
    shared), and the copied container that holds path[-1] -- change it without touching doc.  For
    tests that plant one thing at a time in a fixture: the validator never changes its input."""
    out = dict(doc)
    holder = out
    for key in path[:-1]:
        child = holder[key]
        holder[key] = child = dict(child) if isinstance(child, dict) else list(child)
        holder = child
    return out, holder


def write(folder, name, data):
    """Write bytes or text (UTF-8) to folder/name, making parent folders; returns the path."""
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


class _Stdin:
    """Standard input as the CLI reads it: text with a binary .buffer beneath."""

    def __init__(self, data):
        self.buffer = io.BytesIO(data or b"")

    def read(self, *args):
        return self.buffer.read(*args).decode("utf-8")


def run_cli(*args, stdin=None, decode="strict", encoding="utf-8"):
    """Run the CLI in this process; returns (exit code, stdout, stderr) as the real command would.

    vts.main() is the script's whole entry point (`sys.exit(main())`), so the exit code, the bytes on
    standard output and on standard error are the ones a subprocess would give; the streams are
    UTF-8 text over bytes (what the command has under the test environment's C.UTF-8 locale).
    `decode` is how the captured bytes are decoded ("surrogateescape" keeps a stray byte visible);
    `encoding` is the streams' encoding, as PYTHONIOENCODING would set it for a process."""
    out = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict", newline=None)
    err = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="backslashreplace", newline=None)
    saved_argv = sys.argv
    saved_columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = saved_columns or "80"   # argparse wraps --help as for a pipe (80 columns)
    sys.argv = [SCRIPT, *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            saved_stdin, sys.stdin = sys.stdin, _Stdin(stdin)
            try:
                code = vts.main(list(args))
            finally:
                sys.stdin = saved_stdin
    finally:
        sys.argv = saved_argv
        if saved_columns is None:
            del os.environ["COLUMNS"]
    out.flush()
    err.flush()
    return code, out.buffer.getvalue().decode(encoding, decode), err.buffer.getvalue().decode(encoding, decode)


def run_conform(*fixtures, cmd, extra=()):
    """`conform --adapter-cmd CMD [EXTRA] --report json FIXTURES` in this process: (exit code, its records, its
    summary, stderr)."""
    code, out, err = run_cli("conform", "--adapter-cmd", cmd, *extra, "--report", "json", *fixtures)
    lines = [json.loads(line) for line in out.splitlines()]
    return code, lines[:-1], lines[-1]["summary"], err


def run_process(*args, stdin=None, timeout=120, decode="strict", **popen):
    """Run the real script in a subprocess; returns (exit code, stdout, stderr) as text."""
    proc = subprocess.run([sys.executable, SCRIPT, *args], input=stdin, capture_output=True, env=ENV,
                          timeout=timeout, **popen)
    return proc.returncode, proc.stdout.decode("utf-8", decode), proc.stderr.decode("utf-8", decode)


def envelope(profile="openai", stream=None, schemas=None, **extra):
    """A minimal in-memory envelope for unit tests."""
    doc = {"profile": profile, "tool_schemas": schemas if schemas is not None else {}}
    doc["events" if profile == "anthropic" else "chunks"] = stream if stream is not None else []
    doc.update(extra)
    return doc


def codes(report):
    return [finding["code"] for finding in report["findings"]]


def frames_deep(call):
    """How many Python frames deep call() goes at its deepest, counted from its caller's frame: what a
    nested value costs of the interpreter's recursion limit (a walk that goes through a helper at each
    level costs twice the frames of one that calls itself, and reaches the limit at half the depth)."""
    def depth(frame):
        count = 0
        while frame is not None:
            count, frame = count + 1, frame.f_back
        return count

    base, deepest = depth(sys._getframe()), [0]

    def watch(frame, event, arg):
        if event == "call":
            deepest[0] = max(deepest[0], depth(frame))

    sys.setprofile(watch)
    try:
        call()
    finally:
        sys.setprofile(None)
    return deepest[0] - base


# --- stream builders and checks shared by several modules ----------------------------------------


SCHEMAS = {"f": {"type": "object"}, "g": {"type": "object"}}


def positions(report):
    return [(f["code"], f["position"]) for f in report["findings"]]


def code_set(report):
    return {f["code"] for f in report["findings"]}


def judge(profile, stream, schemas=SCHEMAS):
    return vts.validate_envelope(json.loads(json.dumps(envelope(profile, stream, schemas))))


def judge_events(profile, events, schemas=SCHEMAS):
    return vts.validate_envelope({"profile": profile, "tool_schemas": schemas, "events": events})


def room_fast_paths_agree(case, profile, streams, schemas=SCHEMAS):
    """Assert that each (name, events) of streams gets the same report from the room's fast answers
    (plain_fragment, and translate() answering a quiet event itself) as from its general path
    (plain_fragment declining, translate() the room's generator _translate); returns [answered,
    declined]: how often a fast answer was given and refused, for the caller to check both happen."""
    cls = type(vts.PROFILES[profile].wire.normalizer(vts.Limits()))
    plain, translate, counts = cls.plain_fragment, cls.translate, [0, 0]

    def spy_plain(self, item):
        hit = plain(self, item)
        counts[hit is None] += 1
        return hit

    def spy_translate(self, pos, item):
        events = translate(self, pos, item)
        counts[events != ()] += 1
        return events

    for name, events in streams:
        doc = {"profile": profile, "tool_schemas": schemas, "events": events}
        with case.subTest(stream=name):
            with mock.patch.object(cls, "plain_fragment", lambda self, item: None), \
                    mock.patch.object(cls, "translate", cls._translate):
                general = vts.validate_envelope(json.loads(json.dumps(doc)))
            with mock.patch.object(cls, "plain_fragment", spy_plain), \
                    mock.patch.object(cls, "translate", spy_translate):
                case.assertEqual(vts.validate_envelope(json.loads(json.dumps(doc))), general)
    return counts


def room_runs_agree(case, profile, turn, probes, places, schemas=SCHEMAS):
    """Assert that validate_bytes of the envelope of turn (a list of events), with each probe (name, the JSON
    text of one event, or None) written in at each place (name, index into turn), and written compact and as capture
    lays it out, reports what the room's general path does with the whole document's parse (no fast answer, see
    room_fast_paths_agree); runs are looked for however short the text (_RUNS_MIN_CHARS 0).  Returns how many
    runs the gate was handed (StreamGate._feed_run)."""
    taken, feed_run = [0], vts.StreamGate._feed_run
    cls = type(vts.PROFILES[profile].wire.normalizer(vts.Limits()))

    def spy(self, run, position):
        taken[0] += 1
        return feed_run(self, run, position)

    head = json.dumps({"profile": profile, "tool_schemas": schemas})[:-1]
    for layout, separators in (("compact", (",", ":")), ("capture", (", ", ": "))):
        texts = [json.dumps(event, separators=separators, ensure_ascii=False) for event in turn]
        for (name, probe), (where, at) in [(probe, place) for probe in probes for place in places]:
            written = texts[:at] + [probe] + texts[at:] if probe is not None else texts   # None: the turn as it is
            blob = (head + ', "events": [\n' + ",\n".join(written) + "\n]}").encode()
            with case.subTest(layout=layout, probe=name, place=where):
                with mock.patch.object(vts, "_stream_envelope", lambda text, limits: None), \
                        mock.patch.object(cls, "plain_fragment", lambda self, item: None), \
                        mock.patch.object(cls, "translate", cls._translate):
                    whole = vts.validate_bytes(blob)
                with mock.patch.object(vts, "_RUNS_MIN_CHARS", 0), mock.patch.object(vts.StreamGate, "_feed_run", spy):
                    case.assertEqual(vts.validate_bytes(blob), whole)
    return taken[0]


def chat_chunk(*entries, finish=None, choice=0, **delta):
    body = dict(delta)
    if entries:
        body["tool_calls"] = list(entries)
    return {"choices": [{"index": choice, "delta": body, "finish_reason": finish}]}


def chat_call(index=0, id=None, name=None, args=None, **extra):
    entry = {"index": index, "function": {}}
    if id is not None:
        entry["id"] = id
    if name is not None:
        entry["function"]["name"] = name
    if args is not None:
        entry["function"]["arguments"] = args
    entry.update(extra)
    return entry


INT_SCHEMAS = {"f": {"type": "object", "properties": {"a": {"type": "integer"}}}}


def orc(delta, finish=None, native=None, choice=0, **top):
    body = {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "provider": "P",
            "choices": [{"index": choice, "delta": delta, "finish_reason": finish, "native_finish_reason": native}]}
    body.update(top)
    return body


def chat(stream, profile="openai", schemas=INT_SCHEMAS, **extra):
    return vts.validate_envelope({"profile": profile, "tool_schemas": schemas, "chunks": stream, **extra})


def anthropic_turn(pieces=(), start_input=None):
    events = [{"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
              {"type": "content_block_start", "index": 0, "content_block": {
                  "type": "tool_use", "id": "toolu_1", "name": "f", "input": start_input or {}}}]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}
               for p in pieces]
    return events + [{"type": "content_block_stop", "index": 0},
                     {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, {"type": "message_stop"}]


def gem(parts, finish=None, **candidate):
    body = {"content": {"role": "model", "parts": parts}, **candidate}
    if finish is not None:
        body["finishReason"] = finish
    return {"candidates": [body]}


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


META = {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}}


def bedrock_call(args='{"a":1}', **kw):
    return [MSG_START, b_start(**kw), b_delta(0, toolUse={"input": args}), b_stop(), MSG_STOP, META]


class Folder:
    def __init__(self, files):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = self.tmp.name
        for name, content in files.items():
            full = os.path.join(self.path, name)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as handle:
                handle.write(content if isinstance(content, str) else json.dumps(content, indent=2))

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.tmp.cleanup()

    def file(self, name):
        return os.path.join(self.path, name)


PASS_DOC = envelope("openai", [
    {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"ci"}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": "ty\":\"Paris\"}"}}]}, "finish_reason": "tool_calls"}]},
], {"weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})


BLOCKED_DOC = dict(PASS_DOC, chunks=PASS_DOC["chunks"][:1])


def one_chunk_per_line(doc):
    """An envelope written with each chunk on its own line (so chunk N starts on a known line)."""
    head = json.dumps({k: v for k, v in doc.items() if k != "chunks"})[:-1]
    lines = [head + ',\n "chunks": [']
    for n, item in enumerate(doc["chunks"]):
        lines.append("  " + json.dumps(item) + ("," if n < len(doc["chunks"]) - 1 else ""))
    lines.append(" ]\n}\n")
    return "\n".join(lines)


def eventstream(events, corrupt=False):
    """A binary AWS event stream: one frame per {member: payload} event (exception members as exceptions)."""
    import struct
    import zlib

    def header(name, value):
        name, value = name.encode(), value.encode()
        return bytes([len(name)]) + name + bytes([7]) + struct.pack(">H", len(value)) + value

    out = b""
    for event in events:
        (member, payload), = event.items()
        kind = "exception" if member.endswith("Exception") else "event"
        headers = header(":message-type", kind) + header(":event-type" if kind == "event" else ":exception-type",
                                                         member) + header(":content-type", "application/json")
        body = json.dumps(payload).encode()
        prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
        message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
        out += message + struct.pack(">I", zlib.crc32(message) ^ (1 if corrupt else 0))
    return out


def importable(module):
    """Whether an optional package (an SDK) can be imported here."""
    try:
        __import__(module)
        return True
    except ImportError:
        return False


class ServedFixtures:
    """A test class mixin: every fixture under SERVE (default: all of fixtures/) served by `serve` on loopback for
    the class (`served`, `server`, `url` with SCHEME, http or ws); the class is skipped, naming MODULE, when MODULE
    is set and that package is not installed."""

    MODULE = ""
    SERVE = FIXTURES
    SCHEME = "http"

    @classmethod
    def setUpClass(cls):
        import threading

        if cls.MODULE and not importable(cls.MODULE):
            raise unittest.SkipTest(f"{cls.MODULE} is not installed (python3 tests/adapters/setup.py)")
        cls.served, _ = vts.serve_plan([cls.SERVE])
        cls.server = vts.make_server(cls.served)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        host, port = cls.server.server_address[:2]
        cls.url = f"{cls.SCHEME}://{host}:{port}/"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()
