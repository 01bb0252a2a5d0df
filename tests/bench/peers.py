#!/usr/bin/env python3
"""The readers of the SDK environment on the same stream bytes as the validator.  Not a unit test.

Run it with the interpreter that has the SDKs (tests/adapters/.venv/bin/python, made by tests/adapters/setup.py);
a peer whose package is missing is skipped with a message.  Nothing here is imported by the validator or by
the unit tests.

For each profile and case it builds one passing turn with floor.py's builders, frames it as the provider sends
it (vts.PROFILES[p].http.frame, as capture.py does; Claude on Bedrock: InvokeModelWithResponseStream chunk
frames) and hands THE SAME BYTES to each peer through an in-memory transport (httpx.MockTransport, or the SDK's
own decoder): no network.  Per peer it prints the best wall time of reading the body to the calls an
application would run (names and arguments checked against ours, untimed), next to ours on the same turn:

  valid ms   validate_bytes(envelope, pause_gc=True): the envelope capture writes of that body (a full verdict)
  feed ms    StreamGate.feed_bytes of the body in 16 KiB pieces, then finish() (a full verdict)
  x valid    peer / valid;  x feed: peer / feed

Peers (the kind says which target applies; issue 34: at least 1x each whole-call reader, at least 25x every
reader that reassembles fragments):

  openai             openai-python   chat.completions.stream(...).get_final_completion()   fragments
                     langchain       ChatOpenAI.stream(), chunks added with +               fragments
                     litellm         completion(stream=True), stream_chunk_builder(chunks)  fragments
  anthropic          anthropic       messages.stream(...).get_final_message()               fragments
                     langchain       ChatAnthropic.stream(), chunks added with +            fragments
  anthropic-invoke   bedrock-decoder anthropic.lib.bedrock's AWSEventStreamDecoder, each
                                     chunk to its event text, each parsed (json.loads)      whole
  gemini             google-genai    models.generate_content_stream, every chunk's
                                     function_calls (the Gemini API sends whole calls)      whole
  cohere             cohere          ClientV2.chat_stream, arguments joined by index        fragments
  ollama             ollama          Client.chat(stream=True), every message.tool_calls     whole

Timings are taken in turn (ours, then the peer), best of --repeat, the collector on for the peers (as they run)
and paused for ours (as the CLI runs); a peer run over 2 s is not repeated.

Usage:
  tests/adapters/.venv/bin/python tests/bench/peers.py                     # fragments and text, 2,000 events
  tests/adapters/.venv/bin/python tests/bench/peers.py --rows ollama,gemini --cases fragments,arg-1MB,parallel-64
  tests/adapters/.venv/bin/python tests/bench/peers.py --script /work/wt/base34.py   # another copy of ours
"""

from __future__ import annotations

import argparse
import base64
import gc
import importlib.util
import json
import logging
import sys
import time
from pathlib import Path

from loading import load   # tests/bench/loading.py (the script's own folder is on sys.path)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BASE = "http://peer-replay.invalid"   # never resolved: the transport answers in memory
MESSAGES = [{"role": "user", "content": "-"}]
ROWS = ("openai", "anthropic", "anthropic-invoke", "gemini", "cohere", "ollama")
TARGET = {"fragments": 25.0, "whole": 1.0}


def transport(httpx_module, body: bytes, kind: str):
    return httpx_module.MockTransport(lambda request: httpx_module.Response(200, content=body,
                                                                           headers={"content-type": kind}))


def tools_openai(schemas: dict) -> list[dict]:
    return [{"type": "function", "function": {"name": n, "description": n, "parameters": s}}
            for n, s in schemas.items()]


# Each peer: body (bytes), schemas -> [(name, arguments as a JSON value)] of the calls it hands over.

def peer_openai(body: bytes, schemas: dict) -> list:
    import httpx2
    from openai import OpenAI

    client = OpenAI(api_key="unused", base_url=BASE + "/v1", max_retries=0,
                    http_client=httpx2.Client(transport=transport(httpx2, body, "text/event-stream")))
    with client.chat.completions.stream(model="gpt-4o", messages=MESSAGES) as stream:
        completion = stream.get_final_completion()
    return [(c.function.name, json.loads(c.function.arguments)) for c in completion.choices[0].message.tool_calls]


def peer_langchain_openai(body: bytes, schemas: dict) -> list:
    import httpx2
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-4o", api_key="unused", base_url=BASE + "/v1", max_retries=0,
                       http_client=httpx2.Client(transport=transport(httpx2, body, "text/event-stream")))
    return _langchain_sum(model.bind_tools(tools_openai(schemas)))


def _langchain_sum(runnable) -> list:
    full = None
    for chunk in runnable.stream("-"):
        full = chunk if full is None else full + chunk
    return [(call["name"], call["args"]) for call in full.tool_calls]


def peer_litellm(body: bytes, schemas: dict) -> list:
    import httpx2
    import litellm
    from openai import OpenAI

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    client = OpenAI(api_key="unused", base_url=BASE + "/v1", max_retries=0,
                    http_client=httpx2.Client(transport=transport(httpx2, body, "text/event-stream")))
    response = litellm.completion(model="openai/gpt-4o", messages=MESSAGES, stream=True, max_retries=0,
                                  client=client, tools=tools_openai(schemas))
    final = litellm.stream_chunk_builder(list(response), messages=MESSAGES)
    return [(c.function.name, json.loads(c.function.arguments)) for c in final.choices[0].message.tool_calls]


def peer_anthropic(body: bytes, schemas: dict) -> list:
    import httpx2
    import anthropic

    client = anthropic.Anthropic(api_key="unused", base_url=BASE, max_retries=0,
                                 http_client=httpx2.Client(transport=transport(httpx2, body, "text/event-stream")))
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=MESSAGES) as stream:
        message = stream.get_final_message()
    return [(block.name, block.input) for block in message.content if block.type == "tool_use"]


def peer_langchain_anthropic(body: bytes, schemas: dict) -> list:
    import httpx2
    import anthropic
    from langchain_anthropic import ChatAnthropic

    model = ChatAnthropic(model="claude-sonnet-4-5", api_key="unused", max_retries=0)
    # its client is a cached property with no transport option: one whose transport answers in memory
    model.__dict__["_client"] = anthropic.Anthropic(api_key="unused", base_url=BASE, max_retries=0, http_client=(
        httpx2.Client(transport=transport(httpx2, body, "text/event-stream"))))
    return _langchain_sum(model.bind_tools([{"name": n, "description": n, "input_schema": s}
                                            for n, s in schemas.items()]))


def peer_bedrock_decoder(body: bytes, schemas: dict) -> list:
    from anthropic.lib.bedrock._stream_decoder import AWSEventStreamDecoder

    events = [json.loads(sse.data) for sse in AWSEventStreamDecoder().iter_bytes(iter([body]))]
    # the decoder hands over events, not calls: the call is read from them, untimed, by the check
    return [("events", len(events))]


def peer_google_genai(body: bytes, schemas: dict) -> list:
    import httpx
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="unused", http_options=types.HttpOptions(
        base_url=BASE, httpx_client=httpx.Client(transport=transport(httpx, body, "text/event-stream"))))
    calls = []
    for chunk in client.models.generate_content_stream(model="gemini-2.5-pro", contents="-"):
        calls += [(call.name, call.args) for call in chunk.function_calls or ()]
    return calls


def peer_cohere(body: bytes, schemas: dict) -> list:
    import httpx
    import cohere

    client = cohere.ClientV2(api_key="unused", base_url=BASE, httpx_client=httpx.Client(
        transport=transport(httpx, body, "text/event-stream")))
    open_calls, done = {}, []
    for event in client.chat_stream(model="command-a-03-2025", messages=MESSAGES):
        if event.type == "tool-call-start":
            call = event.delta.message.tool_calls
            open_calls[event.index] = [call.function.name, call.function.arguments or ""]
        elif event.type == "tool-call-delta":
            open_calls[event.index][1] += event.delta.message.tool_calls.function.arguments
        elif event.type == "tool-call-end":
            name, text = open_calls.pop(event.index)
            done.append((name, json.loads(text)))
    return done


def peer_ollama(body: bytes, schemas: dict) -> list:
    import httpx
    import ollama

    client = ollama.Client(host=BASE, transport=transport(httpx, body, "application/x-ndjson"))
    calls = []
    for part in client.chat(model="qwen3:8b", messages=MESSAGES, stream=True):
        calls += [(c.function.name, dict(c.function.arguments)) for c in part.message.tool_calls or ()]
    return calls


# row -> [(peer, the packages it needs (comma-separated), kind, reader)]
PEERS = {
    "openai": [("openai-python", "openai", "fragments", peer_openai),
               ("langchain-openai", "langchain_openai", "fragments", peer_langchain_openai),
               ("litellm", "litellm", "fragments", peer_litellm)],
    "anthropic": [("anthropic", "anthropic", "fragments", peer_anthropic),
                  ("langchain-anthropic", "langchain_anthropic", "fragments", peer_langchain_anthropic)],
    "anthropic-invoke": [("bedrock-decoder", "anthropic,botocore", "whole", peer_bedrock_decoder)],
    "gemini": [("google-genai", "google.genai", "whole", peer_google_genai)],
    "cohere": [("cohere", "cohere", "fragments", peer_cohere)],
    "ollama": [("ollama", "ollama", "whole", peer_ollama)],
}


def installed(packages: str) -> bool:
    try:
        return all(importlib.util.find_spec(package) is not None for package in packages.split(","))
    except (ImportError, ValueError):
        return False


def body_of(vts, floor, row: str, case: str, events: int) -> tuple[str, list, bytes]:
    """(profile, stream, the body as the provider sends it) of one row and case."""
    profile, stream = floor.stream_of(row, case, events)
    if row == "anthropic-invoke":
        return profile, stream, b"".join(vts.eventstream_frame({"chunk": {"bytes": base64.b64encode(json.dumps(
            event, separators=(",", ":")).encode()).decode()}}) for event in stream)
    return profile, stream, vts.PROFILES[profile].http.frame(stream, "alt=sse")[1]


def best(run, repeat: int, paused: bool) -> float:
    took = float("inf")
    for _ in range(repeat):
        gc.collect()
        if paused:
            gc.disable()
        try:
            start = time.perf_counter()
            run()
            took = min(took, time.perf_counter() - start)
        finally:
            gc.enable()
        if took > 2.0:
            break
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated (default: every row with a peer)")
    parser.add_argument("--cases", default="fragments,text", help="floor.py's cases (default fragments,text)")
    parser.add_argument("--events", type=int, default=2000, help="events of the fragments and text cases")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    parser.add_argument("--piece", type=int, default=16384, help="bytes per feed_bytes call (default 16384)")
    parser.add_argument("--script", type=Path, default=ROOT / "scripts" / "validate_tool_stream.py")
    args = parser.parse_args(argv)
    vts = load("validate_tool_stream", args.script)
    floor = load("vts_bench_floor", HERE / "floor.py")
    logging.disable(logging.WARNING)   # an SDK's warning per chunk it skips is not what is measured
    print(f"# {args.script} | Python {sys.version.split()[0]} | {args.events} events | best of {args.repeat} | "
          f"ours with the collector paused, peers with it on")
    for row in args.rows.split(","):
        for name, package, _, _ in PEERS.get(row, []):
            if not installed(package):
                print(f"# {row}: {name} skipped: {package} not installed in this interpreter")
    print(f"{'row':17} {'case':12} {'MiB':>5} {'peer':20} {'kind':9} {'peer ms':>9} {'valid ms':>9} {'feed ms':>8} "
          f"{'x valid':>8} {'x feed':>7}  target")
    missed, timed = [], 0
    for row in args.rows.split(","):
        peers = [p for p in PEERS.get(row, []) if installed(p[1])]
        for case in args.cases.split(","):
            if not peers:
                continue
            profile, stream, body = body_of(vts, floor, row, case, args.events)
            envelope, _ = vts.sse_to_envelope(body, profile, None, redact=False)
            envelope["tool_schemas"] = floor.SCHEMAS
            data = json.dumps(envelope, ensure_ascii=False).encode()
            pieces = [body[k:k + args.piece] for k in range(0, len(body), args.piece)]

            def fed(profile=profile, pieces=pieces):
                gate = vts.StreamGate(profile, floor.SCHEMAS)
                for piece in pieces:
                    gate.feed_bytes(piece)
                return gate.finish()

            report = vts.validate_bytes(data, pause_gc=True)
            assert report["status"] == "pass" and fed()["status"] == "pass", (row, case, report["findings"][:2])
            ours = [(call["name"], json.loads(call["arguments"])) for call in report["calls"]]
            valid = best(lambda data=data: vts.validate_bytes(data, pause_gc=True), args.repeat, True)
            feed = best(fed, args.repeat, True)
            for name, _, kind, reader in peers:
                try:
                    got = reader(body, floor.SCHEMAS)
                except Exception as exc:   # noqa: BLE001 - a peer that cannot read the body is said, not timed
                    print(f"{row:17} {case:12} {'':5} {name:20} {kind:9} failed: {type(exc).__name__}: "
                          f"{str(exc)[:80]}")
                    continue
                if name == "bedrock-decoder":
                    assert got == [("events", len(stream))], (row, case, got)
                else:
                    assert got == ours, (row, case, name, str(got)[:200], str(ours)[:200])
                peer = best(lambda reader=reader, body=body: reader(body, floor.SCHEMAS), args.repeat, False)
                ratio_valid, ratio_feed = peer / valid, peer / feed
                timed += 1
                met = min(ratio_valid, ratio_feed) >= TARGET[kind]
                if not met:
                    missed.append(f"{row}/{case}/{name}")
                print(f"{row:17} {case:12} {len(body) / 2 ** 20:5.2f} {name:20} {kind:9} {peer * 1e3:9.1f} "
                      f"{valid * 1e3:9.1f} {feed * 1e3:8.1f} {ratio_valid:8.1f} {ratio_feed:7.1f}  "
                      f">= {TARGET[kind]:g}x {'met' if met else 'MISSED'}", flush=True)
    print("targets: at least 1x every whole-call reader, at least 25x every reader that reassembles fragments "
          "(both ratios); " + ("no peer ran" if not timed else "missed: " + ", ".join(missed) if missed else "all met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
