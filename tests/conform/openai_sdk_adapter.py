#!/usr/bin/env python3
"""An adapter command for `validate_tool_stream.py conform` that reads the stream with openai-python.

Replace the body of `calls()` with your own adapter's code; keep execution disabled. It prints the
calls the adapter would execute as JSON: [{"id", "name", "arguments"}]. Needs `openai` installed.
"""

import json
import os
import sys


def calls() -> list[dict]:
    import openai

    client = openai.OpenAI(base_url=os.environ["VTS_BASE_URL"] + "/v1", api_key="unused", max_retries=0)
    with open(os.environ["VTS_REQUEST_FILE"], encoding="utf-8") as handle:
        request = json.load(handle)   # the fixture's request: model, messages, tools, tool_choice...
    request.pop("stream", None)      # the stream helper sets it
    with client.chat.completions.stream(**request) as stream:
        message = stream.get_final_completion().choices[0].message
    return [{"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in message.tool_calls or []]


if __name__ == "__main__":
    if os.environ.get("VTS_PROFILE") not in ("openai", "mistral"):
        sys.exit(2)   # this adapter reads chat completions only: conform counts it as refusing
    print(json.dumps(calls()))
