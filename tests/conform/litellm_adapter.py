#!/usr/bin/env python3
"""An adapter command for `validate_tool_stream.py conform` that reads the stream with LiteLLM.

`litellm.completion(stream=True)` against the served chat completions path (api_base
VTS_BASE_URL + "/v1", model "openai/<the request's model>") with the fixture's request; the chunks
are joined by LiteLLM's own `stream_chunk_builder` and the message's tool_calls printed as
[{"id", "name", "arguments"}]. LiteLLM's own retries are left at their default (what
tests/conform/README.md reports); the timeout is short. Execution stays disabled. Needs `litellm`.
"""

import json
import os
import sys


def calls() -> list[dict]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")   # no fetch of the cost map at import
    import litellm

    with open(os.environ["VTS_REQUEST_FILE"], encoding="utf-8") as handle:
        request = json.load(handle)   # the fixture's request: model, messages, tools, tool_choice...
    request.pop("stream", None)
    model = "openai/" + str(request.pop("model", "gpt-4o"))
    chunks = list(litellm.completion(model=model, api_base=os.environ["VTS_BASE_URL"] + "/v1", api_key="unused",
                                     stream=True, timeout=10.0, **request))
    response = litellm.stream_chunk_builder(chunks, messages=request.get("messages"))
    message = response.choices[0].message if response is not None else None
    return [{"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in (message.tool_calls if message is not None else None) or []]


if __name__ == "__main__":
    if os.environ.get("VTS_PROFILE") not in ("openai", "mistral"):
        sys.exit(2)   # this adapter reads chat completions only: conform counts it as refusing
    print(json.dumps(calls()))
