#!/usr/bin/env python3
"""Replay fixtures through real stream adapters and compare what they would execute with our verdict.

    python3 tests/adapters/run.py --adapter NAME [--adapter NAME2 ...|--all] PATH...

PATH is a fixture file or a folder of them (searched recursively for *.json). For each
fixture this prints one JSON line: the fixture, its profile, our status and finding codes,
and per adapter the calls it would execute (or the error it raised) with a verdict:

  agree             we pass, and it executes exactly our calls (same count and order, same
                    names, arguments equal as JSON values, ids compared when both have one)
  differs-on-pass   we pass, and it executes something else
  executes-blocked  we block (or find no call at all), and it would execute at least one call
  refuses           it raises, or executes nothing, on a turn that has calls
  not-applicable    the adapter does not read this profile (or the fixture cannot be fed to
                    it), or we find no call and it executes nothing

Then a summary per adapter (text, or Markdown with --markdown). Exit status: 1 when an
adapter would execute a call of a turn we block, else 0; 3 on a usage error.

When tests/adapters/.venv exists (see tests/adapters/setup.py) and this interpreter lacks a
package that a selected adapter needs, the script re-runs itself with that environment's Python.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)   # imported from there as the package ``adapters``
VENV = os.path.join(HERE, ".venv")
NO_REEXEC = "VTS_ADAPTERS_NO_REEXEC"  # set in the re-run (and by tests) to never re-exec again

EXIT_OK, EXIT_EXECUTES_BLOCKED, EXIT_USAGE = 0, 1, 3

VERDICTS = ("agree", "differs-on-pass", "executes-blocked", "refuses", "not-applicable")
# Findings about the fixture file rather than the stream: an adapter never sees the envelope.
ENVELOPE_CODES = frozenset({"invalid_fixture", "unknown_profile"})


def _imports():
    """The validator and the drivers (standard library only at import time)."""
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    from adapters import drivers, validator

    return validator(), drivers


# --------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 3, like the validator's
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser(adapter_names) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tests/adapters/run.py", allow_abbrev=False,
        description="Replay fixtures through real stream adapters (openai-python, anthropic, openai-agents, "
                    "google-genai, litellm, langchain-core, vercel-ai-sdk) and compare the calls each would "
                    "execute with the validator's verdict.",
        epilog="Verdicts: agree, differs-on-pass, executes-blocked, refuses, not-applicable. Exit status: 1 when "
               "an adapter would execute a call of a turn the validator blocks, 0 otherwise, 3 on usage errors.")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="fixture files or folders of fixtures (*.json)")
    parser.add_argument("--adapter", action="append", default=[], choices=adapter_names, metavar="NAME",
                        help="an adapter to run (repeatable): " + ", ".join(adapter_names))
    parser.add_argument("--all", action="store_true", help="every adapter that is available here")
    parser.add_argument("--markdown", action="store_true",
                        help="print the summary as a Markdown table (for the README) instead of text")
    parser.add_argument("--quiet", action="store_true", help="print only the summary, not one line per fixture")
    return parser


def _fixture_files(paths) -> list[str]:
    files = []
    for path in paths:
        if os.path.isdir(path):
            found = []
            for folder, dirs, names in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(folder, name) for name in names if name.endswith(".json"))
            files.extend(sorted(found))
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise FileNotFoundError(path)
    seen, unique = set(), []
    for path in files:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


def _maybe_reexec(argv, adapters, drivers) -> None:
    """Re-run inside tests/adapters/.venv when this interpreter lacks a selected adapter's packages."""
    if os.environ.get(NO_REEXEC):
        return
    python = os.path.join(VENV, "Scripts", "python.exe") if os.name == "nt" else os.path.join(VENV, "bin", "python")
    if not os.path.isfile(python):
        return
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not any(drivers.missing_modules(name) for name in adapters):
        return
    env = dict(os.environ, **{NO_REEXEC: "1"})
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(python, [python, os.path.abspath(__file__), *argv], env)


# --------------------------------------------------------------------------------------
# comparison: the validator's own (one comparison in the project: `conform` uses it too)
# --------------------------------------------------------------------------------------

def same_arguments(theirs, ours, custom=False) -> bool:
    return _imports()[0].same_arguments(theirs, ours, custom)


def differences(theirs: list, ours: list) -> list[str]:
    """What differs between the adapter's calls and ours (empty: the same calls)."""
    return _imports()[0].call_differences(theirs, ours)


def verdict(status: str, calls, refused: bool, unsupported: bool, ours: list,
            codes=()) -> tuple[str, list[str]]:
    """(verdict, differences) for one adapter on one fixture.  conform's refuses-pass is this harness's
    refuses: its summary counts the refused passes apart ("N (M on passes)")."""
    found, differences = _imports()[0].adapter_verdict(status, calls, refused, unsupported, ours, codes)
    return ("refuses" if found == "refuses-pass" else found), differences


def _our_calls(report) -> list[dict]:
    return [{key: call.get(key) for key in ("id", "name", "arguments", "kind", "namespace") if key in call}
            for call in report.get("calls") or []]


def _codes(report) -> list[str]:
    return sorted({finding["code"] for finding in report.get("findings") or []})


PREFETCH_GROUP = 32   # fixtures whose turns an adapter may replay together ahead of evaluate()


def _load(path) -> tuple[bytes, object]:
    """The fixture's bytes, and its JSON value (None when it is not JSON)."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data, json.loads(data)
    except (ValueError, RecursionError):
        return data, None


def _turn(doc, stream_key):
    """(profile, stream, tool_schemas, request): what a driver is handed, or None when the
    envelope has no stream an adapter could be fed."""
    profile = doc.get("profile") if isinstance(doc, dict) else None
    key = stream_key.get(profile) if isinstance(profile, str) else None
    stream = doc.get(key) if key else None
    return (profile, stream, doc.get("tool_schemas"), doc.get("request")) if isinstance(stream, list) else None


def evaluate(path, adapters, vts, drivers, loaded=None) -> dict:
    """The JSON line for one fixture (loaded: what _load(path) returns, when already read)."""
    data, doc = loaded if loaded is not None else _load(path)
    report = vts.validate_bytes(data)
    line = {"fixture": path, "profile": report.get("profile"), "status": report["status"],
            "codes": _codes(report), "calls": _our_calls(report), "adapters": {}}
    turn = _turn(doc, vts.STREAM_KEY)
    for name in adapters:
        entry: dict = {}
        calls, refused, unsupported = [], False, False
        if turn is None:
            unsupported = True
            entry["note"] = "no stream this adapter could be fed (not JSON, unknown profile or stream key)"
        else:
            try:
                calls = drivers.run(name, *turn)
                entry["calls"] = list(calls)
                if getattr(calls, "not_executed", None):
                    entry["not_executed"] = calls.not_executed
            except drivers.Unsupported as exc:
                unsupported = True
                entry["note"] = str(exc)
            except drivers.DriverError as exc:
                refused = True
                entry["error"] = {"type": exc.exc_type, "message": exc.message}
                if exc.where:
                    entry["error"]["where"] = exc.where
        if ENVELOPE_CODES.intersection(line["codes"]) and "note" not in entry:
            entry["note"] = "our verdict is about the envelope (" + ", ".join(
                sorted(ENVELOPE_CODES.intersection(line["codes"]))) + "), which no adapter reads"
        result, problems = verdict(report["status"], calls, refused, unsupported, line["calls"], line["codes"])
        entry["verdict"] = result
        if problems:
            entry["differences"] = problems
        line["adapters"][name] = entry
    return line


# --------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------

class Tally:
    def __init__(self, name, version):
        self.name = name
        self.version = version
        self.counts = Counter()
        self.blocked_codes = Counter()   # finding code -> fixtures we block that it would execute
        self.refused_passes = []          # passing fixtures on which it runs nothing
        self.differing = []              # fixtures where it differs on a pass
        self.executing = []              # fixtures we block that it would execute
        self.not_applicable = Counter()  # why a fixture was not-applicable

    def add(self, line):
        entry = line["adapters"][self.name]
        result = entry["verdict"]
        self.counts[result] += 1
        if result == "executes-blocked":
            self.executing.append(line["fixture"])
            for code in line["codes"] or ["(no call found: " + line["status"] + ")"]:
                self.blocked_codes[code] += 1
        elif result == "refuses" and line["status"] == "pass":
            self.refused_passes.append(line["fixture"])
        elif result == "differs-on-pass":
            self.differing.append(line["fixture"])
        elif result == "not-applicable":
            note = entry.get("note") or ""
            self.not_applicable["profile not read" if "does not read" in note
                                else "envelope finding" if "envelope" in note
                                else "partialArgs not assembled" if "partialArgs" in note
                                else "no stream to feed" if "no stream" in note
                                else "no call, runs nothing"] += 1

    @property
    def seen(self):
        return sum(self.counts.values()) - self.counts["not-applicable"]

    def breakdown(self, sep=", "):
        return sep.join(f"{code} {count}" for code, count in sorted(self.blocked_codes.items(),
                                                                      key=lambda item: (-item[1], item[0])))


def text_summary(tallies, unavailable) -> str:
    header = ("adapter", "version", "seen", "agree", "differs-on-pass", "executes-blocked", "refuses",
              "not-applicable")
    rows = [header]
    for tally in tallies:
        refuses = str(tally.counts["refuses"]) + (f" ({len(tally.refused_passes)} on passes)" if tally.refused_passes else "")
        rows.append((tally.name, tally.version, str(tally.seen), str(tally.counts["agree"]),
                     str(tally.counts["differs-on-pass"]), str(tally.counts["executes-blocked"]), refuses,
                     str(tally.counts["not-applicable"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    out = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    out.insert(1, "  ".join("-" * width for width in widths))
    out.append("")
    out.append("seen: fixtures the adapter was fed (not-applicable excluded); a fixture with several codes counts")
    out.append("under each of them below.")
    for tally in tallies:
        if tally.blocked_codes:
            out.append(f"{tally.name}: executes blocked turns, by our finding code: {tally.breakdown()}")
    for tally in tallies:
        if tally.differing:
            out.append(f"{tally.name}: differs on passes: " + ", ".join(tally.differing))
    for tally in tallies:
        if tally.refused_passes:
            out.append(f"{tally.name}: runs nothing on passes: " + ", ".join(tally.refused_passes))
    for tally in tallies:
        if tally.not_applicable:
            out.append(f"{tally.name}: not-applicable: " + ", ".join(
                f"{reason} {count}" for reason, count in sorted(tally.not_applicable.items(),
                                                                key=lambda item: (-item[1], item[0]))))
    for name, reason in unavailable:
        out.append(f"{name}: unavailable ({reason})")
    return "\n".join(out)


def markdown_summary(tallies, unavailable) -> str:
    out = ["| adapter | version | fixtures we block that it would execute (by finding code) | "
           "disagreements on passes |",
           "|---|---|---|---|"]
    for tally in tallies:
        executes = str(tally.counts["executes-blocked"])
        if tally.blocked_codes:
            executes += " (" + ", ".join(f"`{code}` {count}" for code, count in sorted(
                tally.blocked_codes.items(), key=lambda item: (-item[1], item[0]))) + ")"
        passes = []
        if tally.counts["differs-on-pass"]:
            passes.append(f"{tally.counts['differs-on-pass']} run other calls")
        if tally.refused_passes:
            passes.append(f"{len(tally.refused_passes)} refused (run nothing)")
        agreed = f"{tally.counts['agree']} agree"
        out.append(f"| {tally.name} | {tally.version} | {executes} | "
                   f"{'; '.join(passes) if passes else 'none'} ({agreed}) |")
    for name, reason in unavailable:
        out.append(f"| {name} | unavailable | — | — |")
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------

def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))  # deeply nested arguments in fixtures
    vts, drivers = _imports()
    args = _parser(list(drivers.ADAPTERS)).parse_args(argv)
    if args.all and args.adapter:
        _parser(list(drivers.ADAPTERS)).error("give --adapter NAME or --all, not both")
    if not args.all and not args.adapter:
        _parser(list(drivers.ADAPTERS)).error("no adapter: give --adapter NAME (repeatable) or --all")
    selected = list(drivers.ADAPTERS) if args.all else list(dict.fromkeys(args.adapter))
    try:
        files = _fixture_files(args.paths)
    except FileNotFoundError as exc:
        _parser(list(drivers.ADAPTERS)).error(f"no such file or folder: {exc.args[0]}")
    if not files:
        _parser(list(drivers.ADAPTERS)).error("no *.json fixture under the given paths")
    _maybe_reexec(argv, selected, drivers)

    adapters, unavailable = [], []
    for name in selected:
        ok, info = drivers.availability(name)
        (adapters if ok else unavailable).append(name if ok else (name, info))
    for name, reason in unavailable:
        print(f"tests/adapters/run.py: {name} is unavailable: {reason}", file=sys.stderr)
    if not adapters:
        print("tests/adapters/run.py: none of the selected adapters is available "
              "(python3 tests/adapters/setup.py installs them into tests/adapters/.venv)", file=sys.stderr)
        return EXIT_USAGE

    tallies = [Tally(name, drivers.version(name)) for name in adapters]
    prefetching = [name for name in adapters if name in drivers.PREFETCHING]
    for start in range(0, len(files), PREFETCH_GROUP):
        group = [(path, _load(path)) for path in files[start:start + PREFETCH_GROUP]]
        if prefetching:   # one node start for the group, not one per fixture
            turns = [turn for turn in (_turn(doc, vts.STREAM_KEY) for _, (_, doc) in group) if turn]
            for name in prefetching:
                drivers.prefetch(name, turns)
        for path, loaded in group:
            line = evaluate(path, adapters, vts, drivers, loaded)
            for tally in tallies:
                tally.add(line)
            if not args.quiet:
                print(json.dumps(line), flush=True)
    if not args.quiet:
        print()
    print(markdown_summary(tallies, unavailable) if args.markdown else text_summary(tallies, unavailable))
    return EXIT_EXECUTES_BLOCKED if any(t.counts["executes-blocked"] for t in tallies) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
