"""--report summary, summary-json and summary-markdown: a run's counts for an auditor.

Exact output of each rendering for fixtures/mistral (ten bundled fixtures: pass, blocked and not
applicable, five finding codes, three meta members); the exit code and --expect; the escaping of
hostile meta values and file names in every rendering; the caps on a meta member's values; a name
with a line number (a JSON Lines report names path:line); memory bounded by the cells, not the input;
README's example.
"""

import json
import os
import re
import tempfile
import unittest
from unittest import mock

from support import FIXTURES, ROOT, run_cli, vts
from test_output_safety import runner_problems

MISTRAL = os.path.join(FIXTURES, "mistral")
M = "fixtures/mistral/"

EXPECTED_TEXT = "\n".join((
    'summary: fixtures 10, pass 4, blocked 5, not_applicable 1',
    '',
    'by status',
    '  status          fixtures  example',
    '  blocked                5  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  pass                   4  ' + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json',
    '  not_applicable         1  ' + M + 'not-applicable-text-only.json',
    '',
    'by code',
    '  code                   fixtures  example',
    '  identity_collision            2  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  trailing_data                 2  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  missing_index                 1  ' + M + 'missing-index-entry-without-index-and-id.json',
    '  missing_terminal              1  ' + M + 'missing-terminal-connection-closed-mid-call.json',
    '  wrong_terminal_reason         1  ' + M + 'wrong-terminal-reason-error.json',
    '',
    'by profile and status',
    '  profile  status          fixtures  example',
    '  mistral  blocked                5  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  mistral  pass                   4  ' + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json',
    '  mistral  not_applicable         1  ' + M + 'not-applicable-text-only.json',
    '',
    'by provider and status',
    '  provider                                         status          fixtures  example',
    '  "Mistral API (relayed third-party model)"        blocked                2  '
    + M + 'missing-terminal-connection-closed-mid-call.json',
    '  "Mistral API (relayed third-party model)"        pass                   2  '
    + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json',
    '  "Mistral"                                        pass                   2  '
    + M + 'valid-two-whole-calls-one-delta.json',
    '  "Mistral"                                        not_applicable         1  '
    + M + 'not-applicable-text-only.json',
    '  "Mistral (re-serialised by an SDK-based proxy)"  blocked                1  '
    + M + 'trailing-data-two-whole-calls-same-index-0.json',
    '  "Mistral (via proxy that fills index 0)"         blocked                1  '
    + M + 'identity-collision-two-whole-calls-index-0.json',
    '  "Mistral (via re-serialising client)"            blocked                1  '
    + M + 'missing-index-entry-without-index-and-id.json',
    '',
    'by model and status',
    '  model                  status          fixtures  example',
    '  "glm-4.6"              blocked                2  ' + M + 'missing-terminal-connection-closed-mid-call.json',
    '  "glm-4.6"              pass                   2  '
    + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json',
    '  "mistral-large-2411"   blocked                1  ' + M + 'trailing-data-two-whole-calls-same-index-0.json',
    '  "mistral-large-2411"   pass                   1  ' + M + 'valid-two-whole-calls-one-delta.json',
    '  "mistral-medium-2508"  blocked                2  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  "mistral-small-2506"   not_applicable         1  ' + M + 'not-applicable-text-only.json',
    '  "mistral-small-2506"   pass                   1  ' + M + 'valid-whole-call-no-index-no-type.json',
    '',
    'by adapter and status',
    '  adapter      status          fixtures  example',
    '  "synthetic"  blocked                5  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  "synthetic"  pass                   4  ' + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json',
    '  "synthetic"  not_applicable         1  ' + M + 'not-applicable-text-only.json',
    '',
    'by code and profile',
    '  code                   profile  fixtures  example',
    '  identity_collision     mistral         2  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  trailing_data          mistral         2  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  missing_index          mistral         1  ' + M + 'missing-index-entry-without-index-and-id.json',
    '  missing_terminal       mistral         1  ' + M + 'missing-terminal-connection-closed-mid-call.json',
    '  wrong_terminal_reason  mistral         1  ' + M + 'wrong-terminal-reason-error.json',
    '',
    'by code and provider',
    '  code                   provider                                         fixtures  example',
    '  identity_collision     "Mistral (re-serialised by an SDK-based proxy)"         1  '
    + M + 'trailing-data-two-whole-calls-same-index-0.json',
    '  identity_collision     "Mistral (via proxy that fills index 0)"                1  '
    + M + 'identity-collision-two-whole-calls-index-0.json',
    '  trailing_data          "Mistral (re-serialised by an SDK-based proxy)"         1  '
    + M + 'trailing-data-two-whole-calls-same-index-0.json',
    '  trailing_data          "Mistral (via proxy that fills index 0)"                1  '
    + M + 'identity-collision-two-whole-calls-index-0.json',
    '  missing_index          "Mistral (via re-serialising client)"                   1  '
    + M + 'missing-index-entry-without-index-and-id.json',
    '  missing_terminal       "Mistral API (relayed third-party model)"               1  '
    + M + 'missing-terminal-connection-closed-mid-call.json',
    '  wrong_terminal_reason  "Mistral API (relayed third-party model)"               1  '
    + M + 'wrong-terminal-reason-error.json',
    '',
    'by code and model',
    '  code                   model                  fixtures  example',
    '  identity_collision     "mistral-large-2411"          1  '
    + M + 'trailing-data-two-whole-calls-same-index-0.json',
    '  identity_collision     "mistral-medium-2508"         1  '
    + M + 'identity-collision-two-whole-calls-index-0.json',
    '  trailing_data          "mistral-large-2411"          1  '
    + M + 'trailing-data-two-whole-calls-same-index-0.json',
    '  trailing_data          "mistral-medium-2508"         1  '
    + M + 'identity-collision-two-whole-calls-index-0.json',
    '  missing_index          "mistral-medium-2508"         1  '
    + M + 'missing-index-entry-without-index-and-id.json',
    '  missing_terminal       "glm-4.6"                     1  '
    + M + 'missing-terminal-connection-closed-mid-call.json',
    '  wrong_terminal_reason  "glm-4.6"                     1  ' + M + 'wrong-terminal-reason-error.json',
    '',
    'by code and adapter',
    '  code                   adapter      fixtures  example',
    '  identity_collision     "synthetic"         2  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  trailing_data          "synthetic"         2  ' + M + 'identity-collision-two-whole-calls-index-0.json',
    '  missing_index          "synthetic"         1  ' + M + 'missing-index-entry-without-index-and-id.json',
    '  missing_terminal       "synthetic"         1  ' + M + 'missing-terminal-connection-closed-mid-call.json',
    '  wrong_terminal_reason  "synthetic"         1  ' + M + 'wrong-terminal-reason-error.json',
))

EXPECTED_MARKDOWN = "\n".join((
    '### validate_tool_stream summary',
    '',
    '**10 fixtures**: 4 pass, 5 blocked, 1 not applicable',
    '',
    '#### By status',
    '',
    '| status | fixtures | example |',
    '|---|---:|---|',
    '| blocked | 5 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| pass | 4 | ' + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json |',
    '| not\\_applicable | 1 | ' + M + 'not-applicable-text-only.json |',
    '',
    '#### By code',
    '',
    '| code | fixtures | example |',
    '|---|---:|---|',
    '| identity\\_collision | 2 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| trailing\\_data | 2 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| missing\\_index | 1 | ' + M + 'missing-index-entry-without-index-and-id.json |',
    '| missing\\_terminal | 1 | ' + M + 'missing-terminal-connection-closed-mid-call.json |',
    '| wrong\\_terminal\\_reason | 1 | ' + M + 'wrong-terminal-reason-error.json |',
    '',
    '#### By profile and status',
    '',
    '| profile | status | fixtures | example |',
    '|---|---|---:|---|',
    '| mistral | blocked | 5 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| mistral | pass | 4 | ' + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json |',
    '| mistral | not\\_applicable | 1 | ' + M + 'not-applicable-text-only.json |',
    '',
    '#### By provider and status',
    '',
    '| provider | status | fixtures | example |',
    '|---|---|---:|---|',
    '| "Mistral API (relayed third-party model)" | blocked | 2 | '
    + M + 'missing-terminal-connection-closed-mid-call.json |',
    '| "Mistral API (relayed third-party model)" | pass | 2 | '
    + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json |',
    '| "Mistral" | pass | 2 | ' + M + 'valid-two-whole-calls-one-delta.json |',
    '| "Mistral" | not\\_applicable | 1 | ' + M + 'not-applicable-text-only.json |',
    '| "Mistral (re-serialised by an SDK-based proxy)" | blocked | 1 | '
    + M + 'trailing-data-two-whole-calls-same-index-0.json |',
    '| "Mistral (via proxy that fills index 0)" | blocked | 1 | '
    + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| "Mistral (via re-serialising client)" | blocked | 1 | '
    + M + 'missing-index-entry-without-index-and-id.json |',
    '',
    '#### By model and status',
    '',
    '| model | status | fixtures | example |',
    '|---|---|---:|---|',
    '| "glm-4.6" | blocked | 2 | ' + M + 'missing-terminal-connection-closed-mid-call.json |',
    '| "glm-4.6" | pass | 2 | ' + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json |',
    '| "mistral-large-2411" | blocked | 1 | ' + M + 'trailing-data-two-whole-calls-same-index-0.json |',
    '| "mistral-large-2411" | pass | 1 | ' + M + 'valid-two-whole-calls-one-delta.json |',
    '| "mistral-medium-2508" | blocked | 2 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| "mistral-small-2506" | not\\_applicable | 1 | ' + M + 'not-applicable-text-only.json |',
    '| "mistral-small-2506" | pass | 1 | ' + M + 'valid-whole-call-no-index-no-type.json |',
    '',
    '#### By adapter and status',
    '',
    '| adapter | status | fixtures | example |',
    '|---|---|---:|---|',
    '| "synthetic" | blocked | 5 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| "synthetic" | pass | 4 | ' + M + 'pass-http-429-rate-limit-then-the-stream-on-retry.json |',
    '| "synthetic" | not\\_applicable | 1 | ' + M + 'not-applicable-text-only.json |',
    '',
    '#### By code and profile',
    '',
    '| code | profile | fixtures | example |',
    '|---|---|---:|---|',
    '| identity\\_collision | mistral | 2 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| trailing\\_data | mistral | 2 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| missing\\_index | mistral | 1 | ' + M + 'missing-index-entry-without-index-and-id.json |',
    '| missing\\_terminal | mistral | 1 | ' + M + 'missing-terminal-connection-closed-mid-call.json |',
    '| wrong\\_terminal\\_reason | mistral | 1 | ' + M + 'wrong-terminal-reason-error.json |',
    '',
    '#### By code and provider',
    '',
    '| code | provider | fixtures | example |',
    '|---|---|---:|---|',
    '| identity\\_collision | "Mistral (re-serialised by an SDK-based proxy)" | 1 | '
    + M + 'trailing-data-two-whole-calls-same-index-0.json |',
    '| identity\\_collision | "Mistral (via proxy that fills index 0)" | 1 | '
    + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| trailing\\_data | "Mistral (re-serialised by an SDK-based proxy)" | 1 | '
    + M + 'trailing-data-two-whole-calls-same-index-0.json |',
    '| trailing\\_data | "Mistral (via proxy that fills index 0)" | 1 | '
    + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| missing\\_index | "Mistral (via re-serialising client)" | 1 | '
    + M + 'missing-index-entry-without-index-and-id.json |',
    '| missing\\_terminal | "Mistral API (relayed third-party model)" | 1 | '
    + M + 'missing-terminal-connection-closed-mid-call.json |',
    '| wrong\\_terminal\\_reason | "Mistral API (relayed third-party model)" | 1 | '
    + M + 'wrong-terminal-reason-error.json |',
    '',
    '#### By code and model',
    '',
    '| code | model | fixtures | example |',
    '|---|---|---:|---|',
    '| identity\\_collision | "mistral-large-2411" | 1 | ' + M + 'trailing-data-two-whole-calls-same-index-0.json |',
    '| identity\\_collision | "mistral-medium-2508" | 1 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| trailing\\_data | "mistral-large-2411" | 1 | ' + M + 'trailing-data-two-whole-calls-same-index-0.json |',
    '| trailing\\_data | "mistral-medium-2508" | 1 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| missing\\_index | "mistral-medium-2508" | 1 | ' + M + 'missing-index-entry-without-index-and-id.json |',
    '| missing\\_terminal | "glm-4.6" | 1 | ' + M + 'missing-terminal-connection-closed-mid-call.json |',
    '| wrong\\_terminal\\_reason | "glm-4.6" | 1 | ' + M + 'wrong-terminal-reason-error.json |',
    '',
    '#### By code and adapter',
    '',
    '| code | adapter | fixtures | example |',
    '|---|---|---:|---|',
    '| identity\\_collision | "synthetic" | 2 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| trailing\\_data | "synthetic" | 2 | ' + M + 'identity-collision-two-whole-calls-index-0.json |',
    '| missing\\_index | "synthetic" | 1 | ' + M + 'missing-index-entry-without-index-and-id.json |',
    '| missing\\_terminal | "synthetic" | 1 | ' + M + 'missing-terminal-connection-closed-mid-call.json |',
    '| wrong\\_terminal\\_reason | "synthetic" | 1 | ' + M + 'wrong-terminal-reason-error.json |',
))


def run(*args):
    """(exit code, stdout with the repository's path made relative, stderr) of the CLI in this process."""
    code, out, err = run_cli(*args)
    return code, out.replace(ROOT + os.sep, ""), err


def table(by, *items):
    """A table as the JSON rendering writes it, from rows (values..., fixtures, the example's file stem)."""
    return {"by": list(by), "rows": [dict(zip(by, item[:-2]), fixtures=item[-2], example=M + item[-1] + ".json")
                                     for item in items]}


FIRST = "identity-collision-two-whole-calls-index-0"
RELAYED = "Mistral API (relayed third-party model)"
EXPECTED_JSON = {
    "tool": "validate_tool_stream", "version": vts.VERSION,
    "summary": {"fixtures": 10, "pass": 4, "blocked": 5, "not_applicable": 1, "expect_mismatches": 0},
    "meta_values": {"provider": {"fixtures": 10, "distinct": 5, "more": False, "shown": 5},
                    "model": {"fixtures": 10, "distinct": 4, "more": False, "shown": 4},
                    "adapter": {"fixtures": 10, "distinct": 1, "more": False, "shown": 1}},
    "tables": [
        table(("status",), ("blocked", 5, FIRST), ("pass", 4, "pass-http-429-rate-limit-then-the-stream-on-retry"),
              ("not_applicable", 1, "not-applicable-text-only")),
        table(("expect",), ("matched", 10, FIRST)),
        table(("code",), ("identity_collision", 2, FIRST), ("trailing_data", 2, FIRST),
              ("missing_index", 1, "missing-index-entry-without-index-and-id"),
              ("missing_terminal", 1, "missing-terminal-connection-closed-mid-call"),
              ("wrong_terminal_reason", 1, "wrong-terminal-reason-error")),
        table(("profile", "status"), ("mistral", "blocked", 5, FIRST),
              ("mistral", "pass", 4, "pass-http-429-rate-limit-then-the-stream-on-retry"),
              ("mistral", "not_applicable", 1, "not-applicable-text-only")),
        table(("provider", "status"),
              (RELAYED, "blocked", 2, "missing-terminal-connection-closed-mid-call"),
              (RELAYED, "pass", 2, "pass-http-429-rate-limit-then-the-stream-on-retry"),
              ("Mistral", "pass", 2, "valid-two-whole-calls-one-delta"),
              ("Mistral", "not_applicable", 1, "not-applicable-text-only"),
              ("Mistral (re-serialised by an SDK-based proxy)", "blocked", 1,
               "trailing-data-two-whole-calls-same-index-0"),
              ("Mistral (via proxy that fills index 0)", "blocked", 1, FIRST),
              ("Mistral (via re-serialising client)", "blocked", 1, "missing-index-entry-without-index-and-id")),
        table(("model", "status"),
              ("glm-4.6", "blocked", 2, "missing-terminal-connection-closed-mid-call"),
              ("glm-4.6", "pass", 2, "pass-http-429-rate-limit-then-the-stream-on-retry"),
              ("mistral-large-2411", "blocked", 1, "trailing-data-two-whole-calls-same-index-0"),
              ("mistral-large-2411", "pass", 1, "valid-two-whole-calls-one-delta"),
              ("mistral-medium-2508", "blocked", 2, FIRST),
              ("mistral-small-2506", "not_applicable", 1, "not-applicable-text-only"),
              ("mistral-small-2506", "pass", 1, "valid-whole-call-no-index-no-type")),
        table(("adapter", "status"), ("synthetic", "blocked", 5, FIRST),
              ("synthetic", "pass", 4, "pass-http-429-rate-limit-then-the-stream-on-retry"),
              ("synthetic", "not_applicable", 1, "not-applicable-text-only")),
        table(("code", "profile"), ("identity_collision", "mistral", 2, FIRST),
              ("trailing_data", "mistral", 2, FIRST),
              ("missing_index", "mistral", 1, "missing-index-entry-without-index-and-id"),
              ("missing_terminal", "mistral", 1, "missing-terminal-connection-closed-mid-call"),
              ("wrong_terminal_reason", "mistral", 1, "wrong-terminal-reason-error")),
        table(("code", "provider"),
              ("identity_collision", "Mistral (re-serialised by an SDK-based proxy)", 1,
               "trailing-data-two-whole-calls-same-index-0"),
              ("identity_collision", "Mistral (via proxy that fills index 0)", 1, FIRST),
              ("trailing_data", "Mistral (re-serialised by an SDK-based proxy)", 1,
               "trailing-data-two-whole-calls-same-index-0"),
              ("trailing_data", "Mistral (via proxy that fills index 0)", 1, FIRST),
              ("missing_index", "Mistral (via re-serialising client)", 1, "missing-index-entry-without-index-and-id"),
              ("missing_terminal", RELAYED, 1, "missing-terminal-connection-closed-mid-call"),
              ("wrong_terminal_reason", RELAYED, 1, "wrong-terminal-reason-error")),
        table(("code", "model"),
              ("identity_collision", "mistral-large-2411", 1, "trailing-data-two-whole-calls-same-index-0"),
              ("identity_collision", "mistral-medium-2508", 1, FIRST),
              ("trailing_data", "mistral-large-2411", 1, "trailing-data-two-whole-calls-same-index-0"),
              ("trailing_data", "mistral-medium-2508", 1, FIRST),
              ("missing_index", "mistral-medium-2508", 1, "missing-index-entry-without-index-and-id"),
              ("missing_terminal", "glm-4.6", 1, "missing-terminal-connection-closed-mid-call"),
              ("wrong_terminal_reason", "glm-4.6", 1, "wrong-terminal-reason-error")),
        table(("code", "adapter"), ("identity_collision", "synthetic", 2, FIRST),
              ("trailing_data", "synthetic", 2, FIRST),
              ("missing_index", "synthetic", 1, "missing-index-entry-without-index-and-id"),
              ("missing_terminal", "synthetic", 1, "missing-terminal-connection-closed-mid-call"),
              ("wrong_terminal_reason", "synthetic", 1, "wrong-terminal-reason-error")),
        table(("expect", "profile"), ("matched", "mistral", 10, FIRST)),
    ]}


def envelope_with(meta):
    """A passing mistral envelope (a bundled fixture's) with `meta` instead of its own, as bytes."""
    with open(os.path.join(MISTRAL, "valid-two-whole-calls-one-delta.json"), "rb") as handle:
        doc = json.load(handle)
    doc["meta"] = meta
    doc.pop("expect", None)
    return json.dumps(doc).encode()


def report_of(status="pass", codes=(), meta=None, profile="openai"):
    """The members of a report RunSummary reads."""
    return {"status": status, "profile": profile, "findings": [{"code": code} for code in codes], "meta": meta}


class ExactOutput(unittest.TestCase):
    """Each rendering of fixtures/mistral, byte for byte; the exit code is the run's."""

    def test_text(self):
        code, out, err = run(MISTRAL, "--report", "summary")
        self.assertEqual((code, out, err), (1, EXPECTED_TEXT + "\n", ""))

    def test_markdown(self):
        code, out, err = run(MISTRAL, "--report", "summary-markdown")
        self.assertEqual((code, out, err), (1, EXPECTED_MARKDOWN + "\n", ""))

    def test_json_with_expect(self):
        code, out, err = run(MISTRAL, "--report", "summary-json", "--expect")
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(json.loads(out), EXPECTED_JSON)
        self.assertEqual(out, json.dumps(EXPECTED_JSON, indent=2) + "\n")

    def test_quiet_changes_nothing(self):
        for report in ("summary", "summary-markdown", "summary-json"):
            with self.subTest(report=report):
                self.assertEqual(run(MISTRAL, "--report", report, "--quiet"), run(MISTRAL, "--report", report))

    def test_one_fixture_and_the_exit_codes(self):
        one = os.path.join(MISTRAL, "not-applicable-text-only.json")
        code, out, _ = run(one, "--report", "summary")
        self.assertEqual(code, 2)
        self.assertTrue(out.startswith("summary: fixtures 1, pass 0, blocked 0, not_applicable 1\n"), out)
        self.assertEqual(run(one, "--report", "summary", "--allow-not-applicable")[0], 0)

    def test_an_expect_mismatch_is_counted_and_exits_1(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "no-expect.json"), "wb") as handle:
                handle.write(envelope_with({"provider": "P"}))
            code, out, err = run(folder, os.path.join(MISTRAL, "not-applicable-text-only.json"),
                                 "--report", "summary-json", "--expect")
        self.assertEqual(code, 1)
        self.assertIn("expect: MISMATCH", err)
        summary = json.loads(out)
        self.assertEqual(summary["summary"]["expect_mismatches"], 1)
        by_expect = [t["rows"] for t in summary["tables"] if t["by"] == ["expect"]][0]
        self.assertEqual([(row["expect"], row["fixtures"], os.path.basename(row["example"])) for row in by_expect],
                         [("matched", 1, "not-applicable-text-only.json"), ("mismatched", 1, "no-expect.json")])

    def test_an_envelope_never_judged_has_no_profile(self):
        code, out, _ = run(os.path.join(FIXTURES, "envelope", "profile-null.json"), "--report", "summary-json")
        summary = json.loads(out)
        self.assertEqual(code, 1)
        self.assertEqual([t["rows"] for t in summary["tables"] if t["by"] == ["code", "profile"]][0],
                         [{"code": "invalid_fixture", "profile": None, "fixtures": 1,
                           "example": "fixtures/envelope/profile-null.json"}])
        self.assertIn("| *(none)* | blocked | 1 |",
                      run(os.path.join(FIXTURES, "envelope", "profile-null.json"), "--report", "summary-markdown")[1])


HOSTILE = ("\x1b[31mred\x1b[0m\n::error file=x,line=1::forged\r\n##[group]g | `tick` <img src=x onerror=alert(1)>"
           " [click](https://example.invalid) @admin $x^2$ ~~s~~ *em* _u_ \\| \u202eevil\u2028 :rocket: &amp;")
SECRET = "sk-ant-api03-" + "A1b2C3d4E5" * 3


def unescaped_pipes(line):
    """The number of | in a Markdown line that are not backslash-escaped (an odd run of backslashes)."""
    return sum(1 for match in re.finditer(r"(\\*)\|", line) if len(match.group(1)) % 2 == 0)


class HostileValues(unittest.TestCase):
    """Meta values and file names from the input cannot act on a terminal, the runner or the Markdown."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        name = "a|`b`<i>[x](y)\n::error::z ##[g].json"
        for file_name, meta in ((name, {"provider": HOSTILE, "model": SECRET, "adapter": {"k": HOSTILE}}),
                                ("plain.json", {"provider": "key " + SECRET, "model": ["m", 1]})):
            with open(os.path.join(cls.folder.name, file_name), "wb") as handle:
                handle.write(envelope_with(meta))

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def outputs(self):
        for report in ("summary", "summary-json", "summary-markdown"):
            code, out, err = run_cli(self.folder.name, "--report", report)
            self.assertEqual((code, err), (0, ""))
            yield report, out

    def test_no_unsafe_line_and_no_secret(self):
        for report, out in self.outputs():
            with self.subTest(report=report):
                self.assertEqual(runner_problems(out), [])
                self.assertNotIn(SECRET, out)
                self.assertNotIn("A1b2C3d4E5", out)
                self.assertIn("masked", out)

    def test_text_lines_are_the_tools_own(self):
        out = dict(self.outputs())["summary"]
        for line in out.split("\n")[:-1]:
            self.assertTrue(line == "" or line.startswith(("summary: ", "by ", "  ")), repr(line))
        self.assertIn('"\\u001b[31mred\\u001b[0m\\n::error', out)   # JSON-quoted, controls as escapes

    def test_json_parses_and_keeps_the_masked_values(self):
        summary = json.loads(dict(self.outputs())["summary-json"])
        providers = [row["provider"] for t in summary["tables"] if t["by"] == ["provider", "status"]
                     for row in t["rows"]]
        self.assertEqual(sorted(providers), sorted([vts._summary_value(HOSTILE), "key [masked]"]))
        self.assertIn("[masked]", vts._summary_value(SECRET))
        models = [row["model"] for t in summary["tables"] if t["by"] == ["model", "status"] for row in t["rows"]]
        self.assertEqual(sorted(models), ['["m",1]', "[masked]"])

    def test_markdown_cells_stay_cells(self):
        out = dict(self.outputs())["summary-markdown"]
        for line in out.split("\n")[:-1]:
            if line.startswith("|"):
                self.assertIn(unescaped_pipes(line), (4, 5), repr(line))   # 3 or 4 columns
                self.assertNotRegex(line, r"<|>|(?<!\\)`|(?<!\\)\[|(?<!\\)\*(?!\(other\)|\(none\))")
            else:
                self.assertTrue(line == "" or line.startswith(("### ", "#### ", "**")), repr(line))
        self.assertIn("&lt;img src=x onerr... (182 bytes", out)
        self.assertIn("a\\|\\`b\\`&lt;i&gt;\\[x\\](y)\\\\u000a\\:\\:error", out)

    def test_a_markdown_cell_escapes_each_syntax(self):
        self.assertEqual(vts._markdown_cell("a|b`c<d>&e[f](g)*h_i\\j$k@l:m~n!o#p{q}^r\ns\x1bt"),
                         "a\\|b\\`c&lt;d&gt;&amp;e\\[f\\](g)\\*h\\_i\\\\j\\$k\\@l\\:m\\~n\\!o\\#p\\{q\\}\\^r"
                         "\\\\u000as\\\\u001bt")


class Caps(unittest.TestCase):
    """At most SUMMARY_SHOWN_VALUES values of a meta member are shown, the rest one (other) row, said; at
    most SUMMARY_TRACKED_VALUES are counted at all; long values are cut; memory grows with cells only."""

    def summary_of(self, models):
        tally = vts.RunSummary()
        for number, (model, status) in enumerate(models):
            tally.add(f"f{number}.json", report_of(status, ["missing_terminal"] if status == "blocked" else [],
                                                   {"model": model}))
        return tally

    def test_the_values_with_most_fixtures_are_shown(self):
        models = [(f"m{n:02d}", "pass") for n in range(13)] + [("m12", "blocked"), ("m12", "pass"), ("m05", "pass")]
        summary = self.summary_of(models).as_dict()
        self.assertEqual(summary["meta_values"]["model"], {"fixtures": 16, "distinct": 13, "more": False, "shown": 10})
        rows = [t["rows"] for t in summary["tables"] if t["by"] == ["model", "status"]][0]
        self.assertEqual([(row["model"], row["status"], row["fixtures"], row["example"]) for row in rows],
                         [("m12", "pass", 2, "f12.json"), ("m12", "blocked", 1, "f13.json"),
                          ("m05", "pass", 2, "f5.json")]
                         + [(f"m{n:02d}", "pass", 1, f"f{n}.json") for n in (0, 1, 2, 3, 4, 6, 7, 8)]
                         + [(None, "pass", 3, "f9.json")])
        self.assertEqual(rows[-1]["other"], "model")
        text = vts.render_summary_text(summary)
        self.assertIn("by model and status (13 model values; the 10 with most fixtures shown, the rest as (other))\n",
                      text)
        self.assertIn("\n  (other)  pass            3  f9.json\n", text)
        self.assertIn("| *(other)* | pass | 3 | f9.json |", vts.render_summary_markdown(summary))

    def test_a_value_past_the_tracked_ones_is_other_at_once(self):
        with mock.patch.object(vts, "SUMMARY_TRACKED_VALUES", 3), mock.patch.object(vts, "SUMMARY_SHOWN_VALUES", 2):
            summary = self.summary_of([("a", "pass"), ("b", "pass"), ("c", "pass"), ("d", "blocked"),
                                       ("a", "pass"), ("e", "pass")]).as_dict()
        self.assertEqual(summary["meta_values"]["model"], {"fixtures": 6, "distinct": 3, "more": True, "shown": 2})
        rows = [t["rows"] for t in summary["tables"] if t["by"] == ["model", "status"]][0]
        self.assertEqual([(row["model"], row["status"], row["fixtures"], row["example"]) for row in rows],
                         [("a", "pass", 2, "f0.json"), ("b", "pass", 1, "f1.json"),
                          (None, "pass", 2, "f2.json"), (None, "blocked", 1, "f3.json")])
        self.assertIn("by model and status (more than 3 model values; the 2 with most fixtures shown",
                      vts.render_summary_text(summary))

    def test_a_long_value_is_cut_with_its_size_and_hash(self):
        value = "v" * 100 + "\u00e9"
        shown = vts._summary_value(value)
        self.assertEqual(shown, "v" * 80 + "... (102 bytes, sha256 "
                         + __import__("hashlib").sha256(value.encode()).hexdigest()[:12] + ")")
        self.assertNotEqual(vts._summary_value("v" * 101), shown)
        self.assertEqual(vts._summary_value({"b": 1, "a": [True, None]}), '{"b":1,"a":[true,null]}')

    def test_memory_grows_with_the_cells_not_the_fixtures(self):
        tally = vts.RunSummary(expect=True)
        for number in range(3000):
            tally.add(f"big.jsonl:{number + 1}", report_of(
                "blocked", ["missing_terminal", "malformed_json"], {"model": f"m{number}", "provider": f"p{number}",
                                                                    "adapter": "a"}, profile="openai"), ["differs"])
        tracked = vts.SUMMARY_TRACKED_VALUES
        self.assertEqual(len(tally.values["model"]), tracked)
        self.assertEqual(tally.untracked["model"], 3000 - tracked)
        # per table: status 1, expect 1, code 2, profile x status 1, provider/model x status (tracked + other),
        # adapter x status 1, code x profile 2, code x provider/model 2 x (tracked + other), code x adapter 2,
        # expect x profile 1
        self.assertEqual(len(tally.cells), 1 + 1 + 2 + 1 + 2 * (tracked + 1) + 1 + 2 + 2 * 2 * (tracked + 1) + 2 + 1)
        summary = tally.as_dict()
        self.assertEqual(summary["summary"], {"fixtures": 3000, "pass": 0, "blocked": 3000, "not_applicable": 0,
                                              "expect_mismatches": 3000})
        rows = [t["rows"] for t in summary["tables"] if t["by"] == ["code", "model"]][0]
        shown = tally.shown("model")   # all have one fixture: the first ten tracked, by value
        self.assertEqual(shown, sorted(f"m{n}" for n in range(tracked))[:vts.SUMMARY_SHOWN_VALUES])
        first_other = min(n for n in range(3000) if f"m{n}" not in shown)
        self.assertEqual(len(rows), 2 * (vts.SUMMARY_SHOWN_VALUES + 1))
        self.assertEqual(rows[0], {"code": "malformed_json", "model": "m0", "fixtures": 1, "example": "big.jsonl:1"})
        self.assertEqual(rows[vts.SUMMARY_SHOWN_VALUES], {"code": "malformed_json", "model": None, "other": "model",
                                                          "fixtures": 3000 - vts.SUMMARY_SHOWN_VALUES,
                                                          "example": f"big.jsonl:{first_other + 1}"})


class Lines(unittest.TestCase):
    """A report from a JSON Lines input names path:line; the summary shows that name as its example."""

    def test_path_and_line(self):
        tally = vts.RunSummary()
        tally.add("audit.jsonl:7", report_of("blocked", ["missing_terminal"], {"provider": "OpenAI"},
                                             "openai-responses"))
        tally.add("audit.jsonl:9", report_of("blocked", ["missing_terminal"], None, "openai-responses"))
        tally.add("audit.jsonl:10", report_of("pass", [], {"provider": None, "model": "m"}, "openai-responses"))
        text = vts.render_summary_text(tally.as_dict())
        self.assertIn("\n  missing_terminal  openai-responses         2  audit.jsonl:7\n", text)
        self.assertIn('\n  "OpenAI"  blocked         1  audit.jsonl:7\n', text)   # a null provider is none
        self.assertEqual(tally.as_dict()["meta_values"]["provider"],
                         {"fixtures": 1, "distinct": 1, "more": False, "shown": 1})



class Readme(unittest.TestCase):
    """README's example of the text rendering is what the command prints (up to where it is cut)."""

    def test_the_example_is_the_output(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
            text = handle.read()
        block = text[text.index("$ python3 scripts/validate_tool_stream.py fixtures/mistral/missing-terminal"):]
        block = block[:block.index("```")]
        command, shown = block.split("--report summary\n", 1)
        paths = command.replace("\\\n", " ").split()[3:]
        code, out, err = run(*[os.path.join(ROOT, path) for path in paths], "--report", "summary")
        self.assertEqual((code, err), (1, ""))
        self.assertTrue(out.startswith(shown), out)
        self.assertEqual(out[len(shown):][:len("\nby provider")], "\nby provider")


if __name__ == "__main__":
    unittest.main()
