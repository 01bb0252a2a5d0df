"""Shared helpers for the test suite: import the single-file tool and run its CLI."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "validate_tool_stream.py")
FIXTURES = os.path.join(ROOT, "fixtures")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import validate_tool_stream as vts  # noqa: E402  (path set up just above)


def fixture_paths():
    """Every bundled fixture, sorted, as paths relative to fixtures/."""
    found = []
    for folder, _, files in os.walk(FIXTURES):
        for name in files:
            if name.endswith(".json"):
                found.append(os.path.relpath(os.path.join(folder, name), FIXTURES))
    return sorted(found)


def load_fixture(relpath):
    with open(os.path.join(FIXTURES, relpath), "rb") as handle:
        data = handle.read()
    return data, json.loads(data)


def run_cli(*args, stdin=None):
    """Run the real CLI in a subprocess; returns (exit code, stdout, stderr)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, SCRIPT, *args], input=stdin, capture_output=True, env=env, timeout=120)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def envelope(profile="openai", stream=None, schemas=None, **extra):
    """A minimal in-memory envelope for unit tests."""
    doc = {"profile": profile, "tool_schemas": schemas if schemas is not None else {}}
    doc["events" if profile == "anthropic" else "chunks"] = stream if stream is not None else []
    doc.update(extra)
    return doc


def codes(report):
    return [finding["code"] for finding in report["findings"]]
