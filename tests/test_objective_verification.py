"""The seed's release criteria, checked through the real command line."""

import json
import os
import unittest

from support import FIXTURES, run_cli


def cli(relpath):
    code, out, err = run_cli(os.path.join(FIXTURES, relpath))
    return code, json.loads(out), err


class ReleaseCriteria(unittest.TestCase):
    def test_valid_fragmented_call_exits_0_with_its_exact_call(self):
        code, report, _ = cli("openai/valid-fragmented-single-call.json")
        self.assertEqual(code, 0)
        self.assertEqual((report["status"], report["applicable"], report["executable"]), ("pass", True, True))
        call = report["calls"][0]
        self.assertEqual((call["id"], call["name"], call["arguments"]),
                         ("call_Wq8rT2mZkP4vN6xY1bC3dE5f", "get_weather", '{"city":"Paris","unit":"celsius"}'))

    def test_reused_slot_exits_1_with_identity_collision_and_nothing_executable(self):
        code, report, _ = cli("openai/identity-collision-reused-index-ollama-batch.json")
        self.assertEqual(code, 1)
        self.assertIn("identity_collision", [f["code"] for f in report["findings"]])
        self.assertFalse(report["executable"])

    def test_text_only_exits_2(self):
        code, report, _ = cli("openai/not-applicable-text-only-stop.json")
        self.assertEqual(code, 2)
        self.assertEqual((report["status"], report["applicable"], report["executable"]),
                         ("not_applicable", False, False))

    def test_bad_turns_fail_closed_with_their_codes(self):
        for relpath, code_name in (
            ("openai/malformed-json-truncated-object-closed-by-finish.json", "malformed_json"),
            ("openai/missing-terminal-cut-mid-arguments.json", "missing_terminal"),
            ("anthropic/wrong-terminal-reason-max-tokens-mid-tool-input.json", "wrong_terminal_reason"),
            ("openai/duplicate-terminal-second-finish-reason.json", "duplicate_terminal"),
            ("openai/non-finite-number-nan.json", "non_finite_number"),
            ("openai/unknown-tool-name-not-declared.json", "unknown_tool"),
            ("openai/unsupported-schema-if-then.json", "unsupported_schema"),
            ("openai/schema-violation-missing-required.json", "schema_violation"),
        ):
            with self.subTest(fixture=relpath):
                code, report, err = cli(relpath)
                self.assertEqual(code, 1, err)
                self.assertEqual(report["status"], "blocked")
                self.assertIn(code_name, [f["code"] for f in report["findings"]])
                self.assertFalse(report["executable"])


if __name__ == "__main__":
    unittest.main()
