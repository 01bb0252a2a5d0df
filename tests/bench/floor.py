#!/usr/bin/env python3
"""Every wire against the floor: validate_bytes next to json.loads of the same bytes.  Not a unit test.

Standard library only, Python 3.10+.  For every profile in PROFILES (and two variants: Gemini's
Vertex `partialArgs` stream, and Claude's Bedrock invoke body as `capture` writes it) it builds
passing envelopes for four cases and prints, per case:

  MiB          the envelope's size (written as `capture` lays it out, one event per line, but with
               non-ASCII text left unescaped: the decoded text then costs up to 4 bytes a character)
  wall ms      best of --repeat runs of validate_bytes(data, pause_gc=True), the CLI's path
  floor ms     best of --repeat runs of json.loads(data) with the garbage collector paused
  t x          wall / floor (target: at most 1.5)
  gc-on x      wall / json.loads with the collector on (the floor this benchmark used before)
  peak x       tracemalloc peak of one validation / the input's size (target: at most 2 from 1 MiB of
               input; below that, fixed costs such as compiled schemas outweigh the input), in a
               separate run so tracing does not distort the timings
  floor x      tracemalloc peak of json.loads of the same bytes / the input's size (for comparison)
  status       the verdict (every case must pass)

The cases (--cases):
  fragments    one call whose arguments arrive in --events fragments (wires that only send whole
               calls -- the Gemini API, ollama -- carry --events text events, then the call)
  arg-1MB      one call with a 1 MB argument, in 10,000 fragments where the wire fragments
  parallel-64  64 calls of about 100 fragments each (interleaved where the wire allows it)
  text         --events text events, then one small call

Validation and floor are timed in turn, so a slow spell of the shared machine lands on both.
--json FILE writes the rows; --markdown prints them as the table in tests/bench/README.md.

Usage:
  python3 tests/bench/floor.py                          # every row, 100,000 events
  python3 tests/bench/floor.py --rows cohere,ollama --cases fragments --events 20000
  python3 tests/bench/floor.py --script /tmp/old/validate_tool_stream.py   # another copy
"""

from __future__ import annotations

import argparse
import base64
import gc
import importlib.util
import json
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
VARIANTS = {"gemini-vertex": "gemini", "anthropic-invoke": "anthropic"}
CASES = ("fragments", "arg-1MB", "parallel-64", "text")
SCHEMAS = {"save_note": {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                         "required": ["title", "body"], "additionalProperties": False}}
WORDS = ("the ", "stream ", "réseau ", "naïve ", "tool ", "\"quoted\" ", "tab\there ", "über ", "√2 ", "😀 ")


def note(chars: int) -> str:
    """A save_note argument text of about `chars` characters, escapes and non-ASCII included."""
    body, size, k = [], 0, 0
    while size < chars:
        word = WORDS[k % len(WORDS)]
        body.append(word)
        size += len(word) + 1
        k += 1
    return json.dumps({"title": "bench", "body": "".join(body)}, ensure_ascii=False)


def split(text: str, pieces: int) -> list[str]:
    n = len(text)
    return [text[k * n // pieces:(k + 1) * n // pieces] for k in range(pieces)]


def texts(count: int) -> list[str]:
    return [WORDS[k % len(WORDS)] + str(k) for k in range(count)]


def calls_of(case: str, events: int) -> tuple[list[str], list[list[str]]]:
    """(text deltas, each call's argument fragments) of one case."""
    if case == "fragments":
        return [], [split(note(events * 6), events)]
    if case == "arg-1MB":
        return [], [split(note(1_000_000), 10_000)]
    if case == "parallel-64":
        return [], [split(note(600 + k), 100) for k in range(64)]
    if case == "text":
        return texts(events), [split(note(200), 20)]
    raise ValueError(case)


def interleave(calls: list[list[str]]):
    """(call number, fragment) in round-robin order."""
    for j in range(max(len(c) for c in calls)):
        for k, frags in enumerate(calls):
            if j < len(frags):
                yield k, frags[j]


def chat(profile: str, text: list[str], calls: list[list[str]]) -> list[dict]:
    head = {"id": "chatcmpl-BenchQz8kLm3NpR5sT7vW9x", "object": "chat.completion.chunk", "created": 1767225600,
            "model": "mistral-large-2411" if profile == "mistral" else "gpt-4o-2024-08-06"}

    def chunk(delta, finish=None):
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def cid(k):
        return f"Bq{k:04d}xZ9k" if profile == "mistral" else f"call_Bench{k:04d}Kq7LmN2pRs4TvW"

    out = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": t}) for t in text]
    out += [chunk({"tool_calls": [{"id": cid(k), "index": k, "type": "function",
                                   "function": {"name": "save_note", "arguments": ""}}]}) for k in range(len(calls))]
    out += [chunk({"tool_calls": [{"index": k, "function": {"arguments": f}}]}) for k, f in interleave(calls)]
    out.append(chunk({}, "tool_calls"))
    return out


def anthropic(text: list[str], calls: list[list[str]], invoke: bool) -> list[dict]:
    out = [{"type": "message_start", "message": {"id": "msg_01BenchQz8kLm3NpR5sT7vW9x", "type": "message",
                                                  "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                                                  "stop_reason": None, "stop_sequence": None,
                                                  "usage": {"input_tokens": 812, "output_tokens": 1}}}]
    base = 0
    if text:
        out.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        out += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in text]
        out.append({"type": "content_block_stop", "index": 0})
        base = 1
    for k, frags in enumerate(calls):
        out.append({"type": "content_block_start", "index": base + k, "content_block": {
            "type": "tool_use", "id": f"toolu_01Bench{k:04d}Xq7LmN2pRs4", "name": "save_note", "input": {}}})
        out += [{"type": "content_block_delta", "index": base + k,
                 "delta": {"type": "input_json_delta", "partial_json": f}} for f in frags]
        out.append({"type": "content_block_stop", "index": base + k})
    out += [{"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 4096}},
            {"type": "message_stop"}]
    if invoke:
        out[-1]["amazon-bedrock-invocationMetrics"] = {"inputTokenCount": 812, "outputTokenCount": 4096,
                                                       "invocationLatency": 2874, "firstByteLatency": 702}
    else:
        out.insert(1, {"type": "ping"})
    return out


def responses(text: list[str], calls: list[list[str]]) -> list[dict]:
    response = {"id": "resp_BenchQz8kLm3NpR5sT7vW9x", "object": "response", "created_at": 1767225600,
                "status": "in_progress", "model": "gpt-4.1", "output": []}
    out = [{"type": "response.created", "response": response}]
    output = []
    if text:
        whole = "".join(text)
        message = {"id": "msg_Bench01", "type": "message", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "annotations": [], "text": whole}]}
        where = {"item_id": "msg_Bench01", "output_index": 0, "content_index": 0}
        out += [{"type": "response.output_item.added", "output_index": 0,
                 "item": {**message, "status": "in_progress", "content": []}},
                {"type": "response.content_part.added", **where,
                 "part": {"type": "output_text", "annotations": [], "text": ""}}]
        out += [{"type": "response.output_text.delta", **where, "delta": t, "logprobs": []} for t in text]
        out += [{"type": "response.output_text.done", **where, "text": whole, "logprobs": []},
                {"type": "response.content_part.done", **where, "part": message["content"][0]},
                {"type": "response.output_item.done", "output_index": 0, "item": message}]
        output.append(message)
    for k, frags in enumerate(calls):
        index = len(output)
        call = {"id": f"fc_Bench{k:04d}", "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": f"call_Bench{k:04d}Kq7LmN2pRs4TvW", "name": "save_note"}
        whole = "".join(frags)
        done = {**call, "status": "completed", "arguments": whole}
        out.append({"type": "response.output_item.added", "output_index": index, "item": call})
        out += [{"type": "response.function_call_arguments.delta", "item_id": call["id"], "output_index": index,
                 "delta": f} for f in frags]
        out += [{"type": "response.function_call_arguments.done", "item_id": call["id"], "output_index": index,
                 "arguments": whole},
                {"type": "response.output_item.done", "output_index": index, "item": done}]
        output.append(done)
    out.append({"type": "response.completed", "response": {**response, "status": "completed", "output": output}})
    for k, event in enumerate(out):
        event["sequence_number"] = k
    return out


def bedrock(text: list[str], calls: list[list[str]]) -> list[dict]:
    out = [{"messageStart": {"role": "assistant"}}]
    base = 0
    if text:
        out += [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": t}}} for t in text]
        out.append({"contentBlockStop": {"contentBlockIndex": 0}})
        base = 1
    for k, frags in enumerate(calls):
        out.append({"contentBlockStart": {"contentBlockIndex": base + k, "start": {"toolUse": {
            "toolUseId": f"tooluse_Bench{k:04d}R8pLq5VxK1mZt6b", "name": "save_note"}}}})
        out += [{"contentBlockDelta": {"contentBlockIndex": base + k, "delta": {"toolUse": {"input": f}}}}
                for f in frags]
        out.append({"contentBlockStop": {"contentBlockIndex": base + k}})
    out += [{"messageStop": {"stopReason": "tool_use"}},
            {"metadata": {"usage": {"inputTokens": 431, "outputTokens": 64, "totalTokens": 495},
                          "metrics": {"latencyMs": 1873}}}]
    return out


def gemini(text: list[str], calls: list[list[str]], vertex: bool) -> list[dict]:
    def chunk(parts, finish=None):
        candidate = {"content": {"role": "model", "parts": parts}}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "modelVersion": "gemini-3.1-pro-preview", "responseId": "QmVuY2g"}

    out = [chunk([{"text": t}]) for t in text]
    if not vertex:
        for k, frags in enumerate(calls):
            part = {"functionCall": {"name": "save_note", "args": json.loads("".join(frags))}}
            if k == 0:
                part["thoughtSignature"] = "c2lnLTU="
            out.append(chunk([part]))
        out[-1]["candidates"][0]["finishReason"] = "STOP"
        return out
    for frags in calls:
        body = json.loads("".join(frags))["body"]
        pieces = split(body, len(frags))
        out.append(chunk([{"functionCall": {"name": "save_note", "willContinue": True},
                           "thoughtSignature": "c2lnLTU="}]))
        out.append(chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.title", "stringValue": "bench"}],
                                            "willContinue": True}}]))
        out += [chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.body", "stringValue": p,
                                                          "willContinue": True}], "willContinue": True}}])
                for p in pieces]
        out.append(chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.body", "stringValue": ""}],
                                            "willContinue": True}}]))
        out.append(chunk([{"functionCall": {}}]))
    out[-1]["candidates"][0]["finishReason"] = "STOP"
    return out


def cohere(text: list[str], calls: list[list[str]]) -> list[dict]:
    out = [{"id": "5d1a7c2e-9b3f-4e8a-a6c1-2f0b7d9e4c31", "type": "message-start",
            "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [],
                                  "citations": []}}}]
    if text:
        out.append({"type": "content-start", "index": 0,
                    "delta": {"message": {"content": {"type": "text", "text": ""}}}})
        out += [{"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": t}}}} for t in text]
        out.append({"type": "content-end", "index": 0})
    for k, frags in enumerate(calls):
        out.append({"type": "tool-call-start", "index": k, "delta": {"message": {"tool_calls": {
            "id": f"save_note_k3q8z1m4v{k:04d}", "type": "function",
            "function": {"name": "save_note", "arguments": ""}}}}})
        out += [{"type": "tool-call-delta", "index": k, "delta": {"message": {"tool_calls": {"function": {
            "arguments": f}}}}} for f in frags]
        out.append({"type": "tool-call-end", "index": k})
    out.append({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL",
                                                 "usage": {"tokens": {"input_tokens": 1204, "output_tokens": 96}}}})
    return out


def ollama(text: list[str], calls: list[list[str]]) -> list[dict]:
    def line(message, done=False, **more):
        return {"model": "qwen3:8b", "created_at": "2026-11-20T09:14:00.100000Z",
                "message": {"role": "assistant", **message}, "done": done, **more}

    out = [line({"content": t}) for t in text]
    out.append(line({"content": "", "tool_calls": [
        {"id": f"call_{k:04d}x7k2", "function": {"index": k, "name": "save_note",
                                                 "arguments": json.loads("".join(frags))}}
        for k, frags in enumerate(calls)]}))
    out.append(line({"content": ""}, True, done_reason="stop", eval_count=41))
    return out


def interactions(text: list[str], calls: list[list[str]]) -> list[dict]:
    """Gemini Interactions, the steps grammar: a thought step, the text in a model_output step, each call a step."""
    out = [{"interaction": {"id": "v1_ChdVbXNIYXVEUkVacmpxdHNQb3JQeXlBRQ", "status": "in_progress",
                            "object": "interaction", "model": "gemini-3-flash-preview"}, "event_type": "interaction.created"},
           {"index": 0, "step": {"type": "thought"}, "event_type": "step.start"},
           {"index": 0, "delta": {"signature": "CiQBDDnWx+Xp0gYVp4DF", "type": "thought_signature"},
            "event_type": "step.delta"},
           {"index": 0, "event_type": "step.stop"}]
    step = 1
    if text:
        out.append({"index": 1, "step": {"type": "model_output"}, "event_type": "step.start"})
        out += [{"index": 1, "delta": {"text": t, "type": "text"}, "event_type": "step.delta"} for t in text]
        out.append({"index": 1, "event_type": "step.stop"})
        step = 2
    for k, frags in enumerate(calls, step):
        out.append({"index": k, "step": {"id": f"fc{k:04d}x7q", "signature": "", "type": "function_call",
                                         "name": "save_note", "arguments": {}}, "event_type": "step.start"})
        out += [{"index": k, "delta": {"arguments": f, "type": "arguments_delta"}, "event_type": "step.delta"}
                for f in frags]
        out.append({"index": k, "event_type": "step.stop"})
    out.append({"interaction": {"id": "v1_ChdVbXNIYXVEUkVacmpxdHNQb3JQeXlBRQ", "status": "requires_action",
                                "usage": {"total_tokens": 1300}}, "event_type": "interaction.completed"})
    return out


def stream_of(row: str, case: str, events: int) -> tuple[str, list[dict]]:
    text, calls = calls_of(case, events)
    if case == "fragments" and row in ("gemini", "ollama"):
        text = texts(events)
    if row in ("openai", "mistral"):
        return row, chat(row, text, calls)
    if row in ("anthropic", "anthropic-invoke"):
        return "anthropic", anthropic(text, calls, row == "anthropic-invoke")
    if row in ("gemini", "gemini-vertex"):
        return "gemini", gemini(text, calls, row == "gemini-vertex")
    builders = {"openai-responses": responses, "bedrock": bedrock, "cohere": cohere, "ollama": ollama,
                "gemini-interactions": interactions}
    if row not in builders:
        raise SystemExit(f"floor.py: no stream builder for row {row!r}: add one")
    return row, builders[row](text, calls)


def envelope_text(vts, row: str, case: str, events: int) -> bytes:
    """The envelope as capture lays it out, non-ASCII unescaped.  anthropic-invoke goes through capture."""
    profile, stream = stream_of(row, case, events)
    if row == "anthropic-invoke":
        frames = []
        for k, event in enumerate(stream):
            data = base64.b64encode(json.dumps(event, separators=(",", ":")).encode()).decode()
            frames.append(vts.eventstream_frame({"chunk": {"bytes": data, "p": "abcdefghijklmnopqrstuvwxyzAB"[:k % 29]}}))
        envelope, _ = vts._capture(b"".join(frames), profile, SCHEMAS, False, True)
        stream = envelope[vts.STREAM_KEY[profile]]
    head = json.dumps({"profile": profile, "tool_schemas": SCHEMAS}, ensure_ascii=False)[:-1]
    lines = ",\n".join(json.dumps(event, ensure_ascii=False) for event in stream)
    return (head + f', "{vts.STREAM_KEY[profile]}": [\n' + lines + "\n]}\n").encode()


def load(script: Path):
    spec = importlib.util.spec_from_file_location("validate_tool_stream", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules["validate_tool_stream"] = module
    spec.loader.exec_module(module)
    return module


def timed(fn, paused: bool) -> float:
    gc.collect()
    if paused:
        gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="", help="comma-separated (default: every profile and variant)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated (default: all four)")
    parser.add_argument("--events", type=int, default=100_000, help="events of the fragments and text cases")
    parser.add_argument("--repeat", type=int, default=3, help="best of N timings (default 3)")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc run")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON to FILE")
    parser.add_argument("--markdown", action="store_true", help="print the rows as a Markdown table at the end")
    parser.add_argument("--script", type=Path, default=ROOT / "scripts" / "validate_tool_stream.py")
    args = parser.parse_args(argv)
    vts = load(args.script)
    rows = args.rows.split(",") if args.rows else [*vts.PROFILES, *VARIANTS]
    print(f"# {args.script} | Python {sys.version.split()[0]} | {args.events} events | best of {args.repeat}")
    print(f"{'row':17} {'case':12} {'MiB':>6} {'wall ms':>8} {'floor ms':>8} {'t x':>5} {'gc-on x':>7} "
          f"{'peak x':>6} {'floor x':>7}  status")
    results, failing = [], []
    for row in rows:
        for case in args.cases.split(","):
            data = envelope_text(vts, row, case, args.events)
            report = vts.validate_bytes(data, pause_gc=True)
            best = [float("inf")] * 3
            for _ in range(args.repeat):
                for k, (fn, paused) in enumerate(((lambda: vts.validate_bytes(data, pause_gc=True), False),
                                                  (lambda: json.loads(data), True),
                                                  (lambda: json.loads(data), False))):
                    best[k] = min(best[k], timed(fn, paused))
            peak = peak0 = 0
            if not args.no_memory:
                for k, fn in enumerate((lambda: vts.validate_bytes(data, pause_gc=True), lambda: json.loads(data))):
                    gc.collect()
                    tracemalloc.start()
                    fn()
                    if k:
                        peak0 = tracemalloc.get_traced_memory()[1]
                    else:
                        peak = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
            t_x, old_x, m_x = best[0] / best[1], best[0] / best[2], peak / len(data)
            ok = report["status"] == "pass" and t_x <= 1.5 and (args.no_memory or m_x <= 2 or len(data) < MiB)
            if not ok:
                failing.append(f"{row}/{case}")
            results.append({"row": row, "case": case, "mib": len(data) / MiB, "wall_ms": best[0] * 1000,
                            "floor_ms": best[1] * 1000, "gc_on_ms": best[2] * 1000, "t_x": t_x, "gc_on_x": old_x,
                            "peak_x": m_x if not args.no_memory else None,
                            "floor_peak_x": peak0 / len(data) if not args.no_memory else None, "status": report["status"]})
            print(f"{row:17} {case:12} {len(data) / MiB:6.2f} {best[0] * 1000:8.1f} {best[1] * 1000:8.1f} "
                  f"{t_x:5.2f} {old_x:7.2f} {m_x:6.2f} {peak0 / len(data):7.2f}  {report['status']}", flush=True)
            del data, report
    print("targets: wall <= 1.5x json.loads with the collector paused, peak <= 2x the input from 1 MiB, status pass; "
          "failing: " + (", ".join(failing) or "none"))
    if args.markdown:
        print("\n| row | case | MiB | wall ms | floor ms | t x | gc-on x | peak x | floor peak x |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in results:
            peak, peak0 = ("", "") if r["peak_x"] is None else (f"{r['peak_x']:.2f}", f"{r['floor_peak_x']:.2f}")
            print(f"| {r['row']} | {r['case']} | {r['mib']:.2f} | {r['wall_ms']:.1f} | {r['floor_ms']:.1f} | "
                  f"{r['t_x']:.2f} | {r['gc_on_x']:.2f} | {peak} | {peak0} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
