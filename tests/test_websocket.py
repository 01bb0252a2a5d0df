"""WebSockets (RFC 6455): `serve` on a row's HttpRules.socket path, `conform`'s VTS_WS_URL, `capture` of a log.

Every served row with SocketRules is played to a client of our own (tests/wsclient.py) and must deliver
exactly the fixture's payloads, one text message each; then the handshake's refusals, the framing edge
cases (an unmasked frame, an oversized one, fragments, pings, binary, a message that is not JSON), several
clients at once, one that never reads, and the fault fixtures (cut, error) over a socket.  Then `conform` with
the example adapter tests/conform/socket_adapter.py, and `capture` of a message log: JSON Lines of the received
messages, a HAR entry's `_webSocketMessages`, and `--turn` through a row's CaptureRules.socket_turns.
"""

import json
import os
import socket
import sys
import tempfile
import threading
import unittest
from types import MappingProxyType
from unittest import mock

import wsclient
from support import FIXTURES, ROOT, importable, run_cli, run_conform, vts

RESPONSES = os.path.join(FIXTURES, "openai-responses")
PASS = "pass-arguments-only-in-done-event"
CUT = "missing-terminal-connection-closed-mid-call"
RETRY = "pass-http-429-rate-limit-then-the-stream-on-retry"
CREATE = json.dumps({"type": "response.create", "model": "gpt-4.1", "input": "hi"})


def start(paths, **options):
    served, _ = vts.serve_plan(paths)
    logs = []
    server = vts.make_server(served, log=logs.append, **options)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    return server, f"ws://{host}:{port}/", served, logs


def events_of(path):
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    return doc[vts.PROFILES[doc["profile"]].stream_key]


class Served(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.url, cls.served, cls.logs = start([RESPONSES], request_seconds=5.0)

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def socket(self, prefix=PASS, **options):
        row = self.served[prefix].row
        return wsclient.connect(self.url + prefix + row.http.socket.example, **options)

    def turn(self, ws, events):
        last = json.dumps(events[-1]["type"])
        return [json.loads(text) for text in ws.texts(until=lambda text: last in text and
                                                       json.loads(text) == events[-1])]

    def test_each_responses_fixture_is_played_as_its_events(self):
        socket_rows = [name for name, row in vts.PROFILES.items() if row.http and row.http.socket]
        self.assertIn("openai-responses", socket_rows)
        for prefix, fixture in sorted(self.served.items()):
            if fixture.fault:
                continue
            with self.subTest(prefix), self.socket(prefix) as ws:
                ws.send_text(CREATE)
                self.assertEqual(self.turn(ws, fixture.stream), fixture.stream)
                ws.close()
                self.assertEqual(ws.close_code, 1000)

    def test_two_turns_on_one_socket_and_a_message_without_a_turn(self):
        events = self.served[PASS].stream
        with self.socket() as ws:
            ws.send_text(json.dumps({"type": "response.steer"}))
            error = json.loads(ws.receive()[1])
            self.assertEqual((error["type"], error["status"]), ("error", 400))
            for _ in range(2):
                ws.send_text(CREATE)
                self.assertEqual(self.turn(ws, events), events)
            ws.close(1001)
            self.assertEqual(ws.close_code, 1001)

    def test_a_post_is_still_the_sse_stream_and_a_get_without_upgrade_is_426(self):
        import urllib.request
        import urllib.error

        http = self.url.replace("ws://", "http://") + PASS + "/v1/responses"
        with urllib.request.urlopen(urllib.request.Request(http, data=b"{}"), timeout=10) as response:
            self.assertEqual(response.headers["Content-Type"], "text/event-stream")
        with self.assertRaises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(http, timeout=10)
        self.assertEqual((caught.exception.code, caught.exception.headers["Upgrade"]), (426, "websocket"))

    def test_handshake_refusals(self):
        for options, status in (({"upgrade": None}, 426), ({"version": "8"}, 426), ({"version": None}, 426),
                                ({"key": "c2hvcnQ="}, 400), ({"key": "not base64!"}, 400)):
            with self.subTest(options), self.assertRaises(wsclient.HandshakeRefused) as caught:
                self.socket(**options)
            self.assertEqual(caught.exception.status, status)
            self.assertEqual(json.loads(caught.exception.body)["error"]["type"],
                             "upgrade_required" if status == 426 else "bad_request")
        with self.assertRaises(wsclient.HandshakeRefused) as caught:
            self.socket(version="8")
        self.assertEqual(caught.exception.headers["sec-websocket-version"], "13")
        with self.socket(version="13 \t") as ws:   # whitespace around a header's value is not part of it
            ws.close()

    def closed_with(self, code, *frames):
        with self.socket() as ws:
            for data in frames:
                ws.send_raw(data)
            self.assertIsNone(ws.receive())
            return ws.close_code, ws.close_reason

    def test_framing_refusals_close_with_their_codes(self):
        create = CREATE.encode()
        cases = (
            ("unmasked", 1002, wsclient.frame(wsclient.TEXT, create, mask=False)),
            ("reserved bit", 1002, wsclient.frame(wsclient.TEXT, create, rsv=4)),
            ("unknown opcode", 1002, wsclient.frame(0x3, create)),
            ("continuation first", 1002, wsclient.frame(wsclient.CONTINUATION, create)),
            ("fragmented ping", 1002, wsclient.frame(wsclient.PING, b"x", fin=False)),
            ("long ping", 1002, wsclient.frame(wsclient.PING, b"x" * 126)),
            ("oversized", 1009, wsclient.frame(wsclient.TEXT, b"", length=vts.SERVE_MAX_REQUEST_BYTES + 1)[:14]),
            ("64-bit length, top bit set", 1002, bytes((0x81, 0xFF)) + (1 << 63).to_bytes(8, "big")),
            ("binary", 1003, wsclient.frame(wsclient.BINARY, create)),
            ("not UTF-8", 1007, wsclient.frame(wsclient.TEXT, b"\xff")),
            ("not JSON", 1007, wsclient.frame(wsclient.TEXT, b"{\"type\": ")),
            ("a key twice", 1007, wsclient.frame(wsclient.TEXT, b'{"a": 1, "a": 2}')),
            ("bad close code", 1002, wsclient.frame(wsclient.CLOSE, (1005).to_bytes(2, "big"))),
        )
        for name, code, data in cases:
            with self.subTest(name):
                self.assertEqual(self.closed_with(code, data)[0], code)

    def test_fragmented_message_with_a_ping_between(self):
        events, text = self.served[PASS].stream, CREATE.encode()
        with self.socket() as ws:
            ws.send_frame(wsclient.TEXT, text[:5], fin=False)
            ws.send_frame(wsclient.PING, b"are you there")
            ws.send_frame(wsclient.CONTINUATION, text[5:9], fin=False)
            ws.send_frame(wsclient.CONTINUATION, text[9:])
            self.assertEqual(self.turn(ws, events), events)
            self.assertEqual(ws.pongs, [b"are you there"])
            ws.close()

    def test_messages_per_session_are_bounded(self):
        with self.socket() as ws:
            for _ in range(vts.SERVE_SOCKET_MESSAGES + 1):
                ws.send_text(json.dumps({"type": "other"}))
            while ws.receive() is not None:
                pass
            self.assertEqual(ws.close_code, 1008)

    def test_several_clients_at_once(self):
        events, got = self.served[PASS].stream, []
        sockets = [self.socket() for _ in range(6)]
        for ws in sockets:
            ws.send_text(CREATE)

        def read(ws):
            got.append(self.turn(ws, events))
            ws.close()

        threads = [threading.Thread(target=read, args=(ws,)) for ws in reversed(sockets)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(got, [events] * 6)

    def test_cut_fixture_ends_without_a_close_frame(self):
        with self.socket(CUT) as ws:
            ws.send_text(CREATE)
            self.assertEqual([json.loads(text) for text in ws.texts()], self.served[CUT].stream)
            self.assertEqual((ws.ended, ws.closed), (True, False))

    def test_log_line_per_session(self):
        with self.socket() as ws:
            ws.send_text(CREATE)
            self.turn(ws, self.served[PASS].stream)
            ws.close(1000)
        self.server.shutdown()   # the log is written on its own thread: closing waits for it
        self.server.server_close()
        try:
            self.assertIn(f"GET /{PASS}/v1/responses 101 websocket: 1 message received, "
                          f"{len(self.served[PASS].stream)} sent, the client closed 1000", self.logs)
        finally:
            type(self).setUpClass()


class Idle(unittest.TestCase):
    def test_a_client_that_sends_nothing_is_closed_1008_and_nothing_follows(self):
        server, url, _, _ = start([os.path.join(RESPONSES, PASS + ".json")], request_seconds=0.2)
        try:
            with wsclient.connect(url + PASS + "/v1/responses") as ws:
                self.assertIsNone(ws.receive())
                self.assertEqual((ws.close_code, ws.close_reason), (1008, "no whole message came within 0.2 seconds"))
                ws.sock.settimeout(10)
                rest = ws.buffer
                while True:
                    chunk = ws.sock.recv(65536)
                    if not chunk:
                        break
                    rest += chunk
                self.assertEqual(rest, b"")
        finally:
            server.shutdown()
            server.server_close()


class Faults(unittest.TestCase):
    def test_error_fixture_refuses_the_first_upgrade_then_plays_the_turn(self):
        server, url, served, _ = start([os.path.join(RESPONSES, RETRY + ".json")])
        try:
            with self.assertRaises(wsclient.HandshakeRefused) as caught:
                wsclient.connect(url + RETRY + "/v1/responses")
            error = served[RETRY].row.http.error(served[RETRY].fault["error"]["kind"])
            self.assertEqual((caught.exception.status, caught.exception.body), (error.status, error.body))
            with wsclient.connect(url + RETRY + "/v1/responses") as ws:
                ws.send_text(CREATE)
                events = served[RETRY].stream
                self.assertEqual([json.loads(t) for t in ws.texts(lambda t: json.loads(t) == events[-1])], events)
                ws.close()
        finally:
            server.shutdown()
            server.server_close()

    def test_a_room_error_hook_sends_its_messages_in_place_of_the_turn(self):
        row = vts.PROFILES["openai-responses"]
        rules = row.http.socket
        hooked = vts.SocketRules(path=rules.path, example=rules.example, reply=rules.reply, only=False,
                                 frame=rules.frame, error=lambda error: [{"type": "error", "status": error.status}])
        http = vts.HttpRules(**{name: getattr(row.http, name) for name in vts.HttpRules.__slots__
                                if name != "socket"}, socket=hooked)
        served, _ = vts.serve_plan([os.path.join(RESPONSES, RETRY + ".json")])
        fixture = served[RETRY]
        fixture.row = vts.Profile(**{name: getattr(row, name) for name in vts.Profile.__slots__ if name != "http"},
                                  http=http)
        server = vts.make_server(served)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            host, port = server.server_address[:2]
            with wsclient.connect(f"ws://{host}:{port}/{RETRY}/v1/responses") as ws:
                ws.send_text(CREATE)
                self.assertEqual(json.loads(ws.receive()[1]), {"type": "error", "status": 429})
                ws.close()
        finally:
            server.shutdown()
            server.server_close()

    def test_a_client_that_never_reads_holds_only_its_own_connection(self):
        import tempfile
        import time

        # a large turn: far more than the socket buffers hold, so the server's write stalls on this client
        with open(os.path.join(RESPONSES, PASS + ".json"), encoding="utf-8") as handle:
            doc = json.load(handle)
        big = [dict(doc["events"][0], pad="x" * 60000)] * 200 + doc["events"][1:]
        doc["events"] = big
        doc.pop("expect", None)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "big.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(doc, handle)
            server, url, served, logs = start([path], stall_seconds=0.5)
            try:
                stuck = wsclient.connect(url + "big/v1/responses")
                stuck.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                stuck.send_text(CREATE)
                with wsclient.connect(url + "big/v1/responses", timeout=30) as ws:
                    ws.send_text(CREATE)
                    self.assertEqual(len(ws.texts(lambda t: '"response.completed"' in t)), len(big))
                    ws.close()
                for _ in range(600):   # the stuck session ends once a write makes no progress for 0.5 s
                    if not server.connections:
                        break
                    time.sleep(0.05)
                self.assertEqual(server.connections, 0)
                stuck.sock.close()
            finally:
                server.shutdown()
                server.server_close()
            self.assertTrue(any(line.startswith("GET /big/v1/responses 101") and "the client went away" in line
                                for line in logs), logs)

SOCKET_ADAPTER = f"{sys.executable} {os.path.join(ROOT, 'tests', 'conform', 'socket_adapter.py')}"


def conform(*fixtures, cmd=SOCKET_ADAPTER, extra=()):
    return run_conform(*fixtures, cmd=cmd, extra=extra)


def conform_script(script):
    """conform's records for PASS with the adapter a Python SCRIPT run after `import json, os, wsclient`."""
    import shlex

    code = ("import json, os, sys; sys.path.insert(0, " + repr(os.path.join(ROOT, "tests")) + "); import wsclient; "
            + script)
    return conform(os.path.join(RESPONSES, PASS + ".json"), cmd=f"{sys.executable} -c {shlex.quote(code)}")[1]


class Conform(unittest.TestCase):
    def test_the_socket_adapter_end_to_end(self):
        names = (PASS, CUT, RETRY, "delta-after-terminal-event-after-response-completed")
        code, records, _, err = conform(*(os.path.join(RESPONSES, name + ".json") for name in names),
                                        extra=("--verbose",))
        self.assertEqual(code, 0, err)
        verdicts = {os.path.basename(r["fixture"])[:-5]: (r["verdict"], r["requested"]) for r in records}
        self.assertEqual(verdicts, {PASS: ("agree", True), CUT: ("refuses", True), RETRY: ("agree", True),
                                    names[3]: ("refuses", True)})
        retried = next(r for r in records if RETRY in r["fixture"])
        self.assertEqual(retried["served"], [f"GET /{RETRY}/v1/responses 429",
                                                 f"GET /{RETRY}/v1/responses 101"])

    def test_vts_ws_url_for_a_socket_row_only(self):
        import shlex
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            dump = os.path.join(folder, "env.json")
            code = ("import json, os; json.dump({k: v for k, v in os.environ.items() if k.startswith('VTS_')}, "
                    f"open({dump!r}, 'w')); print('[]')")
            cmd = f"{sys.executable} -c {shlex.quote(code)}"
            found = {}
            for path in (os.path.join(RESPONSES, PASS + ".json"),
                         os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json")):
                conform(path, cmd=cmd)
                with open(dump, encoding="utf-8") as handle:
                    found[path] = json.load(handle)
        responses, chat = found.values()
        self.assertRegex(responses["VTS_WS_URL"], rf"^ws://127\.0\.0\.1:\d+/{PASS}/v1/responses$")
        self.assertEqual(responses["VTS_WS_URL"], "ws" + responses["VTS_API_URL"][4:])
        self.assertNotIn("VTS_WS_URL", chat)

    def test_a_socket_request_that_differs_is_request_differs(self):
        records = conform_script("ws = wsclient.connect(os.environ['VTS_WS_URL']); "
                                 "ws.send_text(json.dumps({'type': 'response.create', 'model': 'm', 'tools': []})); "
                                 "ws.texts(lambda t: 'response.completed' in t); ws.close(); print('[]')")
        self.assertEqual(records[0]["verdict"], "request-differs")
        self.assertIn("its request does not offer \"get_weather\"", records[0]["differences"][0])


class NotFoundHint(unittest.TestCase):
    def test_a_404_names_the_url_the_row_is_spoken_on(self):
        import shlex

        code = ("import os, urllib.request, urllib.error\ntry:\n urllib.request.urlopen(os.environ['VTS_BASE_URL'] + "
                "'/wrong?key=AIzaSyA1234567890abcdefghijklmnopqrstuv')\nexcept urllib.error.HTTPError:\n pass\n"
                "print('[]')")
        cmd = f"{sys.executable} -c {shlex.quote(code)}"
        for path, hint in ((os.path.join(FIXTURES, "gemini-live", "pass-call-without-args.json"),
                            "(is its URL VTS_WS_URL?)"),
                           (os.path.join(RESPONSES, PASS + ".json"),
                            "(is its base URL VTS_BASE_URL, or its socket's VTS_WS_URL?)"),
                           (os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json"),
                            "(is its base URL VTS_BASE_URL?)")):
            with self.subTest(path):
                _, records, _, err = conform(path, cmd=cmd)
                self.assertIn("answered 404 for", err)
                self.assertIn(hint, err)
                self.assertNotIn("AIzaSyA1234567890", err + json.dumps(records))


def turns_at_created(received):
    """A socket_turns for the tests: a turn starts at each response.created."""
    starts = [n for n, message in enumerate(received) if isinstance(message, dict)
              and message.get("type") == "response.created"]
    return [(start, end) for start, end in zip(starts, starts[1:] + [len(received)])]


def with_turns(turns=turns_at_created):
    """PROFILES with openai-responses splitting its logs by `turns` (by default at each response.created; None:
    not at all)."""
    row = vts.PROFILES["openai-responses"]
    rules = vts.CaptureRules(**{name: getattr(row.capture, name) for name in vts.CaptureRules.__slots__
                                if name != "socket_turns"}, socket_turns=turns)
    split = vts.Profile(**{name: getattr(row, name) for name in vts.Profile.__slots__ if name != "capture"},
                        capture=rules)
    return mock.patch.object(vts, "PROFILES", MappingProxyType(dict(vts.PROFILES, **{row.name: split})))


def har(messages):
    return {"log": {"entries": [
        {"request": {"url": "https://api.example/other", "method": "POST"}, "response": {"content": {"text": ""}}},
        {"request": {"url": "wss://api.openai.com/v1/responses", "method": "GET"},
         "response": {"status": 101, "content": {"size": 0, "mimeType": "x-unknown"}}, "_resourceType": "websocket",
         "_webSocketMessages": [{"type": kind, "time": 1767225600.0 + n / 10, "opcode": opcode, "data": data}
                                for n, (kind, opcode, data) in enumerate(messages)]}]}}


class Capture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(RESPONSES, PASS + ".json"), encoding="utf-8") as handle:
            cls.doc = json.load(handle)
        tools = [{"type": "function", "name": name, "parameters": schema}
                 for name, schema in cls.doc["tool_schemas"].items()]
        cls.create = json.dumps({"type": "response.create", "model": "gpt-4.1", "tools": tools, "input": "hi"})
        cls.other = json.dumps({"type": "response.create", "model": "gpt-4.1", "input": "hi",
                                "tools": [{"type": "function", "name": "older", "parameters": {"type": "object"}}]})

    def capture(self, body, *options):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "log")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(body if isinstance(body, str) else json.dumps(body))
            code, out, err = run_cli("capture", "--profile", "openai-responses", *options, path)
        return code, (json.loads(out) if code == 0 else None), err

    def received(self, indent=None):
        return [("receive", 1, json.dumps(event, indent=indent)) for event in self.doc["events"]]

    def test_json_lines_of_received_messages(self):
        body = "".join(json.dumps(event) + "\n" for event in self.doc["events"])
        code, envelope, err = self.capture(body)
        self.assertEqual(code, 0, err)
        self.assertEqual((envelope["meta"]["capture_point"], len(envelope["events"])), ("JSON Lines", 6))
        report = vts.validate_envelope(dict(envelope, tool_schemas=self.doc["tool_schemas"]))
        self.assertEqual((report["status"], [call["arguments"] for call in report["calls"]]),
                         ("pass", [call["arguments"] for call in self.doc["expect"]["calls"]]))

    def test_har_web_socket_messages_give_the_body_and_the_request(self):
        messages = [("send", 1, self.other), ("send", 2, "\u0000binary"), ("send", 1, self.create),
                    ("send", 1, json.dumps({"type": "response.steer", "input": "x"})), ("receive", 9, "ping"),
                    *self.received(indent=1), ("receive", 8, "")]
        code, envelope, err = self.capture(har(messages), "--entry", "1")
        self.assertEqual(code, 0, err)
        self.assertEqual(envelope["request"]["tools"], sorted(self.doc["tool_schemas"]))
        self.assertEqual(envelope["tool_schemas"], self.doc["tool_schemas"])
        self.assertEqual(len(envelope["events"]), len(self.doc["events"]))
        report = vts.validate_envelope(dict(envelope, expect=self.doc["expect"]))
        self.assertEqual((report["status"], [c["name"] for c in report["calls"]]),
                         ("pass", [c["name"] for c in self.doc["expect"]["calls"]]))

    def test_refusals(self):
        binary = [("send", 1, self.create), ("receive", 2, "AAEC"), *self.received()]
        cases = (
            (har(binary), ("--entry", "1"), "_webSocketMessages[1] is a received binary message (opcode 2): this "
                                            "tool reads a turn from text messages only"),
            (har([("send", 1, self.create), ("receive", 1, "{\"type\": ")]), ("--entry", "1"),
             "received message 0 is not strict JSON"),
            (har([("receive", 3, "{}")]), ("--entry", "1"), "_webSocketMessages[0] is not {\"type\""),
            (har([("send", 1, self.create), ("receive", 8, "")]), ("--entry", "1"),
             "the WebSocket log holds no received text message: nothing was captured"),
            (har(self.received()), ("--entry", "1", "--turn", "1"),
             "--turn 1: the message log carries 1 turn (0-based)"),
            (har(self.received()), ("--entry", "1", "--turn", "-1"), "--turn -1: a turn's number is 0 or more"),
        )
        for body, options, message in cases:
            with self.subTest(message):
                code, _, err = self.capture(body, *options)
                self.assertEqual(code, 3)
                self.assertIn(message, err)
        surrogate = har([("send", 1, self.create),
                         ("receive", 1, json.dumps({"type": "response.created", "x": "\ud800"}, ensure_ascii=False))])
        for body, options, message in (
                (surrogate, ("--entry", "1"),
                 "received message 0 is not UTF-8 text (a lone surrogate at character 35)"),
                ("\ufeff{\"type\": \"response.created\"}\n", ("--turn", "0"),
                 "--turn: the body starts with a byte order mark: a message log is JSON Lines, one received message "
                 "per line"),
                ([{"type": "response.created"}], ("--turn", "0"), "--turn: the body is a JSON list: a message log"),
                ("data: {}\n\n", ("--turn", "0"), "--turn: the body does not start with a JSON object: a message"),
                ("", ("--turn", "0"), "--turn: the body is empty: a message log")):
            with self.subTest(message):
                code, _, err = self.capture(body, *options)
                self.assertEqual(code, 3)
                self.assertIn(message, err)
        with with_turns(None):   # a row whose logs hold one turn (openai-responses splits its own)
            code, _, err = self.capture(har(self.received()), "--entry", "1", "--turn", "0")
        self.assertEqual(code, 3)
        self.assertIn("--turn: a message log of profile openai-responses carries one turn (its rules split none)", err)

    def test_turn_picks_one_of_several(self):
        messages = [("send", 1, self.other), *self.received(), ("send", 1, self.create), *self.received()]
        second = [dict(event, sequence_number=100 + n) for n, event in enumerate(self.doc["events"])]
        messages[len(self.doc["events"]) + 2:] = [("receive", 1, json.dumps(event)) for event in second]
        lines = "".join(json.dumps(event) + "\n" for event in self.doc["events"] + second)
        with with_turns():
            for body, options in ((har(messages), ("--entry", "1")), (lines, ())):
                with self.subTest(options):
                    code, _, err = self.capture(body, *options)
                    self.assertEqual(code, 3)
                    self.assertIn("the message log carries 2 turns: pick one with --turn K (0 to 1)", err)
                    code, _, err = self.capture(body, *options, "--turn", "2")
                    self.assertEqual(code, 3)
                    self.assertIn("--turn 2: the message log carries 2 turns (0-based)", err)
                    code, envelope, err = self.capture(body, *options, "--turn", "1")
                    self.assertEqual(code, 0, err)
                    self.assertEqual([e["sequence_number"] for e in envelope["events"]],
                                     [e["sequence_number"] for e in second])
            code, envelope, err = self.capture(har(messages), "--entry", "1", "--turn", "0")
            self.assertEqual(envelope["request"]["tools"], ["older"])   # the last sent before turn 0
            code, envelope, err = self.capture(har(messages), "--entry", "1", "--turn", "1")
            self.assertEqual(envelope["request"]["tools"], sorted(self.doc["tool_schemas"]))


    def test_a_responses_create_without_tools_is_its_turns_request(self):
        # WebSocket mode: each response.create stands alone; a turn's own create offers no tools, not an earlier one's
        bare = json.dumps({"type": "response.create", "model": "gpt-4.1", "input": "again",
                           "previous_response_id": "resp_1"})
        second = [dict(event, sequence_number=100 + n) for n, event in enumerate(self.doc["events"])]
        messages = [("send", 1, self.create), *self.received(), ("send", 1, bare),
                    *[("receive", 1, json.dumps(event)) for event in second]]
        code, envelope, err = self.capture(har(messages), "--entry", "1", "--turn", "1")
        self.assertEqual(code, 0, err)
        self.assertEqual((envelope["request"], envelope["tool_schemas"]), ({"tools": []}, {}))
        code, envelope, err = self.capture(har(messages), "--entry", "1", "--turn", "0")
        self.assertEqual(envelope["request"]["tools"], sorted(self.doc["tool_schemas"]))

    def test_turns_of_json_lines_with_a_raw_line_separator_in_a_string(self):
        # U+2028 and U+0085 are legal raw inside a JSON string: lines end at CR and LF alone, as capture reads them
        for mark in ("\u2028", "\u0085"):
            first = [dict(self.doc["events"][0], note=f"a{mark}b"), *self.doc["events"][1:]]
            second = [dict(event, sequence_number=100 + n) for n, event in enumerate(self.doc["events"])]
            lines = "".join(json.dumps(event, ensure_ascii=False) + "\n" for event in first + second)
            with self.subTest(mark=hex(ord(mark))), with_turns():
                code, _, err = self.capture(lines)
                self.assertEqual(code, 3)
                self.assertIn("the message log carries 2 turns: pick one with --turn K (0 to 1)", err)
                code, envelope, err = self.capture(lines, "--turn", "0", "--no-redact")
                self.assertEqual(code, 0, err)
                self.assertEqual(envelope["events"][0]["note"], f"a{mark}b")
                self.assertEqual(len(envelope["events"]), len(first))

def tool(name):
    return {"type": "function", "name": name, "parameters": {"type": "object"}}


class SessionRequest(unittest.TestCase):
    """CaptureRules.session_request: which client messages configure a turn's tools, per room."""

    def requests(self, profile, messages):
        """The request of a turn starting after each message (None: none)."""
        kept, found = (), []
        for message in messages:
            kept = vts.session_request_after(vts.PROFILES[profile], kept, message)
            found.append(kept[-1] if kept else None)
        return found

    def test_responses_each_create_stands_alone(self):
        with_tools = {"type": "response.create", "model": "m", "tools": [tool("a")], "tool_choice": "required"}
        bare = {"type": "response.create", "model": "m", "input": "x"}
        steer = {"type": "response.steer", "input": "y"}
        self.assertEqual(self.requests("openai-responses", [steer, with_tools, steer, bare, "text"]),
                         [None, with_tools, with_tools, bare, bare])

    def test_realtime_session_update_merges_and_a_create_overrides_for_its_response(self):
        update = {"type": "session.update", "session": {"tools": [tool("a")], "tool_choice": "required"}}
        more = {"type": "session.update", "session": {"instructions": "x"}}
        own = {"type": "response.create", "response": {"tools": [tool("b")]}}
        plain = {"type": "response.create"}
        found = self.requests("openai-realtime", [plain, {"type": "session.update", "session": {"voice": "v"}},
                                                  plain, update, more, plain, own, plain])
        session = {"type": "session.update", "session": {"voice": "v", "tools": [tool("a")], "tool_choice": "required",
                                                         "instructions": "x"}}
        self.assertEqual(found[:3], [None, None, None])   # no tools set on the socket: no request
        self.assertEqual(found[5], session)
        self.assertEqual(found[6], {"type": "response.create", "response": {"tools": [tool("b")],
                                                                           "tool_choice": "required"}})
        self.assertEqual(found[7], session)   # the override was that response's only
        read = [vts.request_from_body("openai-realtime", body)[1] for body in found[5:]]
        self.assertEqual(read, [{"tools": ["a"], "tool_choice": "required"},
                                {"tools": ["b"], "tool_choice": "required"},
                                {"tools": ["a"], "tool_choice": "required"}])

    def test_live_the_setup_message(self):
        setup = {"setup": {"model": "models/m"}}
        content = {"clientContent": {"turns": [], "turnComplete": True}}
        self.assertEqual(self.requests("gemini-live", [content, setup, content]), [None, setup, setup])

    def test_the_default_keeps_the_last_message_with_tools(self):
        with_tools = {"type": "response.create", "model": "m", "tools": [tool("a")]}
        with with_turns():   # a row without its own rule
            row = vts.PROFILES["openai-responses"]
            rules = vts.CaptureRules(**{name: getattr(row.capture, name) for name in vts.CaptureRules.__slots__
                                        if name != "session_request"})
            row = vts.Profile(**{name: getattr(row, name) for name in vts.Profile.__slots__ if name != "capture"},
                              capture=rules)
        kept = ()
        for message in (with_tools, {"type": "response.create", "model": "m"}, {"tools": "not a list"}):
            kept = vts.session_request_after(row, kept, message)
        self.assertEqual(kept, (with_tools,))

    def test_serve_keeps_the_turns_own_create_for_conform(self):
        records = conform_script("body = json.load(open(os.environ['VTS_REQUEST_FILE'])); body.pop('stream', None); "
                                 "ws = wsclient.connect(os.environ['VTS_WS_URL']); "
                                 "ws.send_text(json.dumps(dict(body, type='response.create'))); "
                                 "ws.texts(lambda t: 'response.completed' in t); "
                                 "ws.send_text(json.dumps({'type': 'response.create', 'model': 'm', "
                                 "'input': 'again'})); "
                                 "ws.texts(lambda t: 'response.completed' in t); ws.close(); print('[]')")
        self.assertEqual(records[0]["verdict"], "request-differs")
        self.assertIn("its request does not offer \"get_weather\"", records[0]["differences"][0])


REALTIME = os.path.join(FIXTURES, "openai-realtime")
KEY = "openai-insecure-api-key.ek_68af296e8e408191a1120ab6383263c2"


class Subprotocols(unittest.TestCase):
    """SocketRules.subprotocols: a browser's offer (OpenAI Realtime: `realtime`, its key, `openai-beta.realtime-v1`)
    is answered with the first listed one, never a credential; a query on the upgrade path is fine."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.url, cls.served, cls.logs = start([RESPONSES, REALTIME], request_seconds=5.0)
        cls.realtime = next(prefix for prefix, fixture in cls.served.items() if fixture.row.name == "openai-realtime"
                            and prefix.rsplit("/", 1)[-1].startswith("pass-") and not fixture.fault)

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def upgrade(self, prefix, query="", offer=None):
        row = self.served[prefix].row
        headers = {} if offer is None else {"Sec-WebSocket-Protocol": offer}
        ws = wsclient.connect(self.url + prefix + row.http.socket.example + query, headers=headers)
        return ws, ws.headers.get("sec-websocket-protocol")

    def test_the_first_offered_one_the_row_lists(self):
        cases = ((f"{KEY}, realtime, openai-beta.realtime-v1", "realtime"), ("realtime", "realtime"),
                 (f"{KEY},openai-beta.realtime-v1", None), (None, None))
        for offer, selected in cases:
            with self.subTest(offer=offer):
                ws, got = self.upgrade(self.realtime, "?model=gpt-realtime", offer)
                ws.close()
                self.assertEqual(got, selected)
        ws, got = self.upgrade(PASS, offer="realtime")   # openai-responses lists none
        ws.close()
        self.assertIsNone(got)

    def test_no_row_lists_a_credential_and_the_key_is_never_logged(self):
        for row in vts.PROFILES.values():
            for name in row.http.socket.subprotocols if row.http and row.http.socket else ():
                self.assertEqual(vts._secret_spans(name), [], row.name)
                self.assertNotIn("key", name.lower(), row.name)
        google = "AIzaSyA1234567890abcdefghijklmnopqrstuv"
        ws, _ = self.upgrade(self.realtime, f"?model=gpt-realtime&key={google}", f"realtime, {KEY}")
        ws.close(1000)
        for _ in range(100):
            if any(self.realtime in line and "101 websocket" in line for line in self.logs):
                break
            threading.Event().wait(0.02)
        logged = "\n".join(self.logs)
        self.assertIn("101 websocket", logged)
        self.assertNotIn(google, logged)
        self.assertNotIn(KEY.split(".", 1)[1], logged)

    def test_a_query_on_the_upgrade_path(self):
        # OpenAI's WebSocket mode URL may carry ?model= (BerriAI/litellm#25437): the path still names the fixture
        events = events_of(os.path.join(RESPONSES, PASS + ".json"))
        ws, _ = self.upgrade(PASS, "?model=gpt-4.1")
        ws.send_text(CREATE)
        got = [json.loads(text) for text in ws.texts(lambda text: json.loads(text) == events[-1])]
        ws.close()
        self.assertEqual(got, events)


class Library(unittest.TestCase):
    def test_serving_gives_ws_url_and_chunkings_write_the_same_messages(self):
        path = os.path.join(RESPONSES, PASS + ".json")
        events = events_of(path)
        for chunking in ("byte", "event", "random:3"):
            with self.subTest(chunking), vts.serving(path, chunking=chunking) as served:
                url = served.ws_url(PASS)
                self.assertEqual(url, "ws" + served.base_url(PASS)[4:] + "/v1/responses")
                with wsclient.connect(url) as ws:
                    ws.send_text(CREATE)
                    got = [json.loads(text) for text in ws.texts(lambda text: json.loads(text) == events[-1])]
                    ws.close()
                self.assertEqual(got, events)
        with vts.serving(os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json")) as served:
            with self.assertRaises(ValueError):
                served.ws_url("valid-fragmented-single-call")


class Accept(unittest.TestCase):
    def test_rfc_6455s_own_example(self):   # RFC 6455 section 1.3
        self.assertEqual(vts.ws_accept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")


@unittest.skipUnless(importable("websockets"), "websockets is not installed (run with tests/adapters/.venv/bin/python)")
class RealClient(unittest.TestCase):
    """The `websockets` library's own client (the one openai-python's Responses and realtime clients use) reads
    every served openai-responses turn as our client does, under two chunkings, and sees a cut turn end 1006."""

    def test_websockets_reads_the_turns(self):
        from websockets.exceptions import ConnectionClosedError
        from websockets.sync.client import connect

        for chunking in ("whole", "byte"):
            with vts.serving(RESPONSES, chunking=chunking) as served:
                for prefix in served.prefixes if chunking == "whole" else served.prefixes[:8]:
                    fixture = served._served[prefix]
                    if "error" in fixture.fault:
                        continue
                    with self.subTest(chunking=chunking, fixture=prefix), connect(served.ws_url(prefix)) as ws:
                        ws.send(CREATE)
                        got = []
                        try:
                            while got != fixture.stream[:len(got)] or len(got) < len(fixture.stream):
                                got.append(json.loads(ws.recv(timeout=10)))
                            ws.ping(b"x").wait(10)
                        except ConnectionClosedError as closed:
                            self.assertTrue(fixture.fault.get("cut"))
                            self.assertIsNone(closed.rcvd)   # no close frame came
                        self.assertEqual(got, fixture.stream)


def socket_only(rules_change, fixture):
    """The fixture served by a row like openai-responses whose SocketRules `rules_change` replaces members of."""
    row = vts.PROFILES["openai-responses"]
    rules = row.http.socket
    members = {name: getattr(rules, name) for name in vts.SocketRules.__slots__}
    socket_rules = vts.SocketRules(**dict(members, **rules_change))
    http = vts.HttpRules(**{name: getattr(row.http, name) for name in vts.HttpRules.__slots__ if name != "socket"},
                         socket=socket_rules)
    served, _ = vts.serve_plan([os.path.join(RESPONSES, fixture + ".json")])
    served[fixture].row = vts.Profile(**{name: getattr(row, name) for name in vts.Profile.__slots__
                                         if name != "http"}, http=http)
    server = vts.make_server(served)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"{host}:{port}/{fixture}/v1/responses"


class RoomRules(unittest.TestCase):
    def test_only_opening_and_a_reply_that_fails(self):
        def reply(message, stream):
            if message.get("type") == "boom":
                raise KeyError("boom")
            return ([{"type": "ack"}], message.get("type") == "go")

        server, where = socket_only({"only": True, "reply": reply,
                                     "opening": lambda stream: [{"type": "session.created"}, "plain text"]}, PASS)
        try:
            import urllib.error
            import urllib.request

            with self.assertRaises(urllib.error.HTTPError) as caught:   # no HTTP surface: a POST is refused
                urllib.request.urlopen(urllib.request.Request("http://" + where, data=b"{}"), timeout=10)
            self.assertEqual((caught.exception.code, json.loads(caught.exception.read())["error"]["type"]),
                             (426, "upgrade_required"))
            with wsclient.connect("ws://" + where) as ws:
                self.assertEqual(ws.texts(lambda text: text == "plain text"), ['{"type":"session.created"}',
                                                                                "plain text"])
                ws.send_text('{"type": "wait"}')
                self.assertEqual(ws.receive()[1], b'{"type":"ack"}')
                ws.send_text('{"type": "go"}')
                events = [json.loads(text) for text in ws.texts(lambda text: '"response.completed"' in text)]
                self.assertEqual(events[1:], events_of(os.path.join(RESPONSES, PASS + ".json")))
                ws.send_text('{"type": "boom"}')
                self.assertIsNone(ws.receive())
                self.assertEqual(ws.close_code, 1011)
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    unittest.main()
