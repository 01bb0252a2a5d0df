"""The importable runtime gate: feed chunks as they arrive, then finish()."""

import json
import unittest

from support import fixture_envelope_report, fixture_paths, load_fixture, vts


class StreamGateApi(unittest.TestCase):
    def test_incremental_feeding_gives_the_same_report_as_the_whole_envelope(self):
        for relpath in fixture_paths():
            if relpath.startswith("envelope/"):
                continue
            with self.subTest(fixture=relpath):
                doc = load_fixture(relpath)[1]
                gate = vts.StreamGate(doc["profile"], doc["tool_schemas"], meta=doc.get("meta"),
                                      request=doc.get("request"))
                for item in doc[vts.PROFILES[doc["profile"]].stream_key]:
                    gate.feed(item)
                self.assertEqual(gate.finish(), fixture_envelope_report(relpath))

    def test_feeding_one_by_one_past_saturation_counts_like_feed_all(self):
        limits = vts.Limits(max_findings=5)
        stream = [1] * 200 + [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        whole = vts.StreamGate("openai", {}, limits)
        whole.feed_all(stream)
        single = vts.StreamGate("openai", {}, limits)
        feed = single.feed                 # kept before the first call, as adapters do
        for item in stream:
            feed(item)
        self.assertEqual(single.finish(), whole.finish())
        self.assertIn("not examined", single.finish()["findings"][-1]["message"])
        with self.assertRaises(RuntimeError):
            feed({})                       # the kept function too: the turn is finished

    def test_mixing_feed_and_feed_all_keeps_positions(self):
        doc = load_fixture("openai/valid-fragmented-single-call.json")[1]
        gate = vts.StreamGate("openai", doc["tool_schemas"])
        chunks = doc["chunks"] + [{"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "x"}}]}}]}]
        gate.feed(chunks[0])
        gate.feed_all(chunks[1:-1])
        gate.feed(chunks[-1])
        late = [f for f in gate.finish()["findings"] if f["code"] == "delta_after_terminal"]
        self.assertEqual([f["position"] for f in late], [len(chunks) - 1])

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
        for items in ([{}], [], iter(())):   # feed_all too, even with nothing to feed
            with self.subTest(items=items), self.assertRaises(RuntimeError):
                gate.feed_all(items)

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
            vts.StreamGate("watsonx", {})
        with self.assertRaises(TypeError):
            vts.StreamGate("openai", [])


def _one_call_with(schema, arguments):
    return {"profile": "openai", "tool_schemas": {"f": schema}, "chunks": [
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]}


class OnlyDocumentedExceptions(unittest.TestCase):
    """issue 11 item 1: any content gives a report; only programming errors raise, as README lists."""

    def test_hostile_python_values_give_reports(self):
        loop = []
        loop.append(loop)
        cycle = {}
        cycle["x"] = cycle

        class Opaque:
            pass

        values = [{1}, b"x", (1, 2), float("nan"), float("inf"), Opaque(), 10 ** 5000, -10 ** 5000, loop, cycle,
                  {1: 2}, {"type": Opaque()}, {"type": 10 ** 5000},
                  {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": b"x", "function": {
                      "name": ("f",), "arguments": bytearray(b"{}")}}]}, "finish_reason": 10 ** 5000}]}]
        for profile, row in vts.PROFILES.items():
            for value in values:
                with self.subTest(profile=profile, value=type(value).__name__):
                    gate = vts.StreamGate(profile, {"f": {"type": "object"}})
                    gate.feed(value)
                    gate.feed(value)
                    fed = gate.finish()
                    whole = vts.validate_envelope(
                        {"profile": profile, "tool_schemas": {"f": {"type": "object"}}, row.stream_key: [value]})
                    # the value reached the room both ways (a stream under the wrong key is invalid_fixture,
                    # which blocked for the wrong reason on the rows whose key is "chunks")
                    self.assertEqual({f["code"] for f in whole["findings"]}, {f["code"] for f in fed["findings"]})
                    self.assertNotIn("invalid_fixture", {f["code"] for f in whole["findings"]})
                    for report in (fed, whole):
                        self.assertEqual(report["status"], "blocked")
                        json.loads(vts.render_json(report))
                        vts.render_text(report)
        for meta in (loop, {"x": Opaque()}, {"x": float("nan")}):
            report = vts.validate_envelope({"profile": "openai", "tool_schemas": {}, "chunks": [], "meta": meta})
            self.assertEqual([f["code"] for f in report["findings"]], ["invalid_fixture"])
            self.assertIsNone(report["meta"])
            json.loads(vts.render_json(report))
        for profile in (["openai"], None, 10 ** 5000):
            report = vts.validate_envelope({"profile": profile, "tool_schemas": {}, "chunks": []})
            self.assertIsNone(report["profile"])
            json.loads(vts.render_json(report))

    def test_programming_errors_raise_the_documented_exceptions(self):
        for call, error in ((lambda: vts.validate_bytes("{}"), TypeError),
                            (lambda: vts.validate_bytes(None), TypeError),
                            (lambda: vts.validate_envelope({}, {"max_depth": 3}), TypeError),
                            (lambda: vts.StreamGate(["openai"], {}), ValueError),
                            (lambda: vts.StreamGate("openai", {}, meta={"x": float("nan")}), ValueError),
                            (lambda: vts.StreamGate("openai", {}, limits=5), TypeError)):
            with self.assertRaises(error):
                call()
        self.assertEqual(vts.validate_bytes(memoryview(b"{}"))["findings"][0]["code"], "invalid_fixture")
        self.assertEqual(vts.validate_bytes(bytearray(b"{}"))["findings"][0]["code"], "invalid_fixture")


class WorkerThreads(unittest.TestCase):
    """issue 11 item 4: no alarm exists off the main thread, so the work itself must be bounded."""

    def run_in_thread(self, doc):
        import threading

        out = []
        worker = threading.Thread(target=lambda: out.append(vts.validate_envelope(doc)), daemon=True)
        worker.start()
        worker.join(120)
        self.assertFalse(worker.is_alive(), "a worker thread was frozen")
        return out[0]

    def test_patterns_that_froze_a_thread_get_a_verdict(self):
        subject = "a" * 39 + "!"
        for pattern, codes in (("^(\\w+\\s?){1,1000}$", ["schema_violation"]),
                               ("a*a*a*a*a*b", ["schema_violation"]),
                               ("(a|aa){0,100000}$", ["limit_exceeded"]),     # automaton too large
                               ("^(a*){1,100000}$", ["limit_exceeded"])):
            with self.subTest(pattern=pattern):
                doc = _one_call_with({"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}},
                                     json.dumps({"x": subject}))
                report = self.run_in_thread(doc)
                self.assertEqual(sorted({f["code"] for f in report["findings"]}), codes)

    def test_repeated_unique_items_over_a_large_array_is_bounded_work(self):
        # 2,000 uniqueItems checks of one 0.7 MB array took 195 s in a thread
        schema = {"type": "object", "properties": {"x": {"allOf": [{"uniqueItems": True}] * 2000}}}
        items = json.dumps({"x": [[i, "v" * 30] for i in range(20_000)]})
        report = self.run_in_thread(_one_call_with(schema, items))
        self.assertEqual([f["code"] for f in report["findings"]], ["limit_exceeded"])
        self.assertIn("max_evaluations", report["findings"][0]["message"])


if __name__ == "__main__":
    unittest.main()
