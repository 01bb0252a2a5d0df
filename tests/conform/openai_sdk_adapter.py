#!/usr/bin/env python3
"""An adapter command for `validate_tool_stream.py conform` that reads the stream with openai-python.

Replace the body of `calls()` with your own adapter's code; keep execution disabled. It prints the
calls the adapter would execute as JSON: [{"id", "name", "arguments"}]. Needs `openai` installed.
"""

import json
import os
import sys


def calls(env=os.environ, client=None) -> list[dict]:
    import openai

    client = client or openai.OpenAI(base_url=env["VTS_BASE_URL"] + "/v1", api_key="unused", max_retries=0)
    with open(env["VTS_REQUEST_FILE"], encoding="utf-8") as handle:
        request = json.load(handle)   # the fixture's request: model, messages, tools, tool_choice...
    request.pop("stream", None)      # the stream helper sets it
    with client.with_options(base_url=env["VTS_BASE_URL"] + "/v1").chat.completions.stream(**request) as stream:
        message = stream.get_final_completion().choices[0].message
    return [{"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in message.tool_calls or []]


def persistent() -> int:
    """conform --persistent: one request per line on stdin, one answer per line naming its VTS_REQUEST_ID;
    one client for the whole run (its connection pool kept), as an application keeps it."""
    import openai

    client = openai.OpenAI(base_url="http://127.0.0.1/", api_key="unused", max_retries=0)
    for line in sys.stdin:
        env = json.loads(line)
        answer = {"request": env["VTS_REQUEST_ID"]}
        if env.get("VTS_PROFILE") not in ("openai", "mistral"):
            answer["refused"] = "this adapter reads chat completions only"
        else:
            try:
                answer["calls"] = calls(env, client)
            except Exception as exc:   # noqa: BLE001 - the SDK refused the stream: that is the answer
                answer = {"request": env["VTS_REQUEST_ID"], "refused": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--persistent"]:
        sys.exit(persistent())
    if os.environ.get("VTS_PROFILE") not in ("openai", "mistral"):
        sys.exit(2)   # this adapter reads chat completions only: conform counts it as refusing
    print(json.dumps(calls()))
