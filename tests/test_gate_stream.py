"""vts.gate_stream and vts.agate_stream: the common loop, items handed back unchanged, the verdict in `.report`.

Dict items, and bytes-like items (which go to StreamGate.feed_bytes), all in the default run.
"""

import asyncio
import json
import unittest

from support import fixture_paths, load_fixture, vts


def fixtures_of_every_profile():
    """(relpath, envelope) of the first passing and the first blocked fixture of each profile, served as a
    stream (no `serve.error`)."""
    chosen = {}
    for relpath in fixture_paths():
        if relpath.startswith("envelope/"):
            continue
        doc = load_fixture(relpath)[1]
        if not isinstance(doc, dict) or doc.get("profile") not in vts.PROFILES or "error" in doc.get("serve", {}):
            continue
        status = doc.get("expect", {}).get("status")
        if status in ("pass", "blocked"):
            chosen.setdefault((doc["profile"], status), (relpath, doc))
    return [chosen[key] for key in sorted(chosen)]


FIXTURES = fixtures_of_every_profile()


def items_of(doc):
    return doc[vts.PROFILES[doc["profile"]].stream_key]


def gate_args(doc):
    return dict(request=doc.get("request"), meta=doc.get("meta"))


class Boom(Exception):
    pass


def failing(items, after, error):
    """The items, then `error` raised after `after` of them."""
    yield from items[:after]
    raise error


async def agen(items, fail_after=None):
    for number, item in enumerate(items):
        if number == fail_after:
            raise Boom("the source failed")
        yield item


class GateStream(unittest.TestCase):
    def test_the_fixtures_cover_a_pass_and_a_blocked_turn_of_every_profile(self):
        self.assertEqual(len(FIXTURES), 2 * len(vts.PROFILES))

    def test_report_is_the_envelope_report_and_items_come_back_unchanged(self):
        for relpath, doc in FIXTURES:
            with self.subTest(fixture=relpath):
                items = items_of(doc)
                stream = vts.gate_stream(items, doc["profile"], doc["tool_schemas"], **gate_args(doc))
                self.assertIsInstance(stream.gate, vts.StreamGate)
                self.assertIs(iter(stream), stream)
                got = []
                for item in stream:
                    self.assertIsNone(stream.report)   # also after the last item: the end is not known yet
                    got.append(item)
                self.assertEqual(len(got), len(items))
                self.assertTrue(all(a is b for a, b in zip(got, items)))
                self.assertEqual(stream.report, vts.validate_envelope(doc))
                self.assertIs(stream.report, stream.gate.finish())
                self.assertEqual(list(stream), [])    # one pass
                self.assertEqual(stream.report["status"], doc["expect"]["status"])

    def test_blocked_is_current_for_each_item_yielded(self):
        _, doc = load_fixture("openai/identity-collision-name-change-on-continuation.json")
        stream = vts.gate_stream(doc["chunks"], "openai", doc["tool_schemas"])
        seen = [stream.gate.blocked for _ in stream]
        self.assertTrue(seen[-1])
        self.assertEqual(seen, sorted(seen))

    def test_stopping_early_leaves_no_report(self):
        for relpath, doc in FIXTURES:
            with self.subTest(fixture=relpath):
                stream = vts.gate_stream(items_of(doc), doc["profile"], doc["tool_schemas"], **gate_args(doc))
                for _ in stream:
                    break
                self.assertIsNone(stream.report)

    def test_an_exception_of_the_source_propagates_and_leaves_no_report(self):
        _, doc = load_fixture("openai/valid-fragmented-single-call.json")
        for after in (0, 2, len(doc["chunks"])):
            with self.subTest(after=after):
                error = Boom("the source failed")
                stream = vts.gate_stream(failing(doc["chunks"], after, error), "openai", doc["tool_schemas"])
                got = []
                with self.assertRaises(Boom) as caught:
                    for item in stream:
                        got.append(item)
                self.assertIs(caught.exception, error)   # unchanged: the very exception the source raised
                self.assertEqual(got, doc["chunks"][:after])
                self.assertIsNone(stream.report)
                self.assertEqual(list(stream), [])   # over: never a report after a failed source
                self.assertIsNone(stream.report)

    def test_a_stop_iteration_out_of_feed_is_no_end_of_the_source(self):
        # an item of your own class whose __eq__ raises StopIteration (the one way feed() raises): were it taken
        # for the end of the source, finish() would judge a turn whose later items (a stream error) never came
        class Key(str):
            def __eq__(self, other):
                raise StopIteration

            __hash__ = str.__hash__

        _, doc = load_fixture("openai/valid-fragmented-single-call.json")
        items = [*doc["chunks"], {Key("error"): {}}, {"error": {"message": "overloaded"}}]
        stream = vts.gate_stream(items, "openai", doc["tool_schemas"])
        with self.assertRaises(RuntimeError) as caught:
            for _ in stream:
                pass
        self.assertIsInstance(caught.exception.__cause__, StopIteration)
        self.assertIsNone(stream.report)
        self.assertEqual(list(stream), [])

        async def run():
            astream = vts.agate_stream(agen(items), "openai", doc["tool_schemas"])
            with self.assertRaises(RuntimeError):
                async for _ in astream:
                    pass
            return astream

        self.assertIsNone(asyncio.run(run()).report)

    def test_argument_errors_are_the_gates_and_come_before_any_item_is_read(self):
        read = []

        def source():
            read.append(1)
            yield {}

        for args, kwargs, error in ((("nope", {}), {}, ValueError), (("openai", []), {}, TypeError),
                                    (("openai", {}), {"meta": []}, ValueError),
                                    (("openai", {}), {"limits": {}}, TypeError),
                                    (("openai", {}), {"request": {"tool_choice": 7}}, ValueError)):
            for wrapper, items in ((vts.gate_stream, source()), (vts.agate_stream, agen([{}]))):
                with self.subTest(wrapper=wrapper.__name__, args=args, kwargs=kwargs):
                    with self.assertRaises(error):
                        wrapper(items, *args, **kwargs)
        self.assertEqual(read, [])
        with self.assertRaises(TypeError):
            vts.gate_stream(7, "openai", {})
        with self.assertRaises(TypeError):
            vts.agate_stream([{}], "openai", {})   # a list is not an async iterable

    def test_hostile_items_give_a_report(self):
        stream = vts.gate_stream([None, "x", 7, [], {"choices": 1}], "openai", {})
        self.assertEqual(len(list(stream)), 5)
        self.assertEqual(stream.report["status"], "blocked")


class AsyncGateStream(unittest.TestCase):
    def test_report_is_the_envelope_report_and_items_come_back_unchanged(self):
        async def run(doc):
            stream = vts.agate_stream(agen(items_of(doc)), doc["profile"], doc["tool_schemas"], **gate_args(doc))
            self.assertIs(stream.__aiter__(), stream)
            got = []
            async for item in stream:
                self.assertIsNone(stream.report)
                got.append(item)
            return stream, got

        for relpath, doc in FIXTURES:
            with self.subTest(fixture=relpath):
                stream, got = asyncio.run(run(doc))
                self.assertTrue(len(got) == len(items_of(doc)) and all(a is b for a, b in zip(got, items_of(doc))))
                self.assertEqual(stream.report, vts.validate_envelope(doc))

    def test_stopping_early_and_a_failing_source_leave_no_report(self):
        _, doc = load_fixture("anthropic/pass-three-parallel-tool-uses.json")

        async def early():
            stream = vts.agate_stream(agen(doc["events"]), "anthropic", doc["tool_schemas"])
            async for _ in stream:
                break
            return stream

        async def failed():
            stream = vts.agate_stream(agen(doc["events"], fail_after=3), "anthropic", doc["tool_schemas"])
            got = []
            with self.assertRaises(Boom):
                async for item in stream:
                    got.append(item)
            self.assertEqual(len(got), 3)
            self.assertEqual([item async for item in stream], [])
            return stream

        self.assertIsNone(asyncio.run(early()).report)
        self.assertIsNone(asyncio.run(failed()).report)


# --- bytes-like items: StreamGate.feed_bytes -----------------

def body_of(doc):
    """The raw HTTP body `serve` answers for the fixture (gemini as alt=sse)."""
    http = vts.PROFILES[doc["profile"]].http
    return http.frame(items_of(doc), "alt=sse")[1]


def bytes_report(doc):
    """The report the body `serve` answers gives fed as bytes: the envelope's, unless it is a WebSocket message log
    `capture` reads otherwise without --turn (several turns: its refusal; one among session messages: that turn)."""
    row, body = vts.PROFILES[doc["profile"]], body_of(doc)
    try:
        turn = vts.lines_log_turn(row, body, None)
    except vts.CaptureError as exc:
        return vts._report(vts.Outcome([vts.Finding(vts.UNSUPPORTED_EVENT, str(exc))], doc["profile"], doc.get("meta")))
    if turn is not body:
        lines = [json.loads(line) for line in turn.decode("utf-8").splitlines()]
        return vts.validate_envelope(dict(doc, **{row.stream_key: lines}))
    return vts.validate_envelope(doc)


def pieces(body, size):
    """The body cut every `size` bytes, as bytes, bytearray and memoryview in turn."""
    kinds = (bytes, bytearray, memoryview)
    return [kinds[n % 3](body[at:at + size]) for n, at in enumerate(range(0, len(body), size))]


class GateStreamOfBytes(unittest.TestCase):
    """Bytes-like items go to gate.feed_bytes."""

    def test_bytes_give_the_envelope_report_under_any_split(self):
        for relpath, doc in FIXTURES:
            body = body_of(doc)
            for size in (1, 7, len(body)):
                with self.subTest(fixture=relpath, size=size):
                    items = pieces(body, size)
                    stream = vts.gate_stream(items, doc["profile"], doc["tool_schemas"], **gate_args(doc))
                    got = list(stream)
                    self.assertTrue(all(a is b for a, b in zip(got, items)) and len(got) == len(items))
                    self.assertEqual(stream.report, bytes_report(doc))

    def test_async_bytes_give_the_envelope_report(self):
        async def run(doc):
            stream = vts.agate_stream(agen(pieces(body_of(doc), 5)), doc["profile"], doc["tool_schemas"],
                                      **gate_args(doc))
            async for _ in stream:
                pass
            return stream.report

        for relpath, doc in FIXTURES:
            with self.subTest(fixture=relpath):
                self.assertEqual(asyncio.run(run(doc)), bytes_report(doc))

    def test_bytes_and_items_in_one_turn_raise_and_leave_no_report(self):
        _, doc = load_fixture("openai/valid-fragmented-single-call.json")
        for items in ([doc["chunks"][0], body_of(doc)], [body_of(doc), doc["chunks"][0]]):
            with self.subTest(first=type(items[0]).__name__):
                stream = vts.gate_stream(items, "openai", doc["tool_schemas"])
                with self.assertRaises(RuntimeError):
                    list(stream)
                self.assertIsNone(stream.report)

    def test_a_body_that_yields_no_piece_is_an_empty_body(self):
        # httpx's iter_bytes() yields nothing for an empty 200 body: without body=True that is a turn without
        # items (not_applicable), with it capture's refusal of an empty body
        _, doc = load_fixture("openai/valid-fragmented-single-call.json")
        self.assertEqual(vts.gate_stream([], "openai", {}).__iter__().gate.finish()["status"], "not_applicable")
        for make in (lambda: vts.gate_stream(iter(()), "openai", {}, body=True),
                     lambda: vts.agate_stream(agen([]), "openai", {}, body=True)):
            stream = make()
            if isinstance(stream, vts.agate_stream):
                async def drain():
                    return [item async for item in stream]
                self.assertEqual(asyncio.run(drain()), [])
            else:
                self.assertEqual(list(stream), [])
            self.assertEqual([(f["code"], f["message"]) for f in stream.report["findings"]],
                             [("unsupported_event", "the body is empty: nothing was captured")])
            self.assertEqual(stream.report["status"], "blocked")
        body = body_of(doc)
        stream = vts.gate_stream([body[:10], body[10:]], "openai", doc["tool_schemas"], body=True)
        self.assertEqual(list(stream), [body[:10], body[10:]])
        self.assertEqual(stream.report["calls"], vts.validate_envelope(doc)["calls"])
        stream = vts.gate_stream([doc["chunks"][0]], "openai", doc["tool_schemas"], body=True)
        with self.assertRaises(RuntimeError):
            list(stream)
        self.assertIsNone(stream.report)



class TheVerdictIsOfWhatWasFed(unittest.TestCase):
    """gate_stream hands every item on: what the application then does to an item it was handed (a default
    filled into a call's arguments object) must not change the verdict (whole argument objects are taken
    when their call opens)."""

    def test_an_arguments_object_changed_after_it_was_handed_on(self):
        import copy

        for relpath, member in (("ollama/schema-violation-missing-required.json", "ollama"),
                                ("gemini/schema-violation-args-outside-schema.json", "gemini")):
            with self.subTest(fixture=relpath):
                doc = load_fixture(relpath)[1]
                stream = vts.gate_stream(copy.deepcopy(items_of(doc)), doc["profile"], doc["tool_schemas"],
                                         **gate_args(doc))
                for chunk in stream:
                    if member == "ollama":
                        for call in chunk["message"].get("tool_calls") or ():
                            call["function"]["arguments"].clear()
                            call["function"]["arguments"].update(city="Paris")
                    else:
                        for candidate in chunk.get("candidates", ()):
                            for part in candidate.get("content", {}).get("parts", ()):
                                if "functionCall" in part:
                                    part["functionCall"]["args"].clear()
                self.assertEqual(stream.report, vts.validate_envelope(doc))

    def test_an_anthropic_start_input_emptied_after_it_was_fed(self):
        import copy

        doc = copy.deepcopy(load_fixture("anthropic/unknown-tool.json")[1])
        start = next(n for n, e in enumerate(doc["events"]) if e.get("type") == "content_block_start"
                     and e["content_block"].get("type") == "tool_use")
        doc["events"][start]["content_block"]["input"] = {"x": 1}   # a start input and fragments: unexpected_event
        gate = vts.StreamGate("anthropic", doc["tool_schemas"], **gate_args(doc))
        for event in copy.deepcopy(doc["events"]):
            gate.feed(event)
            if event.get("type") == "content_block_start":
                event["content_block"].get("input", {}).clear()
        self.assertEqual(gate.finish(), vts.validate_envelope(doc))



def socket_session(events):
    """A session's iterator: the turn's events, then a socket that stays open (reading on fails the test)."""
    yield from events
    raise AssertionError("read past the turn's terminal: the session would wait here")


# README "A socket's turn": the terminal that ends each socket room's turn, read from a dict or an SDK object
SOCKET_TERMINALS = {
    "openai-realtime": lambda e: _member(e, "type") == "response.done",
    "openai-responses": lambda e: _member(e, "type") in ("response.completed", "response.incomplete", "response.failed",
                                                         "error"),
    "gemini-live": lambda e: _member(e, "toolCall", "tool_call") is not None or _member(
        _member(e, "serverContent", "server_content"), "turnComplete", "turn_complete") is True,
}


def _member(item, name, attribute=None):
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, attribute or name, None)


def one_turn(connection, ended):
    """README's one_turn, for any socket room: the events up to and with the turn's terminal."""
    for event in connection:
        yield event
        if ended(event):
            return


def socket_turn_fixtures():
    """(relpath, envelope) of each passing fixture of a socket room that holds one turn (gemini-live's up to its
    toolCall: its tail is not in a run-time turn)."""
    for relpath in fixture_paths():
        profile = relpath.split("/")[0]
        if profile not in SOCKET_TERMINALS or "http" in relpath:
            continue
        doc = load_fixture(relpath)[1]
        events = items_of(doc)
        if doc["expect"]["status"] != "pass" or profile == "openai-responses" and "websocket" not in relpath:
            continue
        yield relpath, doc, events


class SocketTurns(unittest.TestCase):
    """README "A socket's turn": gate_stream over a session's iterator cut after the turn's terminal reports the turn
    without reading on (the socket stays open); the report is the envelope's, up to that terminal."""

    def check(self, read=lambda event, profile: event):
        checked = 0
        for relpath, doc, events in socket_turn_fixtures():
            profile = doc["profile"]
            ended = SOCKET_TERMINALS[profile]
            cut = next(number for number, event in enumerate(events) if ended(event)) + 1
            with self.subTest(fixture=relpath):
                session = socket_session([read(event, profile) for event in events[:cut]])
                stream = vts.gate_stream(one_turn(session, ended), profile, doc["tool_schemas"], **gate_args(doc))
                self.assertEqual(len(list(stream)), cut)
                want = vts.validate_envelope(dict(doc, events=events[:cut]))
                self.assertEqual((stream.report["status"], stream.report["calls"]), (want["status"], want["calls"]))
                self.assertEqual(stream.report["status"], "pass")
                checked += 1
        return checked

    def test_dict_events(self):
        self.assertGreater(self.check(), 15)

    def test_sdk_objects(self):
        try:
            from google.genai import _live_converters, types as genai_types
            from openai._models import construct_type_unchecked
            from openai.types.realtime import RealtimeServerEvent
            from openai.types.responses.responses_server_event import ResponsesServerEvent
        except ImportError:
            self.skipTest("openai or google-genai is not installed (tests/adapters/.venv/bin/python)")
        kinds = {"openai-realtime": RealtimeServerEvent, "openai-responses": ResponsesServerEvent}

        def read(event, profile):
            if profile == "gemini-live":
                return genai_types.LiveServerMessage._from_response(
                    response=_live_converters._LiveServerMessage_from_mldev(json.loads(json.dumps(event))), kwargs={})
            return construct_type_unchecked(value=json.loads(json.dumps(event)), type_=kinds[profile])

        self.assertGreater(self.check(read), 15)


if __name__ == "__main__":
    unittest.main()
