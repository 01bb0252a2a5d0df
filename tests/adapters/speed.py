#!/usr/bin/env python3
"""How long the adapters' own accumulation takes, next to the validator, on the same streams.

    python3 tests/adapters/speed.py [--quick] [--adapters a,b] [--markdown] [--limit S]

Run it with a Python that has the adapter packages (tests/adapters/requirements.txt; a missing
package only skips its adapter). Not a test, and not part of the validator.

Streams (Python dicts built once, before any timing), each at 1x and 2x size:

  a  one call, a 1 MB argument (write_file content) in 10,000 deltas   (2x: 2 MB in 20,000)
  b  100,000 chunks/events over 4 calls, about 4 characters a delta   (2x: 200,000)
  c  64 calls of 250 deltas each                                       (2x: 500 deltas each)
     openai chat: the 64 calls' deltas interleaved round-robin; anthropic and openai
     Responses: 64 sequential blocks / output items (those APIs never interleave calls)

in three wire shapes: openai chat chunks (profile openai), Anthropic events (anthropic) and
OpenAI Responses events (openai-responses). In (a) and (b) the calls come one after another
in every shape.

For each stream and each adapter that reads its shape, three timings, in this process:

  adapter     the adapter's own accumulation of the stream into its final calls, over the
              objects that accumulation consumes, built BEFORE timing (ChatCompletionChunk,
              ResponseStreamEvent, RawMessageStreamEvent, ModelResponseStream, AIMessageChunk;
              see adapter_table() for what each row times)
  validate    vts.validate_envelope(envelope)
  feed        vts.StreamGate(profile, tool_schemas): .feed(item) per item, then .finish()

Every timing is the best of N runs (N=3 with --quick, 5 otherwise), with the garbage
collector enabled as in real use (one gc.collect() before each measurement, none between
its runs). A run that passes the limit (--limit, 60 s) is stopped and shown as ">60 s",
with how far it got when the accumulation is a loop over the objects; the 2x size is then
not tried, nor when 1x took more than half the limit. A measurement also stops repeating
when its next run would take it past the limit (listed under Notes). Every run's result is
checked, untimed: the adapter must hand over exactly the stream's calls (names, arguments
equal as JSON values), and the validator must pass them.

The vercel-ai-sdk rows are timed inside node (the driver's time_runs mode): the SSE body
is built once from the same payloads, untimed, then streamText reads it from memory through
a custom fetch, twice per node process; a run's time is the faster of the two (the first
also warms up the JIT). That includes the SDK's SSE parsing and its JSON.parse of every
event, which the Python adapters are spared (they get pre-built objects): those rows are
comparable in kind, not one to one.

google-genai is skipped: it hands each chunk's function_calls over as they come and
accumulates nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import importlib.util
import json
import math
import operator
import os
import platform
import signal
import sys
import time
from typing import Any, Callable, NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)   # imported from there as the package ``adapters``
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from adapters import drivers, validator  # noqa: E402  (standard library only at import time)

vts = validator()


def _load_bench():
    """tests/bench/bench.py as a module: its invented argument texts and tool schemas."""
    spec = importlib.util.spec_from_file_location("_vts_bench", os.path.join(TESTS, "bench", "bench.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
TOOL_SCHEMAS = bench.TOOL_SCHEMAS
MESSAGES = [{"role": "user", "content": "-"}]


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# the streams
# --------------------------------------------------------------------------------------

SHAPES = {
    "a": "1 call, 1 MB arg",
    "b": "100k items, 4 calls",
    "c": "64 calls",
}
STREAM_KEY = {"openai": "chunks", "anthropic": "events", "openai-responses": "events"}


def shape_calls(shape: str, scale: int) -> list[tuple[str, list[str]]]:
    """(tool name, argument deltas) per call."""
    if shape == "a":
        return [("write_file", bench.split(bench.write_file_arguments(scale * 1_000_000), scale * 10_000))]
    if shape == "b":
        per_call = (scale * 100_000 - 12) // 4   # the rest of the 100k are headers and terminals
        return [("upsert_records", bench.split(bench.records_arguments(per_call * 4 + k), per_call)) for k in range(4)]
    if shape == "c":
        per_call = 250 * scale
        return [("upsert_records", bench.split(bench.records_arguments(per_call * 4 + k), per_call)) for k in range(64)]
    raise ValueError(shape)


def size_label(shape: str, scale: int) -> str:
    return {"a": f"{scale} MB / {scale * 10}k deltas", "b": f"{scale * 100}k items",
            "c": f"64 x {scale * 250} deltas"}[shape] + f" ({scale}x)"


def openai_chunks(calls: list[tuple[str, list[str]]], interleave: bool) -> list[dict]:
    """Chat Completions chunks (the shape of tests/bench/bench.py's chat_stream): role, then per
    call a header and its deltas (all headers first, then the deltas round-robin, when
    interleaving), finish_reason tool_calls, usage."""
    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {"id": "chatcmpl-Bx7QeN4r2Lk9sVd1TzWmA8pYcHu3F", "object": "chat.completion.chunk",
                "created": 1767225600, "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_5e1c3b9a7d",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                "usage": None}

    def header(k: int, name: str) -> dict:
        return chunk({"tool_calls": [{"index": k, "id": bench.call_id("openai", k), "type": "function",
                                      "function": {"name": name, "arguments": ""}}]})

    def fragment(k: int, text: str) -> dict:
        return chunk({"tool_calls": [{"index": k, "function": {"arguments": text}}]})

    out = [chunk({"role": "assistant", "content": None, "refusal": None})]
    if interleave:
        out += [header(k, name) for k, (name, _) in enumerate(calls)]
        for j in range(max(len(frags) for _, frags in calls)):
            out += [fragment(k, frags[j]) for k, (_, frags) in enumerate(calls) if j < len(frags)]
    else:
        for k, (name, frags) in enumerate(calls):
            out.append(header(k, name))
            out += [fragment(k, text) for text in frags]
    out.append(chunk({}, "tool_calls"))
    last = chunk({})
    last["choices"], last["usage"] = [], {"prompt_tokens": 812, "completion_tokens": 4096, "total_tokens": 4908}
    out.append(last)
    return out


def anthropic_events(calls: list[tuple[str, list[str]]]) -> list[dict]:
    """Messages API events: message_start, ping, then per call a tool_use block (start, its
    input_json_delta events, stop), message_delta (tool_use), message_stop."""
    out: list[dict] = [
        {"type": "message_start", "message": {
            "id": "msg_01BenchQz8kLm3NpR5sT7vW9x", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 812, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": 1}}},
        {"type": "ping"},
    ]
    for k, (name, frags) in enumerate(calls):
        out.append({"type": "content_block_start", "index": k, "content_block": {
            "type": "tool_use", "id": bench.call_id("anthropic", k), "name": name, "input": {}}})
        out += [{"type": "content_block_delta", "index": k,
                 "delta": {"type": "input_json_delta", "partial_json": text}} for text in frags]
        out.append({"type": "content_block_stop", "index": k})
    out.append({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 4096}})
    out.append({"type": "message_stop"})
    return out


def responses_events(calls: list[tuple[str, list[str]]]) -> list[dict]:
    """Responses API events (the shape of fixtures/openai-responses/pass-parallel-calls.json):
    created, in_progress, per call output_item.added / arguments deltas / arguments.done /
    output_item.done, then response.completed carrying every item."""
    out: list[dict] = []

    def add(event: dict) -> None:
        event["sequence_number"] = len(out)
        out.append(event)

    def response(status: str, output: list, usage: dict | None) -> dict:
        return {"id": "resp_68c2f102a0b4c81f9e0d2b77c3", "object": "response", "created_at": 1767225600,
                "status": status, "model": "gpt-4.1-2025-04-14", "output": output, "parallel_tool_calls": True,
                "tool_choice": "auto", "usage": usage}

    add({"type": "response.created", "response": response("in_progress", [], None)})
    add({"type": "response.in_progress", "response": response("in_progress", [], None)})
    items = []
    for k, (name, frags) in enumerate(calls):
        item_id, call = f"fc_68c2f1b0{k:04d}7c8190a6d1", f"call_Bench{k:04d}Kq7LmN2pRs4TvW"
        add({"type": "response.output_item.added", "output_index": k, "item": {
            "id": item_id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call,
            "name": name}})
        for text in frags:
            add({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": k,
                 "delta": text})
        arguments = "".join(frags)
        add({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": k,
             "name": name, "arguments": arguments})
        done = {"id": item_id, "type": "function_call", "status": "completed", "arguments": arguments,
                "call_id": call, "name": name}
        add({"type": "response.output_item.done", "output_index": k, "item": done})
        items.append(dict(done))
    add({"type": "response.completed", "response": response(
        "completed", items, {"input_tokens": 812, "output_tokens": 4096, "total_tokens": 4908})})
    return out


def build_stream(profile: str, shape: str, calls) -> list[dict]:
    if profile == "openai":
        return openai_chunks(calls, interleave=(shape == "c"))
    if profile == "anthropic":
        return anthropic_events(calls)
    return responses_events(calls)


# --------------------------------------------------------------------------------------
# the adapters: prepare (untimed: build what the accumulation consumes) and accumulate (timed)
# --------------------------------------------------------------------------------------

class Progress:
    """The accumulation's iterator over the pre-built items, so a stopped run can say how far it got."""

    def __init__(self) -> None:
        self.total = 0
        self.iterator = None

    def over(self, items: list):
        self.total, self.iterator = len(items), iter(items)
        return self.iterator

    def done(self) -> int | None:
        if self.iterator is None:
            return None
        return self.total - operator.length_hint(self.iterator)


class Adapter(NamedTuple):
    key: str                 # name for --adapters (as in drivers.py ADAPTERS)
    label: str
    profile: str
    prepare: Callable[[list], Any] | None     # items -> what accumulate consumes (untimed); None: the dicts
    accumulate: Callable[[Any, Progress], list] | None   # -> [(name, arguments as text or value)]
    note: str
    allowance: float = 0.0   # seconds a run may take beyond the limit outside its own figure (node start)


def _construct(items: list, cast_to) -> list:
    """What openai-python's Stream[cast_to] yields: construct_type per payload."""
    from openai._models import construct_type

    return [construct_type(type_=cast_to, value=data) for data in items]


@contextlib.contextmanager
def _prebuilt_items():
    """the SDK drivers for openai construct the Stream layer's objects themselves
    (_openai_stream_items); while this is active they take the pre-built objects as they are,
    so the timed code is the SDK driver's own body minus that construction."""
    original = drivers._openai_stream_items
    drivers._openai_stream_items = lambda payloads, cast_to: payloads
    try:
        yield
    finally:
        drivers._openai_stream_items = original


def _calls_as_pairs(calls: list[dict]) -> list:
    return [(c["name"], c["arguments"]) for c in calls]


# openai-python, chat: ChatCompletionChunk objects -> ChatCompletionStreamState

def openai_chat_prepare(items):
    from openai.types.chat import ChatCompletionChunk

    return _construct(items, ChatCompletionChunk)


def openai_chat_accumulate(chunks, progress):
    with _prebuilt_items():  # SDK driver _chat_calls: handle_chunk per chunk, get_final_completion()
        return _calls_as_pairs(drivers._chat_calls(progress.over(chunks), weak_object_filter=False))


# openai-python, Responses: ResponseStreamEvent objects -> ResponseStreamState

def responses_prepare(items):
    from openai.types.responses import ResponseStreamEvent

    return _construct(items, ResponseStreamEvent)


def openai_responses_accumulate(events, progress):
    with _prebuilt_items():  # SDK driver _responses_calls: handle_event per event, the completed response
        return _calls_as_pairs(drivers._responses_calls(progress.over(events)))


def openai_agents_accumulate(events, progress):
    with _prebuilt_items():  # SDK driver _agents_calls: the run loop over the raw events, ModelResponse, dedupe
        return _calls_as_pairs(drivers._agents_calls(progress.over(events)))


# anthropic: RawMessageStreamEvent objects -> accumulate_event (MessageStream.__stream__)

def anthropic_prepare(items):
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    # the Stream layer drops ping (and unnamed) events before constructing anything
    return [construct_type(type_=RawMessageStreamEvent, value=data) for data in items
            if data.get("type") not in (None, "ping", "error")]


def anthropic_accumulate(events, progress):
    """SDK driver _anthropic_calls over pre-built events: accumulate_event and build_events per
    event, as MessageStream.__stream__ does, then get_final_message()'s tool_use blocks."""
    from adapters.drivers import anthropic_snapshot

    snapshot = anthropic_snapshot(progress.over(events))
    assert snapshot is not None
    return [(block.name, block.input) for block in snapshot.content if block.type == "tool_use"]


# litellm: ModelResponseStream objects -> stream_chunk_builder

def litellm_prepare(items):
    """ModelResponseStream(**chunk) per chunk. drivers.py gets its chunks from
    litellm.completion(stream=True)'s CustomStreamWrapper instead; that wrapper spends about
    2 ms a chunk here (10,000 chunks: about 20 s), too long to build 200,000 of them. Its
    chunks differ from these only in created/model/cost fields, and stream_chunk_builder
    takes about as long on either."""
    drivers._prepare_environment("litellm")   # before litellm's first import: no cost map download
    with drivers._quiet():   # pydantic warns about litellm's TypedDicts on first use
        from litellm.types.utils import ModelResponseStream

        return [ModelResponseStream(**chunk) for chunk in items]


def litellm_accumulate(chunks, progress):
    import litellm

    with drivers._quiet():
        final = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    return [(tc.function.name, tc.function.arguments) for tc in final.choices[0].message.tool_calls or ()]


# langchain-core: the AIMessageChunks ChatOpenAI.stream() yields -> summed with +

def _openai_tools() -> list[dict]:
    return [{"type": "function", "function": {"name": name, "description": name, "parameters": schema}}
            for name, schema in TOOL_SCHEMAS.items()]


def langchain_prepare(items):
    """drivers.py's langchain-core path up to the chunks: ChatOpenAI (with tools bound)
    .stream() over the stream served as SSE in memory; the AIMessageChunks it yields are kept."""
    drivers._prepare_environment("langchain-core")
    import httpx2
    from langchain_openai import ChatOpenAI

    body = drivers._sse(items, named_events=False, done=True)
    model = ChatOpenAI(model=drivers.OPENAI_MODEL, api_key="unused", base_url=drivers.MOCK_BASE + "/v1",
                       max_retries=0, http_client=drivers._mock_client(httpx2, body))
    with drivers._quiet():
        return list(model.bind_tools(_openai_tools()).stream("-"))


def langchain_accumulate(chunks, progress):
    full = None
    for chunk in progress.over(chunks):   # the documented accumulation
        full = chunk if full is None else full + chunk
    return [(tc["name"], tc["args"]) for tc in full.tool_calls]


# vercel-ai-sdk: timed in node (the driver's time_runs mode; it takes the dicts, builds the SSE
# body untimed and times streamText reading it)

VERCEL_RUNS = 2   # streamText runs per node process; the faster one counts
VERCEL_ALLOWANCE = 30.0   # s for encoding the job, starting node and importing the SDK (outside the figure)


def vercel_runner(profile: str, limit: float):
    def accumulate(items, progress):
        module = drivers._vercel_module()
        job = {"profile": profile, "tool_schemas": TOOL_SCHEMAS, "stream": items, "timeout_ms": int(limit * 1000),
               "time_runs": VERCEL_RUNS}
        try:
            (result,) = module.vercel_batch([job], timeout=limit + VERCEL_ALLOWANCE)
        except module.VercelError as exc:
            if "timed out" in str(exc):
                raise TimeLimit() from exc
            raise
        if "timeout" in str(result.get("error", "")):
            raise TimeLimit()
        if "error" in result or not result.get("executable") or not result.get("timings_ms"):
            raise RuntimeError(f"vercel driver: {result.get('error') or result.get('errors')}")
        calls = [(c["name"], c["input"]) for c in result["calls"] if not c.get("invalid")]
        return Timed(calls, min(result["timings_ms"]) / 1000)
    return accumulate


def adapter_table(limit: float) -> list[Adapter]:
    rows = [
        Adapter("openai-python", "openai-python", "openai", openai_chat_prepare, openai_chat_accumulate,
                "ChatCompletionStreamState.handle_chunk per ChatCompletionChunk, get_final_completion()"),
        Adapter("litellm", "litellm", "openai", litellm_prepare, litellm_accumulate,
                "stream_chunk_builder(chunks) over ModelResponseStream objects built directly from the chunks "
                "(not by CustomStreamWrapper, which adds about 2 ms a chunk: not timed)"),
        Adapter("langchain-core", "langchain-core", "openai", langchain_prepare, langchain_accumulate,
                "full = full + chunk over the AIMessageChunks ChatOpenAI.stream() yielded, then .tool_calls"),
        Adapter("anthropic", "anthropic", "anthropic", anthropic_prepare, anthropic_accumulate,
                "accumulate_event + build_events per RawMessageStreamEvent (MessageStream), final tool_use blocks"),
        Adapter("openai-python", "openai-python (Responses)", "openai-responses", responses_prepare,
                openai_responses_accumulate,
                "ResponseStreamState.handle_event per ResponseStreamEvent, the completed response's calls"),
        Adapter("openai-agents", "openai-agents", "openai-responses", responses_prepare, openai_agents_accumulate,
                "the run loop over ResponseStreamEvents (SDK driver _agents_calls): takes response.completed's "
                "output, concatenates no deltas"),
        Adapter("google-genai", "google-genai", "gemini", None, None,
                "skipped: hands every chunk's function_calls over as they come, accumulates nothing"),
    ]
    for profile in ("openai", "anthropic", "openai-responses"):
        rows.append(Adapter("vercel-ai-sdk", "vercel-ai-sdk (node)", profile, None,
                            vercel_runner(profile, limit),
                            f"in node: streamText over the SSE body held in memory (SSE parsing and JSON.parse "
                            f"of each event included), the faster of {VERCEL_RUNS} runs per node process",
                            VERCEL_ALLOWANCE))
    return rows


# --------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------

class TimeLimit(BaseException):
    """A run passed the limit (a BaseException, so no library's `except Exception` eats it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    if not hasattr(signal, "setitimer"):   # no SIGALRM (Windows): no limit
        yield
        return

    def expire(signum, frame):
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Timed(NamedTuple):
    """What a runner that times itself returns (vercel-ai-sdk, timed inside node)."""
    result: Any
    seconds: float


class Timing(NamedTuple):
    best: float | None        # seconds; None when over the limit or skipped
    runs: int
    note: str = ""           # ">60 s ..." / "not run ..."


def measure(fn: Callable[[Progress], Any], repeat: int, limit: float,
            check: Callable[[Any], None] | None = None, allowance: float = 0.0) -> Timing:
    """Best of `repeat` runs of fn, each stopped at `limit` s; fewer runs when the next one would
    push the whole measurement past `limit`. check(result) runs after every run, untimed (a
    library that changed the pre-built objects would show up in a later run). A run that times
    itself (returns Timed) enforces `limit` on its own figure; the clock here then allows
    `allowance` s more for what lies outside it (starting node)."""
    best, runs, spent = math.inf, 0, 0.0
    gc.collect()   # once per measurement: a full collection of this heap takes 0.2-0.5 s
    while runs < repeat:
        progress = Progress()
        start = time.perf_counter()
        try:
            with time_limit(limit + allowance):
                out = fn(progress)
        except TimeLimit:
            done = progress.done()
            where = f" ({done:,} of {progress.total:,} objects done)" if done is not None else ""
            return Timing(None, runs, f">{limit:g} s{where}")
        except Exception as exc:   # the library failed on the stream: no time to show
            log(f"  failed: {type(exc).__name__}: {exc}"[:400])
            return Timing(None, runs, f"failed: {type(exc).__name__}")
        elapsed = wall = time.perf_counter() - start
        if isinstance(out, Timed):   # the run timed itself: its own figure counts, the wall clock budgets
            out, elapsed = out.result, out.seconds
        if check is not None:
            try:
                check(out)
            except AssertionError as exc:
                log(f"  wrong result: {exc}")
                return Timing(None, runs, "wrong result")
        del out
        best, runs, spent = min(best, elapsed), runs + 1, spent + wall
        if spent + wall > limit + allowance:
            break
    return Timing(best, runs, "")


# --------------------------------------------------------------------------------------
# checks (untimed)
# --------------------------------------------------------------------------------------

def _value(arguments):
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def check_calls(label: str, got: list, calls: list[tuple[str, list[str]]]) -> None:
    """The adapter handed over exactly the calls of the stream (names, arguments as JSON values)."""
    if len(got) != len(calls):
        raise AssertionError(f"{label}: {len(got)} calls, expected {len(calls)}")
    for k, ((name, arguments), (want_name, frags)) in enumerate(zip(got, calls)):
        if name != want_name or _value(arguments) != json.loads("".join(frags)):
            raise AssertionError(f"{label}: call {k} differs from the stream's ({name!r})")


def check_report(label: str, report: dict, ncalls: int) -> None:
    if report.get("status") != "pass" or len(report.get("calls", ())) != ncalls:
        codes = sorted({f.get("code") for f in report.get("findings", ())})
        raise AssertionError(f"{label}: status {report.get('status')} {codes}, {len(report.get('calls', ()))} calls")


# --------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------

class Row(NamedTuple):
    shape: str
    scale: int
    profile: str
    items: int
    adapter: str
    version: str
    build: str               # seconds spent building the adapter's objects (untimed), as text
    adapter_t: Timing
    validate_t: Timing
    gate_t: Timing


def version_of(adapter: Adapter) -> str:
    ok, info = drivers.availability(adapter.key)
    if not ok:
        return ""
    if adapter.key == "vercel-ai-sdk":
        return drivers.version(adapter.key)
    return info.split(",")[0].split(" ", 1)[1]


def run(args) -> tuple[list[Row], list[str], list[str]]:
    """The measurements: rows, notes, and per adapter what its timing covers."""
    repeat = 3 if args.quick else 5
    limit = args.limit
    wanted = {name.strip() for name in args.adapters.split(",") if name.strip()} if args.adapters else None
    if wanted is not None and wanted - set(drivers.ADAPTERS):
        raise SystemExit(f"unknown adapter(s): {', '.join(sorted(wanted - set(drivers.ADAPTERS)))}; "
                         f"choose from {', '.join(drivers.ADAPTERS)}")
    notes: list[str] = []
    timed: list[str] = []     # per adapter row label: what its timing covers
    adapters: list[Adapter] = []
    for adapter in adapter_table(limit):
        if wanted is not None and adapter.key not in wanted:
            continue
        if adapter.accumulate is None:
            notes.append(f"{adapter.label}: {adapter.note}")
            continue
        ok, info = drivers.availability(adapter.key)
        if not ok:
            message = f"{adapter.label}: skipped, {info}"
            if message not in notes:
                notes.append(message)
                log(message)
            continue
        adapters.append(adapter)
        line = f"{adapter.label}: {adapter.note}"
        if line not in timed:
            timed.append(line)

    rows: list[Row] = []
    first_scale: dict[tuple[str, str, str], Timing] = {}   # (shape, profile, adapter label) -> 1x timing
    profiles = [p for p in ("openai", "anthropic", "openai-responses") if any(a.profile == p for a in adapters)]
    for shape in SHAPES:
        for scale in (1, 2):
            calls = shape_calls(shape, scale)
            for profile in profiles:
                items = build_stream(profile, shape, calls)
                envelope = {"profile": profile, "tool_schemas": TOOL_SCHEMAS, STREAM_KEY[profile]: items}
                where = f"{shape} {size_label(shape, scale)} {profile} ({len(items):,} items)"

                def gate(progress, profile=profile, items=items):
                    g = vts.StreamGate(profile, TOOL_SCHEMAS)
                    feed = g.feed
                    for item in items:
                        feed(item)
                    return g.finish()

                log(f"{where}: validate_envelope, StreamGate")
                validate_t = measure(lambda progress, doc=envelope: vts.validate_envelope(doc), repeat, limit,
                                     lambda report: check_report(f"{where} validate_envelope", report, len(calls)))
                gate_t = measure(gate, repeat, limit,
                                 lambda report: check_report(f"{where} StreamGate", report, len(calls)))

                prepared: dict[Any, Any] = {}   # prepare function -> its objects (shared by adapters)
                built: dict[Any, str] = {}      # prepare function -> seconds it took
                objects = None
                todo = [a for a in adapters if a.profile == profile]
                for adapter in todo:
                    key = (shape, profile, adapter.label)
                    earlier = first_scale.get(key) if scale == 2 else None
                    build = ""
                    if earlier is not None and (earlier.best is None or earlier.best > limit / 2):
                        if earlier.best is not None:
                            note = f"not run: 1x took {earlier.best:.1f} s, more than half the limit"
                        elif earlier.note.startswith(">"):
                            note = f">{limit:g} s (not run: 1x {earlier.note})"
                        else:
                            note = f"not run (1x: {earlier.note})"
                        timing = Timing(None, 0, note)
                        log(f"{where}: {adapter.label}: {timing.note}")
                    else:
                        if adapter.prepare is None:
                            prepared[None], built[None] = items, ""
                        elif adapter.prepare not in prepared:
                            log(f"{where}: building the objects for {adapter.label}")
                            start = time.perf_counter()
                            try:
                                with time_limit(limit):
                                    prepared[adapter.prepare] = adapter.prepare(items)
                                built[adapter.prepare] = f"{time.perf_counter() - start:.1f}"
                            except TimeLimit:
                                prepared[adapter.prepare] = None
                                built[adapter.prepare] = f">{limit:g}"
                            log(f"  built in {built[adapter.prepare]} s (untimed)")
                        objects, build = prepared[adapter.prepare], built[adapter.prepare]
                        if objects is None:
                            timing = Timing(None, 0, f"not run: building the objects took >{limit:g} s")
                        else:
                            log(f"{where}: {adapter.label}")
                            timing = measure(lambda progress, a=adapter, o=objects: a.accumulate(o, progress),
                                             repeat, limit,
                                             lambda got, a=adapter: check_calls(f"{where} {a.label}", got, calls),
                                             adapter.allowance)
                        log(f"  {fmt_timing(timing)}" + (" ms" if timing.best is not None else ""))
                    if not any(a.prepare is adapter.prepare for a in todo[todo.index(adapter) + 1:]):
                        prepared.pop(adapter.prepare, None)   # no later adapter reads them: free them now
                        objects = None
                    if scale == 1:
                        first_scale[key] = timing
                    rows.append(Row(shape, scale, profile, len(items), adapter.label, version_of(adapter), build,
                                    timing, validate_t, gate_t))
                objects = None
                del prepared, envelope, items
                gc.collect()
    return rows, notes, timed


# --------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------

def fmt_timing(t: Timing) -> str:
    if t.best is None:
        return t.note
    ms = t.best * 1000
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 1 else f"{ms:.2f}"


def ratio(a: Timing, b: Timing, limit: float) -> str:
    if b.best is None or b.best == 0 or (a.best is None and not a.note.startswith(">")):
        return "-"
    if a.best is None:   # over the limit: at least limit / b
        return f">{limit / b.best:,.0f}x"
    x = a.best / b.best
    return f"{x:.1f}x" if x < 100 else f"{x:,.0f}x"


def few_runs(rows: list[Row], repeat: int) -> list[str]:
    out = []
    for r in rows:
        for what, t in (("adapter", r.adapter_t), ("validate_envelope", r.validate_t), ("StreamGate", r.gate_t)):
            if t.best is not None and t.runs < repeat:
                out.append(f"{r.shape} {r.scale}x {r.profile} {r.adapter if what == 'adapter' else ''} {what}: "
                           f"best of {t.runs} (the next run would have passed the limit)".replace("  ", " "))
    return list(dict.fromkeys(out))


HEADERS = ("shape", "size", "profile", "items", "adapter (version)", "objects built s (untimed)", "adapter ms",
           "validate_envelope ms", "StreamGate.feed ms", "adapter/validate", "feed/validate")


def with_version(label: str, version: str) -> str:
    """"vercel-ai-sdk (node)", "6.0.333" -> "vercel-ai-sdk 6.0.333 (node)"."""
    name, paren, rest = label.partition(" (")
    return f"{name} {version}".strip() + (f" ({rest}" if paren else "")


def table_cells(rows: list[Row], limit: float) -> list[tuple[str, ...]]:
    return [(r.shape, size_label(r.shape, r.scale), r.profile, f"{r.items:,}",
             with_version(r.adapter, r.version), r.build or "-", fmt_timing(r.adapter_t), fmt_timing(r.validate_t),
             fmt_timing(r.gate_t), ratio(r.adapter_t, r.validate_t, limit), ratio(r.gate_t, r.validate_t, limit))
            for r in rows]


def growth(rows: list[Row]) -> list[tuple[str, ...]]:
    """(shape, profile, adapter, adapter 2x/1x, validate 2x/1x, feed 2x/1x) per adapter and shape."""
    by_key = {(r.shape, r.profile, r.adapter, r.scale): r for r in rows}
    out = []

    def g(t1: Timing, t2: Timing) -> str:
        if t1.best is None:
            return "- (1x over the limit)"
        if t2.best is None:
            return f">{t2.note.split(' s')[0].lstrip('>')} s at 2x" if t2.note.startswith(">") else "-"
        x = t2.best / t1.best
        kind = "linear" if x < 2.6 else "quadratic" if x >= 3.4 else "superlinear"
        return f"{x:.2f} ({kind})"

    for (shape, profile, adapter, scale), r2 in by_key.items():
        r1 = by_key.get((shape, profile, adapter, 1))
        if scale == 2 and r1 is not None:
            out.append((shape, profile, adapter, g(r1.adapter_t, r2.adapter_t),
                        g(r1.validate_t, r2.validate_t), g(r1.gate_t, r2.gate_t)))
    return out


GROWTH_HEADERS = ("shape", "profile", "adapter", "adapter 2x/1x", "validate_envelope 2x/1x", "StreamGate.feed 2x/1x")


def summary(rows: list[Row], limit: float) -> list[tuple[str, ...]]:
    """The 1x rows with the adapter's growth to 2x (the table in the project README)."""
    grew = {(shape, profile, adapter): adapter_growth for shape, profile, adapter, adapter_growth, _, _ in growth(rows)}
    short = {"a": "a: 1 MB / 10k deltas", "b": "b: 100k items", "c": "c: 64 x 250 deltas"}
    return [(short[r.shape], r.profile, with_version(r.adapter, r.version), fmt_timing(r.adapter_t),
             fmt_timing(r.validate_t), fmt_timing(r.gate_t), ratio(r.adapter_t, r.validate_t, limit),
             grew.get((r.shape, r.profile, r.adapter), "-"))
            for r in rows if r.scale == 1]


SUMMARY_HEADERS = ("shape (1x)", "profile", "adapter", "adapter ms", "validate_envelope ms", "StreamGate.feed ms",
                   "adapter / validate", "adapter growth 2x/1x")


def plain_table(headers, cells) -> str:
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def markdown_table(headers, cells) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
    return "\n".join(lines)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    return (f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()} ({platform.python_implementation()})")


def render(rows: list[Row], notes: list[str], timed: list[str], args, argv: list[str], elapsed: float) -> str:
    repeat = 3 if args.quick else 5
    command = " ".join(["python3 tests/adapters/speed.py", *argv])
    table = markdown_table if args.markdown else plain_table
    bullet = "- " if args.markdown else "  "
    out = []
    if args.markdown:
        out.append(f"Measured {datetime.date.today().isoformat()} on {machine()}, with `{command}` "
                   f"(best of {repeat}, limit {args.limit:g} s per measurement; the whole run took "
                   f"{elapsed / 60:.0f} min).")
    else:
        out.append(f"{datetime.date.today().isoformat()}  {machine()}")
        out.append(f"{command}  (best of {repeat}, limit {args.limit:g} s, whole run {elapsed / 60:.0f} min)")
    out += ["", "Shapes: " + "; ".join(f"{k} = {v}" for k, v in SHAPES.items())
            + ". validate_envelope and StreamGate.feed (feed per item, then finish) are the same measurement "
            "on every row of one stream.", ""]
    out += ["Summary, 1x sizes:", "", table(SUMMARY_HEADERS, summary(rows, args.limit)), ""]
    out += ["All rows:", "", table(HEADERS, table_cells(rows, args.limit)), ""]
    out += ["Growth from 1x to 2x (about 2 = linear, about 4 = quadratic):", ""]
    out += [table(GROWTH_HEADERS, growth(rows)), ""]
    out += ["What the adapter column times (objects built before timing):", ""]
    out += [f"{bullet}{line}" for line in timed]
    extra = few_runs(rows, repeat)
    if notes or extra:
        out += ["", "Notes:", ""]
        out += [f"{bullet}{n}" for n in notes + extra]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/adapters/speed.py", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="best of 3 runs instead of 5")
    parser.add_argument("--adapters", default="", metavar="A,B",
                        help="comma-separated subset of: " + ", ".join(drivers.ADAPTERS))
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown (for the README)")
    parser.add_argument("--limit", type=float, default=60.0, metavar="S",
                        help="time limit per measurement in seconds (default 60)")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows, notes, timed = run(args)
    print(render(rows, notes, timed, args, argv, time.perf_counter() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
