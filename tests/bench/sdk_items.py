#!/usr/bin/env python3
"""What StreamGate.feed costs on an SDK's objects next to the same payloads as dicts, per profile.

Not a unit test.  Run it with the interpreter that has the SDKs (tests/adapters/.venv/bin/python); a
profile whose SDK is missing is skipped with a message.

For each profile, every passing and blocked fixture is served with `serve` (in this process, loopback)
and read once with the SDK's own client: its stream objects are built beforehand, so the SDK's parsing
and HTTP are not timed.  Two workloads:

  fixtures  every such fixture as it is
  split     the passing fixtures with every argument fragment (what the room's protected_paths mark
            "fragment") cut into one-character items: the long run of plain fragments of a real
            stream, where feed() on dicts is fastest

Timed: a fresh StreamGate per fixture, feed() of each item, finish(); once with the SDK objects, once
with their dicts (each object's wire payload, dumped beforehand); best of --repeat runs each, taken in
turn.  Also the dump alone: model_dump(by_alias=True, exclude_unset=True) (python mode) against the
pydantic serializer's to_python with the same arguments (what the generic reader calls).

Target (issue 33): feed of SDK objects <= 1.5x feed of the dicts.

Usage:
  tests/adapters/.venv/bin/python tests/bench/sdk_items.py [--repeat 7] [--profiles openai,anthropic]
      [--rows mistralai,helper]   (rows whose label holds one of these words)
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import logging
import os
import sys
import tempfile
import threading
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.dont_write_bytecode = True

import validate_tool_stream as vts  # noqa: E402


def _openai_chat(url, prefix):
    import openai

    client = openai.OpenAI(base_url=url + prefix + "/v1", api_key="sk-test", max_retries=0)
    return list(client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                               stream=True))


def _mistralai(url, prefix):
    from mistralai.client import Mistral

    client = Mistral(api_key="test", server_url=url + prefix)
    return list(client.chat.stream(model="mistral-large-latest", messages=[{"role": "user", "content": "x"}]))


def _responses(url, prefix):
    import openai

    client = openai.OpenAI(base_url=url + prefix + "/v1", api_key="sk-test", max_retries=0)
    return list(client.responses.create(model="gpt-5", input="x", stream=True))


def _anthropic(url, prefix):
    import anthropic

    client = anthropic.Anthropic(base_url=url + prefix, api_key="sk-test", max_retries=0)
    return list(client.messages.create(model="claude-sonnet-4-5", max_tokens=64, stream=True,
                                       messages=[{"role": "user", "content": "x"}]))


def _anthropic_helper(url, prefix):
    import anthropic

    client = anthropic.Anthropic(base_url=url + prefix, api_key="sk-test", max_retries=0)
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64,
                                messages=[{"role": "user", "content": "x"}]) as stream:
        return list(stream)


def _genai(url, prefix):
    from google import genai

    client = genai.Client(api_key="test", http_options={"base_url": url + prefix})
    return list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="x"))


def _cohere(url, prefix):
    import cohere

    client = cohere.ClientV2(api_key="test", base_url=url + prefix)
    return list(client.chat_stream(model="command-a-03-2025", messages=[{"role": "user", "content": "x"}]))


def _ollama(url, prefix):
    import ollama

    return list(ollama.Client(host=url + prefix).chat(model="qwen3", messages=[{"role": "user", "content": "x"}],
                                                      stream=True))


def _boto3(url, prefix):
    import boto3

    client = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=url + prefix,
                          aws_access_key_id="test", aws_secret_access_key="test")
    return list(client.converse_stream(modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}])["stream"])


# row label -> (profile, the SDK's module, the reader)
READERS = {
    "openai (openai-python)": ("openai", "openai", _openai_chat),
    "mistral (mistralai)": ("mistral", "mistralai", _mistralai),
    "openai-responses (openai-python)": ("openai-responses", "openai", _responses),
    "anthropic (raw events)": ("anthropic", "anthropic", _anthropic),
    "anthropic (messages.stream helper)": ("anthropic", "anthropic", _anthropic_helper),
    "gemini (google-genai)": ("gemini", "google.genai", _genai),
    "cohere (cohere-python)": ("cohere", "cohere", _cohere),
    "ollama (ollama-python)": ("ollama", "ollama", _ollama),
    "bedrock (boto3 converse_stream)": ("bedrock", "boto3", _boto3),
}


def _at(value, path):
    for key in path:
        value = value[key]
    return value


def split_fragments(row, stream):
    """The stream with every argument fragment (a "fragment" path of the room's protected_paths that holds
    a string) longer than one character cut into one item per character."""
    out = []
    for item in stream:
        paths = []
        if isinstance(item, dict):
            for path, kind in row.wire.protected_paths(item).items():
                try:
                    if kind == "fragment" and isinstance(_at(item, path), str):
                        paths.append(path)
                except (KeyError, IndexError, TypeError):
                    pass
        if len(paths) != 1 or len(_at(item, paths[0])) < 2:
            out.append(item)
            continue
        path = paths[0]
        for char in _at(item, path):
            piece = copy.deepcopy(item)
            _at(piece, path[:-1])[path[-1]] = char
            out.append(piece)
    return out


def served(folder):
    plan, _ = vts.serve_plan([folder])
    server = vts.make_server(plan)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return plan, server, f"http://{host}:{port}/"


def workloads(profile, read, tmp):
    """{workload: [(doc, objects)]}: the SDK's objects of every passing and blocked fixture, and of the
    split passing ones whose verdict the split keeps."""
    row = vts.PROFILES[profile]
    folder = os.path.join(ROOT, "fixtures", profile)
    split_dir = os.path.join(tmp, profile)
    os.makedirs(split_dir, exist_ok=True)
    docs = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as handle:
            doc = json.loads(handle.read())
        if doc.get("expect", {}).get("status") not in ("pass", "blocked") or "serve" in doc:
            continue
        docs[name[:-5]] = doc
        if doc["expect"]["status"] == "pass":
            stream = split_fragments(row, doc[row.stream_key])
            if len(stream) > len(doc[row.stream_key]):
                split = dict(doc, **{row.stream_key: stream})
                if vts.validate_envelope(split)["status"] == "pass":
                    with open(os.path.join(split_dir, name), "w") as handle:
                        json.dump(split, handle)
    out = {}
    for label, where in (("fixtures", folder), ("split", split_dir)):
        plan, server, url = served(where)
        read_back = []
        try:
            for prefix, fixture in sorted(plan.items()):
                if prefix not in docs:
                    continue
                try:
                    objects = read(url, prefix)
                except Exception:   # noqa: BLE001 - the SDK refuses the stream: nothing to feed
                    continue
                doc = json.loads(open(fixture.path, "rb").read())
                read_back.append((doc, objects))
        finally:
            server.shutdown()
            server.server_close()
        out[label] = read_back
    return out


def feed_time(cases):
    start = time.perf_counter()
    for doc, items in cases:
        gate = vts.StreamGate(doc["profile"], doc["tool_schemas"], request=doc.get("request"))
        feed = gate.feed
        for item in items:
            feed(item)
        gate.finish()
    return time.perf_counter() - start


def dump_times(objects, repeat):
    """(model_dump, the serializer's to_python) over all objects, best of repeat; None without pydantic."""
    models = [o for o in objects if hasattr(o, "model_dump") and hasattr(type(o), "__pydantic_serializer__")]
    if not models:
        return None
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        start = time.perf_counter()
        for o in models:
            o.model_dump(by_alias=True, exclude_unset=True, warnings=False)
        best[0] = min(best[0], time.perf_counter() - start)
        start = time.perf_counter()
        for o in models:
            type(o).__pydantic_serializer__.to_python(o, by_alias=True, exclude_unset=True, warnings=False)
        best[1] = min(best[1], time.perf_counter() - start)
    return best[0] / len(models), best[1] / len(models)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profiles", default="")
    parser.add_argument("--rows", default="", help="only rows whose label holds one of these comma-separated words")
    args = parser.parse_args()
    wanted = set(filter(None, args.profiles.split(",")))
    rows = list(filter(None, args.rows.split(",")))
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)   # cohere-python logs each event it skips
    print(f"{'row':36} {'workload':8} {'fixtures':>8} {'items':>7} {'dicts us/item':>13} {'objects us/item':>15} "
          f"{'x':>5}  {'model_dump us':>13} {'to_python us':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, (profile, module, read) in READERS.items():
            if wanted and profile not in wanted or rows and not any(word in label for word in rows):
                continue
            try:
                __import__(module)
            except ImportError:
                print(f"{label:36} skipped: {module} is not installed (python3 tests/adapters/setup.py)")
                continue
            for workload, cases in workloads(profile, read, tmp).items():
                row = vts.PROFILES[profile]
                gate = vts.StreamGate(profile, {})
                dicts = [(doc, [item if type(item) is dict else row.wire.sdk_item(item, gate._normalizer, 0)
                                for item in objects]) for doc, objects in cases]
                dicts = [(doc, [item for item in items if type(item) is dict]) for doc, items in dicts]
                count = sum(len(items) for _, items in cases)
                if not count:
                    continue
                best_dicts = best_objects = float("inf")
                gc.collect()
                for _ in range(args.repeat):
                    best_dicts = min(best_dicts, feed_time(dicts))
                    best_objects = min(best_objects, feed_time(cases))
                dumps = dump_times([o for _, objects in cases for o in objects], args.repeat)
                dump_text = f"{dumps[0] * 1e6:13.2f} {dumps[1] * 1e6:12.2f}" if dumps else f"{'-':>13} {'-':>12}"
                print(f"{label:36} {workload:8} {len(cases):8d} {count:7d} {best_dicts / count * 1e6:13.2f} "
                      f"{best_objects / count * 1e6:15.2f} {best_objects / best_dicts:5.2f}  {dump_text}")
    print("dicts: each object's wire payload (its room's sdk_item, read beforehand; for the helper, the helper's "
          "derived events left out); best of", args.repeat, "runs each, taken in turn")


if __name__ == "__main__":
    main()
