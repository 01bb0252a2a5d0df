#!/usr/bin/env python3
"""Resource figures for hostile inputs: wall time and peak memory of one validation each.

Not a unit test (the unit tests check verdicts, not speed).  Standard library only, Linux or
macOS (peak memory is the child's maximum resident set size from wait4).

Each case builds one hostile input in a child process (so the parent stays small: Linux counts a
process's memory before exec in its peak), writes it to a temporary file and validates it in a
fresh process, either through the CLI (`validate_tool_stream.py FILE`) or, for the "thread" cases, with
`validate_bytes` called from a worker thread (the counted work bounds stop a pattern in both;
no clock runs unless one is asked for).  Per case it prints the input size, the wall time, the peak resident
memory of that process (the interpreter alone is about 10 MiB), the status and the finding codes.
A case fails when its run takes longer than --max-seconds or a traceback is printed.

Usage:
  python3 tests/bench/hostile.py                 # every case (about a minute)
  python3 tests/bench/hostile.py --cases dots,findings-20MB
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # tests/bench/ -> the repository
SCRIPT = ROOT / "scripts" / "validate_tool_stream.py"

THREAD_RUNNER = """
import json, sys, threading
sys.path.insert(0, sys.argv[1])
import validate_tool_stream as vts
data = open(sys.argv[2], "rb").read()
out = []
worker = threading.Thread(target=lambda: out.append(vts.validate_bytes(data)), daemon=True)
worker.start()
worker.join()
print(vts.render_json(out[0]))
"""


def one_call(schema: dict, arguments: str, profile: str = "openai") -> bytes:
    chunks = [{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
    return json.dumps({"profile": profile, "tool_schemas": {"f": schema}, "chunks": chunks}).encode()


def pattern_case(pattern: str, subject: str) -> bytes:
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}
    return one_call(schema, json.dumps({"x": subject}))


def many_patterns(pattern: str, subject: str, count: int) -> bytes:
    """One call whose count string members each run pattern on subject."""
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": pattern} for i in range(count)}}
    return one_call(schema, json.dumps({f"p{i}": subject for i in range(count)}, ensure_ascii=False))


def many_calls(schema: dict, arguments: str, count: int) -> bytes:
    """One turn of count calls of one tool, each with the same arguments."""
    chunks = [{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": i, "id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": arguments}}]}}]}
        for i in range(count)]
    chunks.append({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return json.dumps({"profile": "openai", "tool_schemas": {"f": schema}, "chunks": chunks}).encode()


ASTRAL_4000 = "[" + "".join(chr(0x10000 + 2 * i) for i in range(4000)) + "]"


def findings_flood(megabytes: int) -> bytes:
    count = megabytes * (1 << 20) // 2
    head = b'{"profile":"openai","tool_schemas":{},"chunks":['
    return head + b",".join([b"1"] * count) + b"]}"


def million_chunks() -> bytes:
    fragment = b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"a"}}]}}]}'
    first = (b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function",'
             b'"function":{"name":"f","arguments":"{\\"s\\":\\""}}]}}]}')
    last = (b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"}"}}]},'
            b'"finish_reason":"tool_calls"}]}')
    return (b'{"profile":"openai","tool_schemas":{"f":{"type":"object"}},"chunks":[' + first + b","
            + b",".join([fragment] * 1_000_000) + b"," + last + b"]}")


def gemini_streamed(entries: list) -> bytes:
    """One gemini call whose partialArgs entries are given, one entry per chunk, ending STOP."""
    def chunk(call: dict, finish: str | None = None) -> dict:
        candidate = {"content": {"role": "model", "parts": [{"functionCall": call}]}}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate]}
    chunks = [chunk({"name": "f", "willContinue": True})]
    chunks += [chunk({"partialArgs": [entry], "willContinue": True}) for entry in entries]
    chunks.append(chunk({}, "STOP"))
    return json.dumps({"profile": "gemini", "tool_schemas": {"f": {"type": "object"}}, "chunks": chunks}).encode()


CASES = {
    # name: (what, builder, mode)
    "count-digits": ("pattern with a 5,000-digit {n} count", lambda: pattern_case("a{" + "9" * 5000 + "}", "a"), "cli"),
    "dots": ("pattern of 1,000,000 '.'", lambda: pattern_case("." * 1_000_000, "a"), "cli"),
    "alternatives": ("pattern of 20,000 alternatives",
                     lambda: pattern_case("|".join(f"a{i}" for i in range(20_000)), "a"), "cli"),
    "alternatives-fit": ("pattern of 1,500 overlapping alternatives (10k code points, simulator)",
                         lambda: pattern_case("^(?:" + "|".join(f"k{i}" for i in range(1500)) + ")+$",
                                              "k1" * 499), "cli"),
    "thread-words": ("^(\\w+\\s?){1,1000}$ on 40 characters, worker thread",
                     lambda: pattern_case(r"^(\w+\s?){1,1000}$", "a" * 39 + "!"), "thread"),
    "thread-words-1000": ("^(\\w+\\s?){1,1000}$ on 1,000 characters, worker thread",
                          lambda: pattern_case(r"^(\w+\s?){1,1000}$", "a" * 999 + "!"), "thread"),
    "thread-stars": ("a*a*a*a*a*b on 1,000 characters, worker thread",
                     lambda: pattern_case("a*a*a*a*a*b", "a" * 1000), "thread"),
    "thread-alt": ("(a|aa){0,100000}$, worker thread", lambda: pattern_case("(a|aa){0,100000}$", "a" * 39 + "!"),
                   "thread"),
    "thread-nested": ("^(a*){1,100000}$, worker thread", lambda: pattern_case("^(a*){1,100000}$", "a" * 39 + "!"),
                      "thread"),
    "thread-unique": ("2,000 uniqueItems over a 0.7 MB array, worker thread",
                      lambda: one_call({"type": "object", "properties": {"x": {"allOf": [{"uniqueItems": True}] * 2000}}},
                                       json.dumps({"x": [[i, "v" * 24] for i in range(20_000)]})), "thread"),
    "astral-classes": ("80 members x 1,000 U+10FFFD, each against [^\\p{L}\\p{M}\\p{N}\\p{S}\\p{P}]*!",
                       lambda: many_patterns("[^\\p{L}\\p{M}\\p{N}\\p{S}\\p{P}]*!", "\U0010fffd" * 1000, 80), "cli"),
    "astral-4000": ("7 members x 1,000 code points, each against a class of 4,000 above U+FFFF",
                    lambda: many_patterns(ASTRAL_4000 + "*!", chr(0x10000 + 2 * 3999) * 1000, 7), "cli"),
    "boundaries": ("4,900 \\b then x on 1,000 characters", lambda: pattern_case("\\b" * 4900 + "x", "a " * 500), "cli"),
    "bmp-classes": ("a pattern of 1,900 [\\u0100-\\uffff] classes (re walks each one's code points)",
                    lambda: pattern_case("^" + "[\u0100-\uffff]" * 1900, "a"), "cli"),
    "turn-256": ("256 calls, each (?:a|a){0,900}b on 999 characters",
                 lambda: many_calls({"type": "object", "properties": {"s": {"type": "string",
                                     "pattern": "(?:a|a){0,900}b"}}}, json.dumps({"s": "a" * 999}), 256), "cli"),
    "subschemas": ("schema of 60,000 subschemas", lambda: one_call(
        {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(60_000)}}, "{}"), "cli"),
    "findings-20MB": ("20 MB of non-object chunks (10M findings)", lambda: findings_flood(20), "cli"),
    "findings-60MB": ("60 MB of non-object chunks (30M findings)", lambda: findings_flood(60), "cli"),
    "deep-arguments": ("arguments nested 100,000 deep", lambda: one_call(
        {"type": "object"}, '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"), "cli"),
    "million-digits": ("a 1,000,000-digit number in the arguments", lambda: one_call(
        {"type": "object"}, '{"a":' + "1" * 1_000_000 + "}"), "cli"),
    "string-100MB": ("a 100 MB argument string", lambda: one_call(
        {"type": "object"}, '{"a":"' + "x" * 100_000_000 + '"}'), "cli"),
    "million-chunks": ("1,000,000 one-character argument chunks", million_chunks, "cli"),
    "gemini-deep-path": ("gemini: a jsonPath of 100,000 segments", lambda: gemini_streamed(
        [{"jsonPath": "$" + ".a" * 100_000, "numberValue": 1}]), "cli"),
    "gemini-pieces": ("gemini: 200,000 one-character partialArgs pieces of one string", lambda: gemini_streamed(
        [{"jsonPath": "$.s", "stringValue": "x", "willContinue": True}] * 200_000
        + [{"jsonPath": "$.s", "stringValue": ""}]), "cli"),
    "gemini-paths": ("gemini: 100,000 partialArgs entries, each a new array element", lambda: gemini_streamed(
        [{"jsonPath": f"$.a[{i}]", "numberValue": i} for i in range(100_000)]), "cli"),
}


def run(path: str, mode: str, limit: float) -> tuple[float, float, str, str]:
    """(wall seconds, peak RSS MiB, status, codes) of one validation in a child process."""
    if mode == "thread":
        argv = [sys.executable, "-c", THREAD_RUNNER, str(SCRIPT.parent), path]
    else:
        argv = [sys.executable, str(SCRIPT), path]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > limit:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return time.monotonic() - started, usage.ru_maxrss / 1024, "KILLED", f"over {limit:.0f} s"
        time.sleep(0.01)
    wall = time.monotonic() - started
    peak = usage.ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1024)
    out.seek(0)
    err.seek(0)
    text, problem = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    if "Traceback" in problem:
        return wall, peak, "TRACEBACK", problem.strip().splitlines()[-1][:60]
    try:
        report = json.loads(text)
    except ValueError:
        return wall, peak, "NO REPORT", problem.strip()[:60]
    codes = sorted({finding["code"] for finding in report["findings"]})
    return wall, peak, report["status"], ",".join(codes) or "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="", help="comma-separated subset of case names")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="a case slower than this fails")
    parser.add_argument("--build", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build:
        with open(args.build[1], "wb") as handle:
            handle.write(CASES[args.build[0]][1]())
        return 0
    names = [name for name in args.cases.split(",") if name] or list(CASES)
    unknown = [name for name in names if name not in CASES]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}; choose from {', '.join(CASES)}")
    print(f"Python {sys.version.split()[0]}, {sys.platform}; peak = the child's maximum resident set size")
    print(f"{'case':18} {'input MiB':>9} {'wall s':>7} {'peak MiB':>8}  {'status':8} codes")
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            what, _, mode = CASES[name]
            path = os.path.join(folder, name + ".json")
            subprocess.run([sys.executable, __file__, "--build", name, path], check=True)
            size = os.path.getsize(path) / (1 << 20)
            wall, peak, status, codes = run(path, mode, args.max_seconds)
            failed += status in ("KILLED", "TRACEBACK", "NO REPORT")
            print(f"{name:18} {size:9.2f} {wall:7.2f} {peak:8.0f}  {status:8} {codes}   ({what})", flush=True)
            os.remove(path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
