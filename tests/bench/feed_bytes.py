#!/usr/bin/env python3
"""What StreamGate.feed_bytes costs next to validate_bytes of the same stream, on every profile.  Not a unit test.

Standard library only, Python 3.10+.  For each profile (and anthropic's Bedrock invoke body, row
"anthropic-invoke", and Gemini's JSON-list body, row "gemini-list") it builds passing turns with
capture.py's builders and frames each as the provider sends it:

  fragments     one call whose arguments come in --events fragments of about 6 characters
  arg-1MB       one call with an argument of about 1 MB, in 10,000 fragments
  text          --events text deltas, then a short call
  parallel-64   64 calls, their fragments interleaved (openai, mistral, anthropic: bench.py's streams)

Per row it prints the best of --repeat runs, taken in turn, each with the cyclic collector paused
(as validate_bytes(pause_gc=True) pauses it) of:

  feed ms    a StreamGate fed the body with feed_bytes in --piece bytes at a time, then finish()
  valid ms   validate_bytes(envelope, pause_gc=True), the envelope holding the same stream (capture's)
  x          feed / valid (target: at most 1.2)

Both reports must be the same (status, findings, calls); the benchmark asserts it.

Usage:
  python3 tests/bench/feed_bytes.py                     # every profile, 10,000 events a case
  python3 tests/bench/feed_bytes.py --profiles gemini,gemini-list --piece 1024
  python3 tests/bench/feed_bytes.py --script /tmp/old/validate_tool_stream.py
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import sys
import time
from pathlib import Path

from loading import load   # tests/bench/loading.py (the script's own folder is on sys.path)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


ROWS = ("openai", "mistral", "anthropic", "anthropic-invoke", "openai-responses", "bedrock", "gemini", "gemini-list",
        "cohere", "ollama")
CASES = ("fragments", "arg-1MB", "text", "parallel-64")


def body_of(vts, capture, bench, row: str, case: str, events: int) -> tuple[str, bytes] | None:
    """(profile, raw body) of one row and case; None where the case is not built for the row."""
    profile = {"anthropic-invoke": "anthropic", "gemini-list": "gemini"}.get(row, row)
    if case == "parallel-64":
        if profile not in ("openai", "mistral", "anthropic") or row == "anthropic-invoke":
            return None
        calls = bench.build_calls(profile, "parallel-64", 0)
        texts = bench.anthropic_stream(calls) if profile == "anthropic" else bench.chat_stream(profile, calls)
        stream = [json.loads(text) for text in texts]
    else:
        ntext, nfrag = {"fragments": (1, events), "arg-1MB": (1, 10_000), "text": (events, 4)}[case]
        plain = capture.arguments
        if case == "arg-1MB":   # fragments of about 100 characters
            def longer(pieces, plain=plain):
                text = "".join(plain(pieces * 16))
                return [text[k * len(text) // pieces:(k + 1) * len(text) // pieces] for k in range(pieces)]
            capture.arguments = longer
        try:
            if profile in ("openai", "mistral"):
                stream = capture.chat(profile, ntext, nfrag)
            elif profile == "anthropic":
                stream = capture.anthropic(ntext, nfrag, row == "anthropic-invoke")
            else:
                stream = {"openai-responses": capture.responses, "bedrock": capture.bedrock, "gemini": capture.gemini,
                          "cohere": capture.cohere, "ollama": capture.ollama}[profile](ntext, nfrag)
        finally:
            capture.arguments = plain
    if row == "anthropic-invoke":
        return profile, b"".join(vts.eventstream_frame({"chunk": {"bytes": base64.b64encode(
            json.dumps(event, separators=(",", ":")).encode()).decode()}}) for event in stream)
    return profile, vts.PROFILES[profile].http.frame(stream, "" if row == "gemini-list" else "alt=sse")[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", default=",".join(ROWS), help="comma-separated rows (default: all)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases (default: all)")
    parser.add_argument("--events", type=int, default=10_000, help="events of the fragments and text cases")
    parser.add_argument("--piece", type=int, default=16384, help="bytes per feed_bytes call (default 16384)")
    parser.add_argument("--repeat", type=int, default=5, help="best of N timings (default 5)")
    parser.add_argument("--script", type=Path, default=ROOT / "scripts" / "validate_tool_stream.py")
    args = parser.parse_args(argv)
    vts = load("validate_tool_stream", args.script)
    capture = load("vts_bench_capture", HERE / "capture.py")
    bench = load("vts_bench_bench", HERE / "bench.py")
    schemas = {**capture.SCHEMAS, **bench.TOOL_SCHEMAS}
    print(f"# {args.script} | Python {sys.version.split()[0]} | {args.events} events | pieces of {args.piece} "
          f"bytes | best of {args.repeat}, the collector paused")
    print(f"{'profile':17} {'case':12} {'MiB':>6} {'feed ms':>9} {'valid ms':>9} {'x':>5}  status")
    failing = []
    for row in args.profiles.split(","):
        for case in args.cases.split(","):
            built = body_of(vts, capture, bench, row, case, args.events)
            if built is None:
                continue
            profile, body = built
            envelope, _ = vts.sse_to_envelope(body, profile, None, redact=False)
            envelope["tool_schemas"] = schemas
            data = json.dumps(envelope).encode()
            pieces = [body[k:k + args.piece] for k in range(0, len(body), args.piece)]

            def fed(profile=profile, pieces=pieces):
                gate = vts.StreamGate(profile, schemas)
                for piece in pieces:
                    gate.feed_bytes(piece)
                return gate.finish()

            def validated(data=data):
                return vts.validate_bytes(data, pause_gc=True)

            got, want = fed(), validated()
            keys = ("status", "findings", "calls")
            assert [got[k] for k in keys] == [want[k] for k in keys], (row, case, got["findings"][:2])
            assert want["status"] == "pass", (row, case, want["findings"][:2])
            best = [float("inf"), float("inf")]
            for _ in range(args.repeat):
                for slot, run in enumerate((fed, validated)):
                    paused = gc.isenabled()
                    gc.disable()
                    try:
                        start = time.perf_counter()
                        run()
                        best[slot] = min(best[slot], time.perf_counter() - start)
                    finally:
                        if paused:
                            gc.enable()
            ratio = best[0] / best[1]
            if ratio > 1.2:
                failing.append(f"{row}/{case}")
            print(f"{row:17} {case:12} {len(body) / 2 ** 20:6.2f} {best[0] * 1e3:9.1f} {best[1] * 1e3:9.1f} "
                  f"{ratio:5.2f}  {want['status']}", flush=True)
    print("target: feed_bytes <= 1.2x validate_bytes;", "failing: " + ", ".join(failing) if failing else "all met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
