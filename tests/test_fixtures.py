"""Every bundled fixture must produce exactly its pinned outcome.

Stricter than `--expect` on purpose: the set of codes must be exactly the
pinned one (not a superset), and the calls must match byte for byte.
"""

import os
import io
import contextlib
import json
import unittest

from support import codes, fixture_paths, fixture_report, FIXTURES, load_fixture, run_cli, vts

SPEC_CODES = {
    "invalid_fixture", "unknown_profile",
    "unsupported_event", "unexpected_event", "stream_error", "missing_index", "missing_slot",
    "identity_collision", "missing_id", "missing_name", "delta_after_terminal", "duplicate_terminal",
    "missing_terminal", "wrong_terminal_reason", "ambiguous_choice",
    "malformed_json", "trailing_data", "non_finite_number", "duplicate_key", "invalid_unicode",
    "limit_exceeded", "non_object_arguments",
    "unknown_tool", "unsupported_schema", "schema_violation",
    "request_violation",  # README: the optional request block (tool_choice, parallel_tool_calls, tools)
}


def _check_fixture(self, relpath):
    """One fixture's exact outcome: status, the exact set of codes, calls byte for byte."""
    _, doc = load_fixture(relpath)
    expect = doc["expect"]
    report = fixture_report(relpath)
    self.assertEqual(report["status"], expect["status"], report["findings"])
    self.assertEqual(set(codes(report)), set(expect["codes"]), report["findings"])
    got = [{key: c[key] for key in ("id", "name", "namespace", "arguments") if key in c} for c in report["calls"]]
    self.assertEqual(got, expect["calls"])
    self.assertEqual(report["executable"], expect["status"] == "pass")
    self.assertEqual(report["applicable"], expect["status"] != "not_applicable")
    if expect["status"] == "pass":
        self.assertEqual({c["state"] for c in report["calls"]}, {"validated"})
    self.assertEqual(vts.check_expect(report, expect), [])


class EachFixture(unittest.TestCase):
    """One test per bundled fixture, generated below from fixtures/."""


for _relpath in fixture_paths():
    _name = "test_" + _relpath[:-5].replace("/", "__").replace("-", "_")
    setattr(EachFixture, _name, lambda self, p=_relpath: _check_fixture(self, p))


class FixtureCoverage(unittest.TestCase):
    def test_there_are_fixtures(self):
        self.assertGreater(len(fixture_paths()), 20, f"expected bundled fixtures under {FIXTURES}")

    def test_every_spec_code_has_a_fixture(self):
        pinned = set()
        for relpath in fixture_paths():
            pinned.update(load_fixture(relpath)[1]["expect"]["codes"])
        self.assertEqual(SPEC_CODES - pinned, set(), "finding codes without a fixture")

    def test_tool_knows_exactly_the_spec_codes(self):
        # adapter_mismatch comes only from --adapter-output (differential testing), never from a stream
        self.assertEqual(set(vts.FINDING_CODES), SPEC_CODES | {"adapter_mismatch"})

    def test_every_fixture_kind_is_present(self):
        statuses = {load_fixture(p)[1]["expect"]["status"] for p in fixture_paths()}
        self.assertEqual(statuses, {"pass", "blocked", "not_applicable"})

    def test_fixtures_are_strict_envelopes(self):
        for relpath in fixture_paths():
            with self.subTest(fixture=relpath):
                data, doc = load_fixture(relpath)
                if not relpath.startswith("envelope/"):
                    self.assertEqual(vts.check_envelope(vts.parse_envelope_bytes(data)), [])
                self.assertEqual(set(doc["expect"]) - {"status", "codes", "calls"}, set())


class FixturesThroughTheRealCli(unittest.TestCase):
    """A sample of each status through the process boundary: exit code and report."""

    def _sample(self, status):
        for relpath in fixture_paths():
            if load_fixture(relpath)[1]["expect"]["status"] == status:
                return relpath
        self.fail(f"no {status} fixture")

    def test_exit_codes_by_status(self):
        for status, exit_code in (("pass", 0), ("blocked", 1), ("not_applicable", 2)):
            relpath = self._sample(status)
            with self.subTest(fixture=relpath):
                code, out, err = run_cli(f"{FIXTURES}/{relpath}")
                self.assertEqual(code, exit_code, err)
                report = json.loads(out)
                self.assertEqual(report["status"], status)

    def test_expect_flag_on_every_fixture_family(self):
        for status in ("pass", "blocked", "not_applicable"):
            relpath = self._sample(status)
            with self.subTest(fixture=relpath):
                code, out, err = run_cli(f"{FIXTURES}/{relpath}", "--expect")
                self.assertEqual(code, 0, err)
                self.assertTrue(json.loads(out)["expectation"]["matched"])

# ---------------------------------------------------------------------------------------------------
# Each row's fixture set: fixtures/<profile>/ for every row of PROFILES (was test_profiles.py).
# ---------------------------------------------------------------------------------------------------


# The codes every row's set pins, and the exceptions, each by row with why.  A row not named below
# (a new one) is held to every rule.
SET_CODES = ("missing_terminal", "wrong_terminal_reason", "duplicate_terminal", "delta_after_terminal",
             "identity_collision", "missing_slot", "unexpected_event", "stream_error", "unsupported_event",
             "malformed_json", "schema_violation")
CANNOT_RAISE = {"ollama": {"malformed_json": "its arguments arrive as parsed objects, never as text",
                           "missing_slot": "its calls arrive whole and are numbered in order: none can be skipped"},
                "gemini-live": {"malformed_json": "its arguments arrive as parsed objects (toolCall args), never as text"}}
NOT_PINNED = {"gemini": {"duplicate_terminal": "it can raise it (a second toolResponse); no fixture pins it yet"}}
# mistral is read by the chat room with openai's rules: its few fixtures pin only where the wire differs
VARIANT_OF = {"mistral": "openai"}
# the sets written before every fixture had to name the public source it was written from
SOURCE_OPTIONAL = frozenset({"openai", "mistral", "anthropic", "openai-responses", "bedrock"})
NOT_SYNTHETIC = {"anthropic/pass-bedrock-invoke-parallel-tool-use-with-invocation-metrics.json":
                 "a recorded shape with our own ids and arguments; its meta names the recordings"}


def row_fixtures(profile):
    """Relative paths of fixtures/<profile>/*.json, sorted; [] when the row has no folder."""
    folder = os.path.join(FIXTURES, profile)
    if not os.path.isdir(folder):
        return []
    return [f"{profile}/{name}" for name in sorted(os.listdir(folder)) if name.endswith(".json")]


class FixtureSet(unittest.TestCase):
    def test_the_exceptions_name_rows(self):
        named = set(CANNOT_RAISE) | set(NOT_PINNED) | set(VARIANT_OF) | set(VARIANT_OF.values()) | SOURCE_OPTIONAL
        self.assertLessEqual(named, set(vts.PROFILES))
        for relpath in NOT_SYNTHETIC:
            self.assertIn(relpath, fixture_paths())

    def test_each_profile_has_every_kind_and_enough_fixtures(self):
        for profile in vts.PROFILES:
            with self.subTest(profile=profile):
                self.check_set(profile, row_fixtures(profile))

    def check_set(self, profile, paths):
        self.assertTrue(paths, f"the row {profile!r} of PROFILES has no fixtures: write fixtures/{profile}/*.json")
        docs = [load_fixture(path)[1] for path in paths]
        self.assertEqual({d["expect"]["status"] for d in docs}, {"pass", "blocked", "not_applicable"}, profile)
        pinned = set().union(*(d["expect"]["codes"] for d in docs))
        self.assertLessEqual(pinned, set(vts.FINDING_CODES))
        if profile not in VARIANT_OF:
            self.assertGreaterEqual(len(paths), 15, profile)
            excused = {**CANNOT_RAISE.get(profile, {}), **NOT_PINNED.get(profile, {})}
            self.assertEqual([code for code in SET_CODES if code not in pinned and code not in excused], [],
                             f"codes no fixture of the row {profile!r} pins")
        for code in CANNOT_RAISE.get(profile, {}):
            self.assertNotIn(code, pinned, profile)
        for path, d in zip(paths, docs):
            self.assertEqual(d["profile"], profile, path)
            if path not in NOT_SYNTHETIC:
                self.assertEqual(d["meta"]["adapter"], "synthetic", path)
            if profile not in SOURCE_OPTIONAL:   # each names the public source it was written from
                self.assertTrue(d["meta"]["source"], d["meta"])

    def test_the_check_sees_a_row_without_fixtures(self):
        with self.assertRaises(AssertionError) as caught:
            self.check_set("no-such-row", row_fixtures("no-such-row"))
        self.assertIn("'no-such-row'", str(caught.exception))

    def test_cli_in_process_with_expect(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = vts.main([os.path.join(FIXTURES, p) for p in vts.PROFILES] + ["--expect"])
        self.assertEqual(code, 0, err.getvalue())
        summary = json.loads(out.getvalue().splitlines()[-1])["summary"]
        self.assertEqual(summary["fixtures"], sum(len(row_fixtures(p)) for p in vts.PROFILES))
        self.assertEqual(summary.get("expect_mismatches", 0), 0)


if __name__ == "__main__":
    unittest.main()
