"""Standard-library wrapper around driver.mjs: the Vercel AI SDK's view of a tool stream.

``vercel_calls(profile, stream, tool_schemas)`` replays one turn's raw wire payloads
through ``streamText`` of the Vercel AI SDK (pinned in package.json beside this file) and
returns the tool calls it would hand to execution, as ``[{"id", "name", "arguments"}]``
with ``arguments`` the compact JSON of the SDK's parsed input.  ``vercel_batch(jobs)``
replays many turns with one Node.js process; ``prefetch(turns)`` does that ahead of the
``vercel_calls`` that will ask for them (tests/adapters/run.py: one node start per group of
fixtures instead of one per fixture).  Nothing here imports a third-party Python
package; Node.js and ``npm ci`` in this folder are needed for the SDK itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Iterable, Optional

__all__ = ["VercelError", "available", "vercel_calls", "vercel_batch", "prefetch", "HERE", "DRIVER",
           "SUPPORTED_PROFILES"]

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "driver.mjs")
NODE_MODULES = os.path.join(HERE, "node_modules")
PACKAGES = ("ai", "@ai-sdk/openai", "@ai-sdk/anthropic", "@ai-sdk/google", "@ai-sdk/cohere")
SUPPORTED_PROFILES = ("openai", "openai-responses", "anthropic", "gemini", "cohere")

# Per job inside node, plus start-up; the batch as a whole gets this much per job on top.
JOB_TIMEOUT_S = 10.0
STARTUP_TIMEOUT_S = 30.0


class VercelError(Exception):
    """The driver could not replay the stream, or the SDK handed over nothing runnable."""


def _node() -> Optional[str]:
    return shutil.which("node")


def available() -> tuple[bool, str]:
    """(True, "ai 6.0.333, ...") when node and the pinned packages are installed, else (False, reason)."""
    node = _node()
    if node is None:
        return False, "node not found on PATH"
    missing = [p for p in PACKAGES if not os.path.isfile(os.path.join(NODE_MODULES, *p.split("/"), "package.json"))]
    if missing:
        return False, f"missing {', '.join(missing)} in {NODE_MODULES} (run `npm ci` in {HERE})"
    try:
        proc = subprocess.run([node, DRIVER, "--versions"], cwd=HERE, capture_output=True, text=True,
                              timeout=STARTUP_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"driver did not start: {exc}"
    if proc.returncode != 0:
        return False, f"driver failed: {proc.stderr.strip()[-300:]}"
    try:
        versions = json.loads(proc.stdout)
    except ValueError:
        return False, f"driver printed no versions: {proc.stdout[:200]!r}"
    return True, ", ".join(f"{k} {v}" for k, v in versions.items())


def _encode_job(job: dict) -> str:
    # strict JSON: a payload Python parsed from NaN/Infinity/1e400 cannot be sent faithfully
    return json.dumps(job, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def vercel_batch(jobs: Iterable[dict], timeout: Optional[float] = None) -> list[dict]:
    """Replay each job ({"profile", "tool_schemas", "stream", optional "request", "model"})
    with one node process; return one result dict per job, in order: either
    {"calls": [{"id", "name", "input", "invalid"}], "errors", "finish", ...} or {"error": ...}."""
    jobs = list(jobs)
    results: list[Optional[dict]] = [None] * len(jobs)
    encoded: list[str] = []
    sent: list[int] = []
    for i, job in enumerate(jobs):
        try:
            encoded.append(_encode_job(job))
            sent.append(i)
        except (TypeError, ValueError) as exc:
            results[i] = {"error": f"job is not strict JSON: {exc}"}
    if sent:
        node = _node()
        if node is None:
            raise VercelError("node not found on PATH")
        if not os.path.isdir(NODE_MODULES):
            raise VercelError(f"no node_modules in {HERE}: run `npm ci` there")
        payload = "[" + ",".join(encoded) + "]"
        limit = timeout if timeout is not None else STARTUP_TIMEOUT_S + JOB_TIMEOUT_S * len(sent)
        try:
            proc = subprocess.run([node, DRIVER], cwd=HERE, input=payload.encode("utf-8"),
                                  capture_output=True, timeout=limit)
        except subprocess.TimeoutExpired as exc:
            raise VercelError(f"driver timed out after {limit:.0f} s") from exc
        except OSError as exc:
            raise VercelError(f"driver did not start: {exc}") from exc
        lines = proc.stdout.decode("utf-8").splitlines()
        if proc.returncode != 0 or len(lines) != len(sent):
            err = proc.stderr.decode("utf-8", "replace").strip()[-500:]
            raise VercelError(f"driver exited {proc.returncode} with {len(lines)} of {len(sent)} results: {err or lines[:1]}")
        for i, line in zip(sent, lines):
            results[i] = json.loads(line)
    return [r if r is not None else {"error": "no result"} for r in results]


def _as_call(call: dict) -> dict:
    return {
        "id": call.get("id"),
        "name": call.get("name"),
        "arguments": json.dumps(call.get("input"), ensure_ascii=False, separators=(",", ":")),
    }


def _job(profile: str, stream: list, tool_schemas: dict, request: Optional[dict] = None,
         model: Optional[str] = None) -> dict[str, Any]:
    job: dict[str, Any] = {"profile": profile, "tool_schemas": tool_schemas, "stream": stream}
    if request is not None:
        job["request"] = request
    if model is not None:
        job["model"] = model
    return job


# Results replayed ahead of time, by the job's exact JSON text; each is handed out once.
_PREFETCHED: dict[str, dict] = {}


def prefetch(turns: Iterable[tuple]) -> int:
    """Replay the turns (profile, stream, tool_schemas[, request]) in one node process ahead of
    vercel_calls for the same arguments, which then reads the stored result instead of
    starting node.  Returns how many were stored; a batch that fails stores nothing (each
    vercel_calls then replays its own turn), and a job that is not strict JSON is left to it."""
    jobs, keys = [], []
    for turn in turns:
        job = _job(*turn)
        try:
            key = _encode_job(job)
        except (TypeError, ValueError):
            continue
        jobs.append(job)
        keys.append(key)
    if not jobs:
        return 0
    try:
        results = vercel_batch(jobs)
    except Exception:  # VercelError, or output that is not JSON: each call replays its own turn
        return 0
    for key, result in zip(keys, results):
        _PREFETCHED[key] = result
    return len(jobs)


def vercel_calls(profile: str, stream: list, tool_schemas: dict, request: Optional[dict] = None,
                 model: Optional[str] = None, honor_finish: bool = True) -> list[dict]:
    """The calls the Vercel AI SDK would hand to execution for this turn, in order, as
    [{"id", "name", "arguments"}]; calls it marks invalid (unknown tool, unparseable input)
    are left out, and so (unless honor_finish is False) is every call of a turn whose
    finish reason streamText does not execute tools on (anything but "stop" and
    "tool-calls", or a stream that threw).  Raises VercelError when the driver cannot
    replay the stream.
    The SDK's own errors on a replayed stream are not raised: they are in vercel_batch's
    "errors"."""
    job = _job(profile, stream, tool_schemas, request, model)
    result = None
    if _PREFETCHED:
        try:
            result = _PREFETCHED.pop(_encode_job(job), None)
        except (TypeError, ValueError):
            result = None
    if result is None:
        (result,) = vercel_batch([job])
    if "error" in result:
        raise VercelError(result["error"])
    if honor_finish and not result.get("executable"):
        return []
    return [_as_call(c) for c in result.get("calls", []) if not c.get("invalid")]


if __name__ == "__main__":  # pragma: no cover - manual check
    import sys

    ok, info = available()
    print(("available: " if ok else "unavailable: ") + info)
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as fh:
            env = json.load(fh)
        stream = env.get("chunks", env.get("events"))
        try:
            print(path, json.dumps(vercel_calls(env.get("profile"), stream, env.get("tool_schemas"), env.get("request"))))
        except VercelError as exc:
            print(path, "VercelError:", exc)
