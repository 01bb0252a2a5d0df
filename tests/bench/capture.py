#!/usr/bin/env python3
"""What `capture` costs next to validating what it writes, on every profile.  Not a unit test.

Standard library only, Python 3.10+.  For each profile (and anthropic's Bedrock invoke body,
row "anthropic-invoke") it builds one large passing turn -- text deltas, then one call whose
arguments arrive in many fragments (whole calls on ollama) -- and frames it as the provider
sends it: SSE (named events where the API names them, data: [DONE] where it sends one),
the binary AWS event stream (bedrock; anthropic-invoke: chunk frames carrying base64
events), or JSON Lines (ollama).  Per row it prints:

  capture ms   best of --repeat runs of what `capture` runs in process: _capture (the body read
               once, each payload written as it is read; sse_to_envelope in a script before it),
               redacted (the default), and capture_text, the text it writes
  valid ms     best of --repeat runs of validate_bytes(that text, pause_gc=True), the CLI's path
  t x          capture / validation (target: at most 3)
  peak MiB     tracemalloc peak of one capture run (the body itself is allocated before it and
               not counted), in a separate run so tracing does not distort the timings
  m x          that peak / the body's size (target: at most 4)
  sha256       of the redacted output and warnings, then of the --no-redact output and warnings:
               compare two versions of the script with --script (outputs must be byte-identical)

Usage:
  python3 tests/bench/capture.py                       # every profile, ~200k events each
  python3 tests/bench/capture.py --events 20000        # smaller bodies
  python3 tests/bench/capture.py --profiles cohere,bedrock --repeat 1
  python3 tests/bench/capture.py --script /tmp/old/validate_tool_stream.py   # another copy
"""

from __future__ import annotations

import argparse
import base64
import gc
import hashlib
import importlib.util
import json
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
ROWS = ("openai", "mistral", "anthropic", "anthropic-invoke", "openai-responses", "bedrock", "gemini", "cohere",
        "ollama")
SCHEMAS = {"save_note": {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                         "required": ["title", "body"], "additionalProperties": False}}
WORDS = ("the ", "stream ", "réseau ", "naïve ", "tool ", "\"quoted\" ", "tab\there ", "über ", "√2 ", "😀 ")


def arguments(pieces: int) -> list[str]:
    """The fragments of one save_note call: about 6 characters each, escapes and non-ASCII included."""
    body = "".join(WORDS[k % len(WORDS)] for k in range(pieces))
    text = json.dumps({"title": "bench", "body": body}, ensure_ascii=False)
    n = len(text)
    return [text[k * n // pieces:(k + 1) * n // pieces] for k in range(pieces)]


def texts(count: int) -> list[str]:
    return [WORDS[k % len(WORDS)] + str(k) for k in range(count)]


def chat(profile: str, ntext: int, nfrag: int) -> list[dict]:
    head = {"id": "chatcmpl-BenchQz8kLm3NpR5sT7vW9x", "object": "chat.completion.chunk", "created": 1767225600,
            "model": "mistral-large-2411" if profile == "mistral" else "gpt-4o-2024-08-06"}

    def chunk(delta, finish=None):
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": t}) for t in texts(ntext)]
    out.append(chunk({"tool_calls": [{"id": "call_BenchKq7LmN2pRs4TvW" if profile == "openai" else "Bq0001xZ9k",
                                      "index": 0, "type": "function",
                                      "function": {"name": "save_note", "arguments": ""}}]}))
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in arguments(nfrag)]
    out.append(chunk({}, "tool_calls"))
    return out


def anthropic(ntext: int, nfrag: int, invoke: bool) -> list[dict]:
    out = [{"type": "message_start", "message": {"id": "msg_01BenchQz8kLm3NpR5sT7vW9x", "type": "message",
                                                  "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                                                  "stop_reason": None, "stop_sequence": None,
                                                  "usage": {"input_tokens": 812, "output_tokens": 1}}},
           {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]
    out += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
            for t in texts(ntext)]
    out += [{"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1,
             "content_block": {"type": "tool_use", "id": "toolu_01BenchXq7LmN2pRs4Tv", "name": "save_note",
                               "input": {}}}]
    out += [{"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": f}}
            for f in arguments(nfrag)]
    out += [{"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 4096}},
            {"type": "message_stop"}]
    if invoke:
        out[-1]["amazon-bedrock-invocationMetrics"] = {"inputTokenCount": 812, "outputTokenCount": 4096,
                                                       "invocationLatency": 2874, "firstByteLatency": 702}
    else:
        out.insert(1, {"type": "ping"})
    return out


def responses(ntext: int, nfrag: int) -> list[dict]:
    frags = arguments(nfrag)
    whole = "".join(frags)
    seq = iter(range(10 ** 9))
    response = {"id": "resp_BenchQz8kLm3NpR5sT7vW9x", "object": "response", "created_at": 1767225600,
                "status": "in_progress", "model": "gpt-4.1", "output": []}
    call = {"id": "fc_Bench01", "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": "call_BenchKq7LmN2pRs4TvW", "name": "save_note"}
    text = "".join(texts(ntext))
    message = {"id": "msg_Bench01", "type": "message", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "annotations": [], "text": text}]}
    out = [{"type": "response.created", "response": response},
           {"type": "response.output_item.added", "output_index": 0,
            "item": {**message, "status": "in_progress", "content": []}},
           {"type": "response.content_part.added", "item_id": "msg_Bench01", "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "annotations": [], "text": ""}}]
    out += [{"type": "response.output_text.delta", "item_id": "msg_Bench01", "output_index": 0, "content_index": 0,
             "delta": t, "logprobs": []} for t in texts(ntext)]
    out += [{"type": "response.output_text.done", "item_id": "msg_Bench01", "output_index": 0, "content_index": 0,
             "text": text, "logprobs": []},
            {"type": "response.content_part.done", "item_id": "msg_Bench01", "output_index": 0, "content_index": 0,
             "part": message["content"][0]},
            {"type": "response.output_item.done", "output_index": 0, "item": message},
            {"type": "response.output_item.added", "output_index": 1, "item": call}]
    out += [{"type": "response.function_call_arguments.delta", "item_id": "fc_Bench01", "output_index": 1,
             "delta": f} for f in frags]
    done = {**call, "status": "completed", "arguments": whole}
    out += [{"type": "response.function_call_arguments.done", "item_id": "fc_Bench01", "output_index": 1,
             "arguments": whole},
            {"type": "response.output_item.done", "output_index": 1, "item": done},
            {"type": "response.completed", "response": {**response, "status": "completed", "output": [message, done]}}]
    for event in out:
        event["sequence_number"] = next(seq)
    return out


def bedrock(ntext: int, nfrag: int) -> list[dict]:
    out = [{"messageStart": {"role": "assistant"}}]
    out += [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": t}}} for t in texts(ntext)]
    out += [{"contentBlockStop": {"contentBlockIndex": 0}},
            {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {
                "toolUseId": "tooluse_BenchR8pLq5VxK1mZt6bY0c", "name": "save_note"}}}}]
    out += [{"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": f}}}}
            for f in arguments(nfrag)]
    out += [{"contentBlockStop": {"contentBlockIndex": 1}}, {"messageStop": {"stopReason": "tool_use"}},
            {"metadata": {"usage": {"inputTokens": 431, "outputTokens": 64, "totalTokens": 495},
                          "metrics": {"latencyMs": 1873}}}]
    return out


def gemini(ntext: int, nfrag: int) -> list[dict]:
    def chunk(part, finish=None):
        candidate = {"content": {"role": "model", "parts": [part]}}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "modelVersion": "gemini-3.1-pro-preview", "responseId": "QmVuY2g"}

    body = "".join(arguments(nfrag))
    pieces = [body[k * len(body) // nfrag:(k + 1) * len(body) // nfrag] for k in range(nfrag)]
    out = [chunk({"text": t}) for t in texts(ntext)]
    out.append(chunk({"functionCall": {"name": "save_note", "willContinue": True}, "thoughtSignature": "c2lnLTU="}))
    out.append(chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.title", "stringValue": "bench"}],
                                       "willContinue": True}}))
    out += [chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.body", "stringValue": p, "willContinue": True}],
                                    "willContinue": True}}) for p in pieces]
    out.append(chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.body", "stringValue": ""}],
                                       "willContinue": True}}))
    out.append(chunk({"functionCall": {}}, "STOP"))
    return out


def cohere(ntext: int, nfrag: int) -> list[dict]:
    out = [{"id": "5d1a7c2e-9b3f-4e8a-a6c1-2f0b7d9e4c31", "type": "message-start",
            "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [],
                                  "citations": []}}},
           {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}]
    out += [{"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": t}}}}
            for t in texts(ntext)]
    out += [{"type": "content-end", "index": 0},
            {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
                "id": "save_note_k3q8z1m4v7pw", "type": "function",
                "function": {"name": "save_note", "arguments": ""}}}}}]
    out += [{"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {
        "arguments": f}}}}} for f in arguments(nfrag)]
    out += [{"type": "tool-call-end", "index": 0},
            {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL",
                                              "usage": {"tokens": {"input_tokens": 1204, "output_tokens": 96}}}}]
    return out


def ollama(ntext: int, nfrag: int) -> list[dict]:
    def line(message, done=False, **more):
        return {"model": "qwen3:8b", "created_at": "2026-11-20T09:14:00.100000Z",
                "message": {"role": "assistant", **message}, "done": done, **more}

    out = [line({"content": t}) for t in texts(ntext + nfrag - 2)]
    out.append(line({"content": "", "tool_calls": [{"id": "call_get0x7k2", "function": {
        "index": 0, "name": "save_note", "arguments": json.loads("".join(arguments(nfrag)))}}]}))
    out.append(line({"content": ""}, True, done_reason="stop", eval_count=41))
    return out


def build(vts, row: str, events: int) -> tuple[str, bytes]:
    """(profile, raw body) of one row, about `events` events, a quarter of them text."""
    ntext, nfrag = events // 4, events - events // 4
    if row in ("openai", "mistral"):
        stream = chat(row, ntext, nfrag)
    elif row in ("anthropic", "anthropic-invoke"):
        stream = anthropic(ntext, nfrag, row == "anthropic-invoke")
    else:
        stream = {"openai-responses": responses, "bedrock": bedrock, "gemini": gemini, "cohere": cohere,
                  "ollama": ollama}[row](ntext, nfrag)
    if row == "anthropic-invoke":
        frames = []
        for k, event in enumerate(stream):
            data = base64.b64encode(json.dumps(event, separators=(",", ":")).encode()).decode()
            frames.append(vts.eventstream_frame({"chunk": {"bytes": data, "p": "abcdefghijklmnopqrstuvwxyzAB"[:k % 29]}}))
        return "anthropic", b"".join(frames)
    return row, vts.PROFILES[row].http.frame(stream, "alt=sse")[1]


def load(script: Path):
    spec = importlib.util.spec_from_file_location("validate_tool_stream", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules["validate_tool_stream"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", default=",".join(ROWS), help="comma-separated rows (default: all)")
    parser.add_argument("--events", type=int, default=200_000, help="events per body (default 200000)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N timings (default 3)")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc run")
    parser.add_argument("--script", type=Path, default=ROOT / "scripts" / "validate_tool_stream.py")
    args = parser.parse_args(argv)
    vts = load(args.script)
    digest = hashlib.sha256(args.script.read_bytes()).hexdigest()[:12]
    print(f"# {args.script} (sha256 {digest}) | Python {sys.version.split()[0]} | {args.events} events | "
          f"best of {args.repeat}")
    print(f"{'profile':17} {'events':>7} {'MiB':>7} {'capture ms':>10} {'valid ms':>9} {'t x':>5} "
          f"{'peak MiB':>8} {'m x':>5}  sha256 redacted / --no-redact")
    failing = []
    for row in args.profiles.split(","):
        profile, raw = build(vts, row, args.events)

        def run(redact=True, raw=raw, profile=profile):
            if hasattr(vts, "_capture"):   # what _run_capture calls
                envelope, warnings = vts._capture(raw, profile, SCHEMAS, redact, True)
            else:                          # the script before it had _capture
                envelope, warnings = vts.sse_to_envelope(raw, profile, SCHEMAS, redact=redact)
            return vts.capture_text(envelope), warnings

        text, warnings = run()
        plain, plain_warnings = run(False)
        sums = [hashlib.sha256((t + "\n".join(w)).encode()).hexdigest()[:12]
                for t, w in ((text, warnings), (plain, plain_warnings))]
        data = text.encode("ascii")
        del plain, plain_warnings
        report = vts.validate_bytes(data, pause_gc=True)
        assert report["status"] == "pass", (row, report["status"], report["findings"][:3])
        count = len(json.loads(data)[vts.STREAM_KEY[profile]])
        best = [float("inf"), float("inf")]
        for _ in range(args.repeat):
            for k, fn in enumerate((lambda: run(), lambda: vts.validate_bytes(data, pause_gc=True))):
                gc.collect()
                start = time.perf_counter()
                fn()
                best[k] = min(best[k], time.perf_counter() - start)
        peak = 0
        if not args.no_memory:
            gc.collect()
            tracemalloc.start()
            result = run()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            del result
        t_x, m_x = best[0] / best[1], peak / len(raw)
        if t_x > 3 or (not args.no_memory and m_x > 4):
            failing.append(row)
        print(f"{row:17} {count:7} {len(raw) / MiB:7.2f} {best[0] * 1000:10.1f} {best[1] * 1000:9.1f} {t_x:5.2f} "
              f"{peak / MiB:8.1f} {m_x:5.2f}  {sums[0]} / {sums[1]}", flush=True)
        del raw, text, data, report
    print("targets: capture <= 3x validation in time, peak <= 4x the body; failing: " + (", ".join(failing) or "none"))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
