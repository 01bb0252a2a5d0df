#!/usr/bin/env python3
"""An example adapter command for `conform` over a WebSocket: StreamGate fed by a standard-library client.

For a fixture whose row is spoken over a WebSocket (conform sets VTS_WS_URL), it opens the socket with
tests/wsclient.py, sends the turn's first message, reads text messages until the turn ends, parses each
strictly, feeds it to `StreamGate` built from the same request and prints the calls only when the gate
passes (`[]` when it blocks or finds no call).  The first message is VTS_REQUEST_FILE: as it is on a row
spoken only over a WebSocket, and on openai-responses (also spoken over HTTP, where that file is the POST
body) the body made a `response.create` event (its members, `"type": "response.create"`, without
`stream`), as the Responses API's WebSocket mode takes it.  A row whose server answers that message first
(Gemini Live's setupComplete) gets the client's next message from NEXT (its content), once.

Where a turn ends is the provider's own fact, so it is a table here (TURN_ENDS): a message that ends it,
or the socket closing (a cut-off turn: the gate decides).  Anything it cannot read (a refused upgrade, a
binary message, a message that is not JSON or holds a key twice, no message within 10 s) is a refusal:
exit 1 with the reason on stderr.

Environment (set by conform): VTS_WS_URL, VTS_REQUEST_FILE, VTS_PROFILE.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, "scripts")))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, os.pardir)))
import validate_tool_stream as vts  # noqa: E402 - the validator is a file in scripts/, not an installed package
import wsclient  # noqa: E402 - tests/wsclient.py
from streamgate_adapter import executed  # noqa: E402 - beside this file (it hands this one its socket rows)

# profile -> whether one received message ends the turn
TURN_ENDS = {
    "openai-responses": lambda message: message.get("type") in (
        "response.completed", "response.failed", "response.incomplete", "error"),
    "openai-realtime": lambda message: message.get("type") == "response.done",
    # Gemini Live: the toolCall (the client must answer it now), or turnComplete for a turn without calls
    "gemini-live": lambda message: message.get("toolCall") is not None or (
        isinstance(message.get("serverContent"), dict) and message["serverContent"].get("turnComplete") is True),
}
# profile -> (one received message -> the message the client sends after it, or None): Gemini Live answers the
# setup message with setupComplete, after which the client's content starts the model's turn
NEXT = {
    "gemini-live": lambda message: ({"clientContent": {"turns": [{"role": "user", "parts": [
        {"text": vts.REQUEST_PROMPT}]}], "turnComplete": True}} if message.get("setupComplete") is not None else None),
}
# profile -> the messages sent after the first: a Realtime session.update configures the tools, and the
# response (the turn) starts with response.create
THEN = {"openai-realtime": ({"type": "response.create"},)}


def first_message(profile: str, body: dict) -> dict:
    if profile == "openai-responses":
        return {"type": "response.create", **{key: value for key, value in body.items() if key != "stream"}}
    return body


class Refused(Exception):
    """The adapter cannot read the turn: it executes nothing."""


def strict(text: str):
    try:
        return vts.adapter_json(text, what="a message")
    except vts.JsonProblem as problem:
        raise Refused(f"a message is not strict JSON ({problem.message})") from None


RETRIED = frozenset({429, 500, 502, 503, 504})   # upgrades answered so are tried again, twice, as the SDKs retry


def connect(url: str):
    for attempt in range(3):
        try:
            return wsclient.connect(url, timeout=10)
        except wsclient.HandshakeRefused as refused:
            if refused.status not in RETRIED or attempt == 2:
                raise Refused(f"the upgrade was answered {refused.status}") from None
    raise AssertionError("not reached")


def calls_of(env) -> list:
    profile = env["VTS_PROFILE"]
    ends = TURN_ENDS.get(profile)
    if ends is None or not env.get("VTS_WS_URL"):
        raise Refused(f"this example does not read {profile} over a WebSocket")
    with open(env["VTS_REQUEST_FILE"], "rb") as handle:
        body = json.loads(handle.read())
    schemas, request, _ = vts.request_from_body(profile, body)
    gate = vts.StreamGate(profile, schemas, request=request)
    follow, answered = NEXT.get(profile), False
    with connect(env["VTS_WS_URL"]) as ws:
        ws.send_text(json.dumps(first_message(profile, body)))
        for message in THEN.get(profile, ()):
            ws.send_text(json.dumps(message))
        ended = False
        while True:
            try:
                message = ws.receive()
            except TimeoutError:
                raise Refused("no message within 10 seconds") from None
            if message is None:   # the socket ended (before the turn did, or after our close)
                break
            opcode, payload = message
            if opcode != wsclient.TEXT:
                raise Refused("a binary message")
            try:
                item = strict(payload.decode("utf-8"))
            except UnicodeDecodeError:
                raise Refused("a text message that is not UTF-8") from None
            gate.feed(item)
            then = follow(item) if follow is not None and not answered and isinstance(item, dict) else None
            if then is not None:
                answered = True
                ws.send_text(json.dumps(then))
            if not ended and (gate.blocked or (isinstance(item, dict) and ends(item))):
                # the turn is over: close, and judge what still came before the server's close frame
                ended = True
                ws.send_frame(wsclient.CLOSE, (1000).to_bytes(2, "big"))
    return executed(gate.finish())


def main() -> int:
    try:
        calls = calls_of(os.environ)
    except (Refused, OSError) as exc:
        print(f"socket_adapter: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
