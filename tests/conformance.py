"""Agreement with independent references: real captures, JSONTestSuite, JSON-Schema-Test-Suite.

The references live outside this repository (the project's shared folder, by
default ../shared beside the checkout; override with VTS_SHARED).  This module
is imported by test_conformance.py and also runs on its own to print figures:

    python3 tests/conformance.py
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import validate_tool_stream as vts  # noqa: E402


def shared_dir():
    """The shared reference folder, or None when this checkout has none."""
    path = os.environ.get("VTS_SHARED") or os.path.join(os.path.dirname(ROOT), "shared")
    return path if os.path.isdir(os.path.join(path, "conformance")) else None


# -- real captures -------------------------------------------------------------


def recordings_dir():
    """An extra folder of real recordings in the same layout (<profile>/<name>.json), or None.

    Set VTS_RECORDINGS to check recordings that are not in the shared folder, such as Gemini
    streams converted with `capture` from public SDK test suites; each carries its provenance
    in `meta` and the outcome its source documents in `expect` (status; calls for a pass are
    compared when pinned).
    """
    path = os.environ.get("VTS_RECORDINGS")
    return path if path and os.path.isdir(path) else None


def capture_results(shared, base=None):
    """(path, expected status, report) for every converted real capture (of `base`, default the shared one)."""
    base = base or os.path.join(shared, "captures")
    out = []
    for profile in sorted(os.listdir(base)):
        folder = os.path.join(base, profile)
        if profile == "raw" or not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                with open(os.path.join(folder, name), "rb") as handle:
                    data = handle.read()
                out.append((f"{profile}/{name}", json.loads(data)["expect"], vts.validate_bytes(data)))
    return out


# Captures whose pinned outcome a later rule of this project changed on purpose (the shared
# files are read-only here): path -> (the outcome now expected, the rule that changed it).
RULE_CHANGES = {
    "anthropic/claude-sonnet46-server-tool-search-then-tool-use.json": (
        "pass", "hosted tools are reviewed: server_tool_use and tool_search_tool_result blocks are no calls"),
}


def capture_disagreements(results):
    """Differences from each capture's expect block (status; calls for pass)."""
    problems = []
    for path, expect, report in results:
        if path in RULE_CHANGES:
            expect = dict(expect, status=RULE_CHANGES[path][0])
        if report["status"] != expect["status"]:
            problems.append(f"{path}: expected {expect['status']}, got {report['status']} "
                            f"{[f['code'] for f in report['findings']]}")
        elif expect["status"] == "pass" and "calls" in expect:
            got = [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in report["calls"]]
            want = [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in expect["calls"]]
            if got != want:
                problems.append(f"{path}: calls differ")
    return problems


def forced_choice_with_request(shared):
    """(report, expect) of the forced-tool-choice capture with its recorded tool_choice as "request".

    The capture pins blocked (the envelope carries no request); the recorded request's
    tool_choice (kept in meta) makes "stop" the forced call's terminal, so it must pass
    with exactly the recorded calls.
    """
    path = os.path.join(shared, "captures", "openai", "openai-gpt4o-forced-tool-choice-finish-reason-stop.json")
    with open(path, "rb") as handle:
        doc = json.loads(handle.read())
    doc["request"] = {"tool_choice": doc["meta"]["request_tool_choice"]}
    return vts.validate_envelope(doc), doc["expect"]


# -- JSONTestSuite ----------------------------------------------------------------


def json_verdict(data):
    """(accepted, code) for one JSONTestSuite document fed as call arguments.

    Bytes that are not UTF-8 can never reach the parser as arguments (the
    envelope is UTF-8), so they count as rejected with invalid_unicode.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False, "invalid_unicode"
    try:
        vts.parse_strict_json(text, vts.Limits())
    except vts.JsonProblem as problem:
        return False, problem.code
    return True, None


def jsontestsuite_results(shared):
    folder = os.path.join(shared, "conformance", "jsontestsuite", "test_parsing")
    results = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name), "rb") as handle:
                results.append((name, *json_verdict(handle.read())))
    return results


# y_ documents our policy rejects on purpose (README "Deliberate differences").
DELIBERATE_Y_REJECTIONS = {
    "y_object_duplicated_key.json": "duplicate_key",
    "y_object_duplicated_key_and_value.json": "duplicate_key",
}


def jsontestsuite_summary(results):
    summary = {"y": [0, 0], "n": [0, 0], "i": [0, 0]}
    problems = []
    for name, accepted, code in results:
        kind = name[0]
        summary[kind][0 if accepted else 1] += 1
        if kind == "y" and not accepted and DELIBERATE_Y_REJECTIONS.get(name) != code:
            problems.append(f"{name}: valid JSON rejected as {code}")
        if kind == "n" and accepted:
            problems.append(f"{name}: invalid JSON accepted")
        if kind == "i" and not accepted and code == "malformed_json" and "BOM" not in name:
            problems.append(f"{name}: implementation-defined case rejected without a specific code")
    return summary, problems


# -- JSON-Schema-Test-Suite ---------------------------------------------------------

DRAFT07 = "http://json-schema.org/draft-07/schema#"
OPTIONAL_FILES = ("ecmascript-regex.json", "non-bmp-regex.json", "bignum.json", "float-overflow.json",
                  "no-schema.json")
# Files wholly outside the subset: a group from them that compiles means a keyword slipped through.
OUT_OF_SUBSET = {
    "draft2020-12": {"anchor.json", "contains.json", "defs.json", "dependentRequired.json",
                     "dependentSchemas.json", "dynamicRef.json", "if-then-else.json", "maxContains.json",
                     "minContains.json", "refRemote.json", "unevaluatedItems.json",
                     "unevaluatedProperties.json", "vocabulary.json"},
    "draft7": {"contains.json", "definitions.json", "dependencies.json", "if-then-else.json", "refRemote.json"},
}


def schema_suite_results(shared, draft):
    """Per test case: (file, group, test, outcome) with outcome agree/disagree/refused/leak/limit."""
    folder = os.path.join(shared, "conformance", "json-schema-test-suite", draft)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    names += [os.path.join("optional", n) for n in OPTIONAL_FILES
              if os.path.exists(os.path.join(folder, "optional", n))]
    limits = vts.SchemaLimits()
    results = []
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            groups = json.load(handle)
        for group in groups:
            schema = group["schema"]
            if draft == "draft7" and isinstance(schema, dict) and "$schema" not in schema:
                schema = {"$schema": DRAFT07, **schema}  # the draft-07 files rely on the runner's default
            try:
                compiled = vts.compile_schema(schema, limits)
            except (vts.SchemaUnsupported, vts.SchemaLimitExceeded):
                results.extend((name, group["description"], t["description"], "refused") for t in group["tests"])
                continue
            leak = os.path.basename(name) in OUT_OF_SUBSET[draft]
            for test in group["tests"]:
                try:
                    valid = not vts.validate_instance(compiled, test["data"], limits)
                    outcome = "leak" if leak else ("agree" if valid == test["valid"] else "disagree")
                except vts.SchemaLimitExceeded:
                    outcome = "limit"
                results.append((name, group["description"], test["description"], outcome))
    return results


def schema_suite_summary(results):
    counts = {"agree": 0, "disagree": 0, "refused": 0, "leak": 0, "limit": 0}
    for *_, outcome in results:
        counts[outcome] += 1
    problems = [" | ".join(item) for item in results if item[3] in ("disagree", "leak", "limit")]
    return counts, problems


def main():
    shared = shared_dir()
    if shared is None:
        print("no shared reference folder found (set VTS_SHARED); nothing measured")
        return 3   # measured nothing: never a success a CI step could mistake for agreement
    captures = capture_results(shared)
    capture_problems = capture_disagreements(captures)
    by_status = {}
    for path, expect, _ in captures:
        status = RULE_CHANGES[path][0] if path in RULE_CHANGES else expect["status"]
        by_status[status] = by_status.get(status, 0) + 1
    for path, (status, why) in sorted(RULE_CHANGES.items()):
        print(f"  pinned outcome changed on purpose: {path} -> {status} ({why})")
    print(f"Real captures: {len(captures) - len(capture_problems)}/{len(captures)} agree "
          f"({', '.join(f'{k} {v}' for k, v in sorted(by_status.items()))})")
    for line in capture_problems:
        print("  " + line)
    extra = recordings_dir()
    if extra is not None:
        recordings = capture_results(shared, extra)
        problems = capture_disagreements(recordings)
        counts = {}
        for path, expect, _ in recordings:
            counts[expect["status"]] = counts.get(expect["status"], 0) + 1
        print(f"Recordings in VTS_RECORDINGS: {len(recordings) - len(problems)}/{len(recordings)} agree "
              f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})")
        for line in problems:
            print("  " + line)
    summary, json_problems = jsontestsuite_summary(jsontestsuite_results(shared))
    y, n, i = summary["y"], summary["n"], summary["i"]
    print(f"JSONTestSuite: {y[0]}/{sum(y)} y accepted ({y[1]} rejected on purpose: duplicate keys), "
          f"{n[1]}/{sum(n)} n rejected, i: {i[0]} accepted, {i[1]} rejected with a specific code")
    for line in json_problems:
        print("  " + line)
    schema_problems = []
    for draft in ("draft2020-12", "draft7"):
        counts, problems = schema_suite_summary(schema_suite_results(shared, draft))
        schema_problems += problems
        print(f"JSON-Schema-Test-Suite {draft}: {counts['agree']}/{counts['agree'] + counts['disagree']} "
              f"in-subset tests agree, {counts['refused']} out-of-subset tests refused as unsupported_schema, "
              f"{counts['leak']} out-of-subset verdicts, {counts['limit']} limit hits")
    for line in schema_problems:
        print("  " + line)
    return 1 if capture_problems or json_problems or schema_problems else 0


if __name__ == "__main__":
    sys.exit(main())
