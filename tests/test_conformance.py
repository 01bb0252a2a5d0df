"""Agreement with the independent references (skipped when they are absent)."""

import unittest

import conformance

SHARED = conformance.shared_dir()
SKIP = "the shared reference folder (../shared or $VTS_SHARED) is not present in this checkout"


@unittest.skipIf(SHARED is None, SKIP)
class RealCaptures(unittest.TestCase):
    def test_every_capture_gets_its_expected_status_and_calls(self):
        results = conformance.capture_results(SHARED)
        self.assertGreater(len(results), 30)
        self.assertEqual(conformance.capture_disagreements(results), [])

    def test_forced_tool_choice_capture_passes_with_its_recorded_request(self):
        report, expect = conformance.forced_choice_with_request(SHARED)
        self.assertEqual((report["status"], report["findings"]), ("pass", []))
        self.assertEqual([{k: c[k] for k in ("id", "name", "arguments")} for c in report["calls"]], expect["calls"])


@unittest.skipIf(SHARED is None, SKIP)
class JSONTestSuite(unittest.TestCase):
    def test_y_accepted_n_rejected_i_specific(self):
        summary, problems = conformance.jsontestsuite_summary(conformance.jsontestsuite_results(SHARED))
        self.assertEqual(problems, [])
        self.assertEqual(summary["n"][0], 0)
        self.assertGreaterEqual(summary["y"][0] + summary["n"][1], 280)


@unittest.skipIf(SHARED is None, SKIP)
class JSONSchemaTestSuite(unittest.TestCase):
    def test_in_subset_verdicts_agree_and_the_rest_is_refused(self):
        for draft in ("draft2020-12", "draft7"):
            with self.subTest(draft=draft):
                counts, problems = conformance.schema_suite_summary(conformance.schema_suite_results(SHARED, draft))
                self.assertEqual(problems, [])
                self.assertGreater(counts["agree"], 700)
                self.assertGreater(counts["refused"], 100)


if __name__ == "__main__":
    unittest.main()
