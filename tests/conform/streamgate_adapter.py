#!/usr/bin/env python3
"""The reference adapter command for `validate_tool_stream.py conform`: StreamGate over raw HTTP.

It does what a correct adapter does, with the standard library only: POST the request (the fixture's,
from VTS_REQUEST_FILE) to VTS_API_URL with http.client, read the raw response bytes itself, frame them
as the answer's content type says (SSE, JSON Lines, the AWS event stream, Gemini's JSON array), parse
each payload strictly, feed it to `StreamGate` built from the same request (its tools and tool choice,
read back with `request_from_body`) and print the calls only when the gate passes; `[]` when it
blocks or finds no call. Anything it cannot read (an HTTP error, a body that is not UTF-8, a payload
that is not JSON or holds a key twice, a framing it does not know) is a refusal: exit 1 with the reason on stderr.
`conform` with it exits 0 on every bundled fixture: that is the kit's acceptance test
(tests/test_conform.py, ReferenceAdapter).

Environment (set by conform): VTS_API_URL, VTS_REQUEST_FILE, VTS_PROFILE.  With `--persistent` (for
`conform --persistent`) it reads them from one JSON object per line on stdin instead, and answers each with
one line: the calls, or {"refused": "why"}.
"""

import http.client
import json
import os
import sys
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                                 "scripts")))   # normalised: a bytecode cache is found by this path
import validate_tool_stream as vts  # noqa: E402 - the validator is a file in scripts/, not an installed package

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # socket_adapter.py, beside this file


class Refused(Exception):
    """The adapter cannot read the answer: it executes nothing."""


RETRIED = frozenset({429, 500, 502, 503, 504, 529})   # what the official SDKs retry
RETRIES = 2            # tries after the first, as openai-python and the Anthropic SDK by default
MOST_WAIT = 0.5        # seconds waited before a retry at most (Retry-After, else 0.1 s): a test kit stays fast


def post(url: str, body: bytes) -> tuple[str, bytes]:
    """(content type, raw body) of a POST answered 200; a status the SDKs retry is tried again."""
    for attempt in range(RETRIES + 1):
        try:
            return _post_once(url, body)
        except Retry as exc:
            if attempt == RETRIES:
                raise Refused(f"HTTP {exc.status} after {RETRIES} retries") from None
            time.sleep(min(exc.wait, MOST_WAIT))
    raise AssertionError("not reached")


class Retry(Exception):
    def __init__(self, status: int, wait: float) -> None:
        super().__init__(status)
        self.status, self.wait = status, wait


def _post_once(url: str, body: bytes) -> tuple[str, bytes]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("POST", parts.path + (f"?{parts.query}" if parts.query else ""), body=body,
                           headers={"Content-Type": "application/json", "Accept": "*/*"})
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    if response.status in RETRIED:
        try:
            wait = float(response.getheader("Retry-After") or 0.1)
        except ValueError:
            wait = 0.1
        raise Retry(response.status, wait)
    if response.status != 200:
        raise Refused(f"HTTP {response.status}")
    return (response.getheader("Content-Type") or "").split(";")[0].strip(), data


def _pairs(pairs: list) -> dict:
    if len({key for key, _ in pairs}) != len(pairs):
        raise ValueError("a key appears twice in one object")   # json.loads would keep the last one silently
    return dict(pairs)


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def strict(text: str) -> object:
    """One payload, read as JSON is written: a key twice or NaN/Infinity is refused.  A lone surrogate
    escape is kept: a fragment may end inside a pair its next fragment completes."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except (ValueError, RecursionError) as exc:
        raise Refused(f"a payload is not JSON ({exc})") from None


def sse_payloads(text: str):
    """The data of each SSE event (WHATWG: lines end in CRLF, LF or CR; data lines join with LF; a
    comment or another field carries none), up to data: [DONE]."""
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line == "":
            if data:
                joined, data = "\n".join(data), []
                if joined == "[DONE]":
                    return
                yield strict(joined)
            continue
        field, colon, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if colon and value.startswith(" ") else value)
    if data:
        raise Refused("the stream ends inside an event")


def payloads(kind: str, data: bytes):
    """The payloads of the answer, framed as its content type says."""
    if kind == "application/vnd.amazon.eventstream":
        try:
            return vts.eventstream_events(data)
        except vts.CaptureError as exc:
            raise Refused(f"an AWS event stream frame cannot be read ({exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("the body is not UTF-8") from None
    if kind == "text/event-stream":
        return sse_payloads(text)
    if kind == "application/x-ndjson":
        return (strict(line) for line in text.split("\n") if line.strip())
    if kind == "application/json":   # Gemini without alt=sse: one JSON array of chunks
        array = strict(text)
        if not isinstance(array, list):
            raise Refused("the JSON body is not an array of chunks")
        return array
    raise Refused(f"content type {kind!r} is not a stream this adapter reads")


def calls_of(env) -> list:
    """The calls it would execute for one fixture (env: the conform variables); Refused when it cannot read it.
    A row spoken only over a WebSocket is read by socket_adapter.py, the kit's example for those."""
    profile = env["VTS_PROFILE"]
    socket = vts.PROFILES[profile].http.socket
    if socket is not None and socket.only:
        import socket_adapter

        try:
            return socket_adapter.calls_of(env)
        except (socket_adapter.Refused, OSError) as exc:
            raise Refused(str(exc)) from None
    with open(env["VTS_REQUEST_FILE"], "rb") as handle:
        body = handle.read()
    schemas, request, _ = vts.request_from_body(profile, json.loads(body))
    gate = vts.StreamGate(profile, schemas, request=request)
    for payload in payloads(*post(env["VTS_API_URL"], body)):
        gate.feed(payload)
        if gate.blocked:   # it can only stay blocked: nothing of this turn will run
            break
    return executed(gate.finish())


def executed(report: dict) -> list:
    """What an adapter prints for a report: its calls when the gate passes them, else none (a namespace only where
    the call has one)."""
    calls = report["calls"] if report["executable"] else []
    return [{key: call[key] for key in ("id", "name", "arguments", "namespace") if call.get(key) is not None
             or key != "namespace"} for call in calls]


def persistent() -> int:
    """conform --persistent: one request per line on stdin (a JSON object of the conform variables and its
    VTS_REQUEST_ID), one answer per line on stdout: {"request": that id, "calls": [...]} or {"request": that
    id, "refused": "why"}."""
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = {"request": request["VTS_REQUEST_ID"], "calls": calls_of(request)}
        except Refused as exc:
            answer = {"request": request["VTS_REQUEST_ID"], "refused": str(exc)}
        print(json.dumps(answer), flush=True)
    return 0


def main() -> int:
    if sys.argv[1:] == ["--persistent"]:
        return persistent()
    try:
        calls = calls_of(os.environ)
    except Refused as exc:
        print(f"streamgate_adapter: refused: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
