"""The importable runtime gate: feed chunks as they arrive, then finish()."""

import json
import unittest

from support import fixture_paths, load_fixture, vts


class StreamGateApi(unittest.TestCase):
    def test_incremental_feeding_gives_the_same_report_as_the_whole_envelope(self):
        for relpath in fixture_paths():
            if relpath.startswith("envelope/"):
                continue
            with self.subTest(fixture=relpath):
                doc = load_fixture(relpath)[1]
                gate = vts.StreamGate(doc["profile"], doc["tool_schemas"], meta=doc.get("meta"),
                                      request=doc.get("request"))
                for item in doc["chunks" if "chunks" in doc else "events"]:
                    gate.feed(item)
                self.assertEqual(gate.finish(), vts.validate_envelope(doc))

    def test_blocked_turns_true_early_and_finish_is_final(self):
        gate = vts.StreamGate("openai", {"f": {"type": "object"}})
        gate.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {
            "name": "f", "arguments": "{}"}}]}}]})
        self.assertFalse(gate.blocked)
        gate.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "b"}]}}]})
        self.assertTrue(gate.blocked)
        gate.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        report = gate.finish()
        self.assertEqual(report["status"], "blocked")
        self.assertIs(gate.finish(), report)
        with self.assertRaises(RuntimeError):
            gate.feed({})

    def test_a_pass_needs_finish(self):
        gate = vts.StreamGate("anthropic", {"f": {"type": "object"}})
        for event in ({"type": "message_start", "message": {}},
                      {"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}},
                      {"type": "content_block_stop", "index": 0},
                      {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
                      {"type": "message_stop"}):
            gate.feed(json.loads(json.dumps(event)))
        self.assertEqual(gate.finish()["status"], "pass")

    def test_the_collector_is_paused_only_when_asked(self):
        # issue 11 item 6: validate_bytes paused the process-wide collector, also from worker threads
        import gc

        data = load_fixture("openai/valid-fragmented-single-call.json")[0]
        seen = []
        real = vts._validate_bytes_uncollected

        def spy(*args):
            seen.append(gc.isenabled())
            return real(*args)

        self.assertTrue(gc.isenabled())
        vts._validate_bytes_uncollected = spy
        try:
            vts.validate_bytes(data)
            vts.validate_bytes(data, pause_gc=True)
        finally:
            vts._validate_bytes_uncollected = real
        self.assertEqual(seen, [True, False])
        self.assertTrue(gc.isenabled())

    def test_bad_construction_is_an_error_not_a_verdict(self):
        with self.assertRaises(ValueError):
            vts.StreamGate("gemini", {})
        with self.assertRaises(TypeError):
            vts.StreamGate("openai", [])


if __name__ == "__main__":
    unittest.main()
