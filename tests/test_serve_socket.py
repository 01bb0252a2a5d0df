"""`serve` over a WebSocket (RFC 6455): a row's HttpRules.socket path answers an upgrade and plays the turn.

Every served row with SocketRules is played to a client of our own (tests/wsclient.py) and must deliver
exactly the fixture's payloads, one text message each; then the handshake's refusals, the framing edge
cases (an unmasked frame, an oversized one, fragments, pings, binary, a message that is not JSON), several
clients at once, one that never reads, and the fault fixtures (cut, error) over a socket.
"""

import json
import os
import socket
import threading
import unittest

import wsclient
from support import FIXTURES, vts

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

    def test_every_socket_row_plays_each_fixture_as_its_payloads(self):
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
            self.assertIn(f"GET /{PASS}/v1/responses 101 websocket: 1 messages received, "
                          f"{len(self.served[PASS].stream)} sent, the client closed 1000", self.logs)
        finally:
            type(self).setUpClass()


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

if __name__ == "__main__":
    unittest.main()
