#!/usr/bin/env python3
"""An adapter command for `validate_tool_stream.py conform` that reads the stream with the Anthropic SDK.

`client.messages.stream(...)` with the fixture's request, pointed at the served URL; it prints the
final message's tool_use blocks as [{"id", "name", "arguments"}], arguments the block's input object.
The SDK's own retries are left at its default (what tests/conform/README.md reports); the timeout
is short. Execution stays disabled. Needs `anthropic` installed.
"""

import json
import os
import sys


def calls() -> list[dict]:
    import anthropic

    client = anthropic.Anthropic(base_url=os.environ["VTS_BASE_URL"], api_key="unused", timeout=10.0)
    with open(os.environ["VTS_REQUEST_FILE"], encoding="utf-8") as handle:
        request = json.load(handle)   # the fixture's request: model, max_tokens, messages, tools, tool_choice...
    request.pop("stream", None)      # the stream helper sets it
    with client.messages.stream(**request) as stream:
        message = stream.get_final_message()
    return [{"id": block.id, "name": block.name, "arguments": block.input}
            for block in message.content if block.type == "tool_use"]


if __name__ == "__main__":
    if os.environ.get("VTS_PROFILE") != "anthropic":
        sys.exit(2)   # this adapter reads the Messages API only: conform counts it as refusing
    print(json.dumps(calls()))
