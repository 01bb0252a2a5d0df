#!/usr/bin/env python3
"""A small, standard-library adapter command for `validate_tool_stream.py conform` (chat completions).

It does what many hand-written adapters do: POST the request (the fixture's, from VTS_REQUEST_FILE:
its tools, tool_choice and parallel_tool_calls, stream true), read the SSE
`data:` lines, and join each tool call's fragments by `index` (the first id and name it sees,
every argument fragment appended). It never checks a finish reason, so it executes turns the
validator blocks — which is what `conform` is there to show. It prints the calls as JSON.

Environment (set by conform): VTS_API_URL, VTS_REQUEST_FILE, VTS_PROFILE.
Exit 2 for a profile that is not chat completions, without asking for its stream (conform counts
that as not-requested, a failure: give it chat-completions fixtures only).
"""

import json
import os
import sys
import urllib.request


def main() -> int:
    if os.environ.get("VTS_PROFILE") not in ("openai", "mistral"):
        print("naive_chat_adapter: reads chat completions only", file=sys.stderr)
        return 2
    with open(os.environ["VTS_REQUEST_FILE"], "rb") as handle:
        body = handle.read()
    request = urllib.request.Request(os.environ["VTS_API_URL"], data=body,
                                     headers={"Content-Type": "application/json"})
    calls: dict[int, dict] = {}
    with urllib.request.urlopen(request, timeout=30) as response:
        for raw in response:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: "):])
            for choice in chunk.get("choices") or []:
                for entry in (choice.get("delta") or {}).get("tool_calls") or []:
                    call = calls.setdefault(entry.get("index", 0), {"id": None, "name": None, "arguments": ""})
                    function = entry.get("function") or {}
                    call["id"] = call["id"] or entry.get("id")
                    call["name"] = call["name"] or function.get("name")
                    call["arguments"] += function.get("arguments") or ""
    print(json.dumps([calls[index] for index in sorted(calls)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
