#!/usr/bin/env python3
"""Requests per second that `serve` answers on one kept-alive loopback connection.  Not a unit test.

Standard library only, Python 3.10+.  It serves fixtures/ in this process (`serving`, as an adapter's test suite
does) and asks, over one kept-alive connection, the stream of one passing fixture of each profile in turn, each
answer read to its end, for --seconds per client:

  http.client     http.client.HTTPConnection (headers and body in one write; it sets TCP_NODELAY itself)
  two writes      a raw socket, Nagle's algorithm left on, the headers and the body written apart (as a client
                  that sends its body by a second call does): it holds the body until the headers are acknowledged
  event chunking  http.client against --chunking event (one write per event)

and prints requests/s per client.  --script runs the same against another copy of the validator (before/after in
one run, taken in turn).  No figure is asserted: the tests check the bytes, this measures the rate.

Usage:
  python3 tests/bench/serve_rate.py
  python3 tests/bench/serve_rate.py --script /work/wt/base34.py --seconds 3 --repeat 3
"""

from __future__ import annotations

import argparse
import http.client
import socket
import sys
import time
from pathlib import Path

from loading import load   # tests/bench/loading.py (the script's own folder is on sys.path)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "validate_tool_stream.py"
FIXTURES = ROOT / "fixtures"
REQUEST = b'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'


def paths_of(vts, server) -> list[str]:
    """One passing fixture's API path per profile (its first by name), without a "serve" block."""
    chosen: dict[str, str] = {}
    for prefix in server.prefixes:
        fixture = server._served[prefix]
        name = prefix.rsplit("/", 1)[-1]
        if fixture.fault or not name.startswith(("valid", "pass")) or fixture.profile in chosen:
            continue
        chosen[fixture.profile] = f"/{prefix}{fixture.row.http.api_example}"
    return [chosen[profile] for profile in sorted(chosen)]


def ask_http_client(address, paths: list[str], seconds: float) -> tuple[int, float]:
    connection = http.client.HTTPConnection(*address, timeout=30)
    count, began = 0, time.perf_counter()
    try:
        while time.perf_counter() - began < seconds:
            connection.request("POST", paths[count % len(paths)], body=REQUEST,
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise SystemExit(f"{paths[count % len(paths)]}: HTTP {response.status}")
            count += 1
    finally:
        connection.close()
    return count, time.perf_counter() - began


def ask_two_writes(address, paths: list[str], seconds: float) -> tuple[int, float]:
    count, began, pending = 0, time.perf_counter(), b""
    with socket.create_connection(address, 30) as sock:   # TCP_NODELAY not set: Nagle's algorithm on
        while time.perf_counter() - began < seconds:
            path = paths[count % len(paths)]
            sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(REQUEST)}\r\n\r\n".encode("ascii"))
            sock.sendall(REQUEST)
            while b"\r\n\r\n" not in pending:
                pending += sock.recv(65536)
            head, _, pending = pending.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200 "):
                raise SystemExit(f"{path}: {head[:40]!r}")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(pending) < length:
                pending += sock.recv(65536)
            pending = pending[length:]
            count += 1
    return count, time.perf_counter() - began


CLIENTS = (("http.client", "whole", ask_http_client), ("two writes", "whole", ask_two_writes),
           ("event chunking", "event", ask_http_client))


def rates(vts, seconds: float) -> dict[str, tuple[float, int]]:
    """client -> (requests/s, profiles asked) against one copy of the validator."""
    found = {}
    for name, chunking, ask in CLIENTS:
        with vts.serving([str(FIXTURES)], chunking=chunking) as server:
            paths = paths_of(vts, server)
            count, took = ask(server.server.server_address[:2], paths, seconds)
            found[name] = (count / took, len(paths))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--script", type=Path, help="another copy of the validator, measured in turn (before/after)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per client and script (default 2)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best rate per client is printed")
    args = parser.parse_args()
    scripts = [("this", SCRIPT)] + ([("--script", args.script)] if args.script else [])
    modules = [(label, path, load(f"vts_rate_{number}", path)) for number, (label, path) in enumerate(scripts)]
    best: dict[tuple[str, str], float] = {}
    profiles = 0
    for _ in range(max(1, args.repeat)):
        for label, _, vts in modules:   # in turn: a slow spell of the machine falls on both
            for client, (rate, profiles) in rates(vts, args.seconds).items():
                best[label, client] = max(best.get((label, client), 0.0), rate)
    print(f"# Python {sys.version.split()[0]} | one kept-alive loopback connection | {profiles} profiles' passing "
          f"streams in turn | {args.seconds:g} s per client | best of {max(1, args.repeat)}")
    for label, path, _ in modules:
        print(f"# {label}: {path}")
    print(f"{'client':16}" + "".join(f"{label + ' req/s':>16}" for label, _, _ in modules))
    for client, _, _ in CLIENTS:
        print(f"{client:16}" + "".join(f"{best[label, client]:16.0f}" for label, _, _ in modules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
