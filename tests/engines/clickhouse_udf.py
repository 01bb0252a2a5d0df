#!/usr/bin/env python3
"""A ClickHouse executable UDF: one JSONEachRow row in, one verdict out, per line, in order.

ClickHouse writes each row as `{"envelope":"<the envelope's text>"}` (the argument's name in the function's
XML config) and reads back `{"result":{"status":...,"codes":[...],"calls":"<JSON>"}}` (its `return_name`,
default `result`, a named Tuple). Copy this file and scripts/validate_tool_stream.py into the server's
`user_scripts_path` (or leave this one in a checkout: it also looks in ../../scripts). README, "Auditing
logged traffic", has the config and the query; tests/test_engines.py runs both in ClickHouse (chdb).

A String column holds bytes, and ClickHouse writes them as they are: each line is decoded with
`surrogateescape`, so the envelope's bytes reach `validate_bytes` unchanged, invalid UTF-8 included.
A line that is not `{"envelope": string}` is validated itself (an `invalid_fixture` verdict), so every row
gets a verdict and the run goes on. One line is held at a time; each verdict is flushed as it is written
(ClickHouse's `executable_pool` type keeps the process and waits for each block's rows).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "scripts")]

import validate_tool_stream as vts  # noqa: E402  (path set up just above)


def verdict(body: bytes) -> dict:
    """The verdict of one body: its status, the sorted set of finding codes, and the calls as JSON text."""
    report = vts.validate_bytes(body, pause_gc=True)     # this process is ours alone
    return {"status": report["status"], "codes": sorted({f["code"] for f in report["findings"]}),
            "calls": json.dumps(report["calls"])}


def envelope_bytes(line: bytes) -> bytes:
    """The envelope a row holds, as the bytes ClickHouse stored; the line itself when it is no such row."""
    try:
        row = json.loads(line.decode("utf-8", "surrogateescape"))
        return row["envelope"].encode("utf-8", "surrogateescape")
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, UnicodeError):
        return line


def main() -> int:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(json.dumps({"result": verdict(envelope_bytes(line))}).encode("ascii") + b"\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
