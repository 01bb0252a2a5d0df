"""`serve`: the fixtures as a local provider, read back byte for byte, and its HTTP edges.

Every valid bundled fixture is served and fetched over real loopback HTTP; the body is read
back (SSE data lines, AWS event-stream frames, NDJSON lines, Gemini's JSON array) and must hold
exactly the fixture's payloads in order; passing fixtures are also read back with the project's
own `capture`. Then the refusals: unknown paths, wrong methods, missing or huge bodies, traversal.
"""

import itertools
import json
import os
import threading
import unittest
import urllib.error
import urllib.request
from types import MappingProxyType
from unittest import mock

from support import FIXTURES, ROOT, run_cli, run_process, SCRIPT, slow, vts


def start(paths):
    served, refused = vts.serve_plan(paths)
    server = vts.make_server(served)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}/", served, refused


def post(url, body=b"{}", method="POST", headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type"), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type"), error.read()


def api_path(profile):
    """The example API path of a row (what `conform` asks), without its leading slash."""
    return vts.PROFILES[profile].http.api_example.lstrip("/")


# The content type each row's body is served with; a row missing here fails by name.
CONTENT_TYPE = {"openai": "text/event-stream", "mistral": "text/event-stream", "anthropic": "text/event-stream",
                "openai-responses": "text/event-stream", "bedrock": "application/vnd.amazon.eventstream",
                "gemini": "text/event-stream", "cohere": "text/event-stream", "ollama": "application/x-ndjson",
                "gemini-interactions": "text/event-stream", "ag-ui": "text/event-stream",
                "openai-realtime": "application/x-ndjson", "gemini-live": "application/x-ndjson"}
# The rooms whose servers document no rate-limit or overload answer before a stream, and why.
NO_RETRYABLE_ERROR = {"ag-ui": "an agent server documents no rate limit: the quickstart's FastAPI route answers 422 or "
                               "500 before a stream, and a run that fails is RUN_ERROR over HTTP 200"}


def over_http(row):
    """Whether a row's stream is answered to a POST: not when its API is only spoken over a WebSocket
    (SocketRules.only; its fixtures are played over the socket in test_websocket and its room's tests)."""
    return not (row.http.socket is not None and row.http.socket.only)


HTTP_ROWS = {name: row for name, row in vts.PROFILES.items() if over_http(row)}


def read_back(kind, body):
    """The payloads of a served body of content type `kind`, parsed the plain way (no capture rules)."""
    if kind == "application/vnd.amazon.eventstream":
        return vts.eventstream_events(body)
    if kind == "application/x-ndjson":
        return [json.loads(line) for line in body.decode("ascii").split("\n") if line]
    if kind == "application/json":
        return json.loads(body)
    text = body.decode("ascii")
    events = [block for block in text.replace("\r\n", "\n").split("\n\n") if block]
    data = [line[len("data: "):] for block in events for line in block.split("\n") if line.startswith("data: ")]
    return [json.loads(item) for item in data if item != "[DONE]"]


def as_framed(kind, stream):
    """The payloads a body of content type `kind` holds: an AWS event-stream frame carries one member each."""
    if kind == "application/vnd.amazon.eventstream":
        return [e if isinstance(e, dict) and len(e) == 1 else {"event": e} for e in stream]
    return stream


def post_on_one_connection(port, count, statuses, timeout):
    """POST the openai fixture's path `count` times on one kept-alive connection; each status into statuses."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        for _ in range(count):
            connection.request("POST", "/" + OPENAI_PATH, body=b"{}")
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
    finally:
        connection.close()


class ServedBytes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.url, cls.served, cls.refused = start([FIXTURES])

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def test_every_valid_fixture_is_served_as_its_payloads(self):
        self.assertGreater(len(self.served), 400)
        self.assertEqual({p for p in (f.profile for f in self.served.values())}, set(vts.PROFILES))
        self.assertEqual([name for name in vts.PROFILES if name not in CONTENT_TYPE], [],
                         "rows of PROFILES with no content type in test_serve.CONTENT_TYPE")
        faults = 0
        for prefix, fixture in sorted(self.served.items()):
            if not over_http(fixture.row):
                continue
            with self.subTest(fixture=prefix):
                url = self.url + prefix + "/" + api_path(fixture.profile)
                error = fixture.row.http.error(fixture.fault.get("error", {}).get("kind"))
                for _ in range(fixture.fault.get("times", 1) if error else 0):   # its error first: see ServedFaults
                    self.assertEqual(post(url), (error.status, error.content_type, error.body))
                    faults += 1
                if error and "times" not in fixture.fault:
                    continue   # an error on every request: no stream is ever served
                status, kind, body = post(url)
                self.assertEqual(status, 200)
                self.assertEqual(kind, CONTENT_TYPE[fixture.profile])
                self.assertEqual(read_back(kind, body), as_framed(kind, fixture.stream))
        self.assertGreaterEqual(faults, 2 * len(HTTP_ROWS) - 1)   # each room's error-only and retry fixtures

    def test_passing_fixtures_read_back_through_capture(self):
        checked = 0
        for prefix, fixture in sorted(self.served.items()):
            with open(fixture.path, "rb") as handle:
                doc = json.loads(handle.read())
            if doc.get("expect", {}).get("status") != "pass" or not over_http(fixture.row):
                continue
            with self.subTest(fixture=prefix):
                for _ in range(fixture.fault.get("times", 0) + 1):   # a retry fixture's errors come first
                    status, _, body = post(self.url + prefix + "/" + api_path(fixture.profile))
                    if status == 200:
                        break
                envelope, _ = vts.sse_to_envelope(body, fixture.profile, doc["tool_schemas"], redact=False)
                self.assertEqual(envelope[vts.STREAM_KEY[fixture.profile]], fixture.stream)
                report = vts.validate_envelope(dict(envelope, request=doc["request"]) if "request" in doc
                                               else envelope)
                self.assertEqual([c["arguments"] for c in report["calls"]],
                                 [c["arguments"] for c in doc["expect"]["calls"]])
                checked += 1
        self.assertGreater(checked, 90)

    def test_gemini_paths_and_its_json_array_body(self):
        prefix = next(p for p, f in sorted(self.served.items()) if f.profile == "gemini")
        stream = self.served[prefix].stream
        for path in ("v1beta/models/gemini-3-pro:streamGenerateContent",
                     "v1/projects/p/locations/us-central1/publishers/google/models/gemini-3-pro:streamGenerateContent"):
            status, kind, body = post(self.url + prefix + "/" + path)
            self.assertEqual((status, kind, json.loads(body)), (200, "application/json", stream))
            status, kind, body = post(self.url + prefix + "/" + path + "?alt=sse")
            self.assertEqual((status, kind), (200, "text/event-stream"))
            self.assertTrue(body.endswith(b"\r\n\r\n"))

    def test_invalid_envelopes_are_listed_not_served(self):
        names = {os.path.relpath(path, FIXTURES) for path, _ in self.refused}
        self.assertIn(os.path.join("envelope", "chunks-on-anthropic.json"), names)
        self.assertNotIn("envelope/chunks-on-anthropic", self.served)

    def test_refusals(self):
        prefix = "openai/valid-fragmented-single-call"
        cases = [
            (self.url + prefix + "/v1/messages", b"{}", "POST", 404),            # another provider's path
            (self.url + "no/such/fixture/v1/chat/completions", b"{}", "POST", 404),
            (self.url + prefix + "/v1/chat/completions", None, "GET", 405),
            (self.url + prefix + "/v1/chat/completions", b"{}", "DELETE", 405),
            (self.url + "../../etc/passwd", b"{}", "POST", 404),
            (self.url + "%2e%2e/%2e%2e/etc/passwd", b"{}", "POST", 404),
            (self.url + prefix + "/../../../README.md", b"{}", "POST", 404),
            (self.url + prefix + ".json/v1/chat/completions", b"{}", "POST", 404),
        ]
        for url, body, method, want in cases:
            with self.subTest(url=url, method=method):
                status, kind, text = post(url, body, method)
                self.assertEqual(status, want)
                self.assertEqual(kind, "application/json")
                self.assertIn("message", json.loads(text)["error"])
        status, _, text = post(self.url + prefix + "/v1/chat/completions", b"x" * (vts.SERVE_MAX_REQUEST_BYTES + 1))
        self.assertEqual((status, json.loads(text)["error"]["type"]), (413, "request_too_large"))

    def test_requests_the_library_refuses_get_json_too(self):
        import socket

        host, port = self.server.server_address[:2]
        path = b"/openai/valid-fragmented-single-call/v1/chat/completions"
        for request, status in ((b"FOO " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"405"),
                                (b"GARBAGE\r\n\r\n", b"400"),
                                (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70000 + b"\r\n\r\n", b"431"),
                                (b"POST " + path + b" HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 9\r\n\r\n",
                                 b"400"),
                                (b"POST " + path + b" HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked"
                                 b"\r\n\r\n{}", b"400")):
            with self.subTest(request=request[:40]):
                with socket.create_connection((host, port), timeout=10) as sock:
                    sock.sendall(request)
                    answer = b""
                    while True:
                        data = sock.recv(65536)
                        if not data:
                            break
                        answer += data
                head, _, body = answer.partition(b"\r\n\r\n")
                self.assertTrue(head.startswith(b"HTTP/1."), head[:40])
                self.assertEqual(head.split(b" ")[1], status)
                self.assertIn(b"application/json", head)
                self.assertIn("message", json.loads(body)["error"])

    def test_a_bedrock_model_arn_in_the_path(self):
        prefix = next(p for p, f in sorted(self.served.items()) if f.profile == "bedrock")
        arn = "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc123"
        status, kind, _ = post(self.url + prefix + f"/model/{arn}/converse-stream")
        self.assertEqual((status, kind), (200, "application/vnd.amazon.eventstream"))
        status, _, _ = post(self.url + prefix + "/" + "a/" * 3000)
        self.assertEqual(status, 404)

    def test_concurrent_requests(self):
        prefixes = sorted(p for p, f in self.served.items() if "error" not in f.fault and over_http(f.row))[:40]
        results = {}

        def fetch(prefix):
            results[prefix] = post(self.url + prefix + "/" + api_path(self.served[prefix].profile))

        threads = [threading.Thread(target=fetch, args=(p,)) for p in prefixes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        self.assertEqual(len(results), len(prefixes))
        for prefix in prefixes:
            _, kind, body = results[prefix]
            self.assertEqual(read_back(kind, body), as_framed(kind, self.served[prefix].stream))


def start_with(paths, **options):
    """A server over `paths` with make_server's keyword options, polling for shutdown often."""
    served, _ = vts.serve_plan(paths)
    server = vts.make_server(served, **options)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def stop(server):
    server.shutdown()
    server.server_close()


def wait_for(condition, seconds=5.0):
    import time

    until = time.monotonic() + seconds
    while not condition() and time.monotonic() < until:
        time.sleep(0.01)
    return condition()


def answer_of(sock, seconds):
    """What the server sends on `sock` until it closes it or `seconds` pass."""
    import socket
    import time

    data, until = b"", time.monotonic() + seconds
    while time.monotonic() < until:
        sock.settimeout(max(0.01, until - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


OPENAI = os.path.join(FIXTURES, "openai")
OPENAI_PATH = "valid-fragmented-single-call/v1/chat/completions"


class Bounds(unittest.TestCase):
    """What one client (or many) can hold: a connection, a thread, a copy of a body, the log."""

    def test_a_trickling_request_is_answered_408_at_its_deadline(self):
        import socket
        import time

        server, _ = start_with([OPENAI], request_seconds=0.5)
        try:
            request = (b"POST /" + OPENAI_PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                       + b"X-Slow: " + b"a" * 200)
            with socket.create_connection(server.server_address[:2], timeout=5) as sock:
                began = time.monotonic()
                answer = b""
                for byte in request:   # a byte every 50 ms: each read gets one, the request never ends
                    try:
                        sock.sendall(bytes([byte]))
                    except OSError:
                        break
                    answer += answer_of(sock, 0.05)
                    if answer or time.monotonic() - began > 5:
                        break
                answer += answer_of(sock, 1)
                took = time.monotonic() - began
            with socket.create_connection(server.server_address[:2], timeout=5) as idle:   # sends nothing
                began = time.monotonic()
                self.assertEqual(answer_of(idle, 5), b"")   # closed at the deadline, no answer
                idle_took = time.monotonic() - began
        finally:
            stop(server)
        head, _, body = answer.partition(b"\r\n\r\n")
        self.assertRegex(head, rb"^HTTP/1\.[01] 408 ")
        self.assertEqual(json.loads(body)["error"]["type"], "request_timeout")
        self.assertLess(took, 3)
        self.assertLess(idle_took, 3)

    def test_connections_over_the_cap_are_answered_503_at_once(self):
        import socket
        import time

        server, url = start_with([OPENAI], max_connections=2, request_seconds=10)
        held = [socket.create_connection(server.server_address[:2]) for _ in range(2)]
        try:
            self.assertTrue(wait_for(lambda: server.connections == 2))
            began = time.monotonic()
            results = [post(url + OPENAI_PATH) for _ in range(10)]
            took = time.monotonic() - began
            self.assertEqual([(status, json.loads(body)["error"]["type"]) for status, _, body in results],
                             [(503, "overloaded")] * 10)
            self.assertLess(took, 5)
            self.assertEqual(server.turned_away, 10)
            for sock in held:
                sock.close()
            self.assertTrue(wait_for(lambda: server.connections == 0))
            self.assertEqual(post(url + OPENAI_PATH)[0], 200)
        finally:
            for sock in held:
                sock.close()
            stop(server)

    def test_no_descriptor_left_pauses_accepting_instead_of_spinning(self):
        import errno
        import socket
        import time

        class NoDescriptor:
            def __init__(self, real):
                self.real, self.accepts, self.failing = real, 0, True

            def accept(self):
                self.accepts += 1
                if self.failing:
                    raise OSError(errno.EMFILE, "Too many open files")
                return self.real.accept()

            def __getattr__(self, name):
                return getattr(self.real, name)

        served, _ = vts.serve_plan([OPENAI])
        server = vts.make_server(served)
        listening = server.socket = NoDescriptor(server.socket)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        waiting = socket.create_connection(server.server_address[:2])   # the listening socket stays readable
        try:
            time.sleep(0.4)
            tries = listening.accepts
            listening.failing = False
            status, _, _ = post(f"http://127.0.0.1:{server.server_address[1]}/" + OPENAI_PATH)
        finally:
            waiting.close()
            stop(server)
        self.assertLessEqual(tries, 10)   # pauses of 0.05, 0.1, 0.2, 0.4 s...: a spinning loop tries thousands
        self.assertGreaterEqual(tries, 2)
        self.assertEqual(server.accept_pauses, tries)
        self.assertEqual(status, 200)

    def test_a_signal_while_a_connection_starts_stops_the_server(self):
        import socket
        from unittest import mock

        served, _ = vts.serve_plan([OPENAI])
        server = vts.make_server(served, max_connections=2)
        start = threading.Thread.start

        def start_then_interrupted(thread):   # SIGTERM (KeyboardInterrupt) once the thread already runs
            start(thread)
            thread.join(5)
            raise KeyboardInterrupt

        theirs = socket.create_connection(server.server_address[:2])
        ours, address = server.socket.accept()
        theirs.sendall(b"POST /" + OPENAI_PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        theirs.shutdown(socket.SHUT_WR)
        try:
            with mock.patch.object(threading.Thread, "start", start_then_interrupted):
                with self.assertRaises(KeyboardInterrupt):   # not lost (nor turned into another error)
                    server.process_request(ours, address)
            self.assertTrue(answer_of(theirs, 5).startswith(b"HTTP/1.1 200 "))
        finally:
            theirs.close()
            server.server_close()
        self.assertEqual(server.connections, 0)
        self.assertTrue(all(server.slots.acquire(blocking=False) for _ in range(2)))   # each slot back, once

    def test_each_body_is_built_once_and_shared_by_every_answer(self):
        served, _ = vts.serve_plan([FIXTURES])
        bodies = vts._ServeBodies()
        openai = "openai/" + OPENAI_PATH
        first = vts._serve_answer(served, "POST", "/" + openai, "2", bodies)
        second = vts._serve_answer(served, "POST", "/" + openai + "?x=1", "0", bodies)
        self.assertEqual(first[0], 200)
        self.assertIs(first[2], second[2])
        gemini = next(p for p, f in sorted(served.items()) if f.profile == "gemini") + \
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
        sse = [vts._serve_answer(served, "POST", "/" + gemini + query, "2", bodies)[2]
               for query in ("?alt=sse", "?alt=sse&key=k", "?key=k&alt=sse")]
        array = [vts._serve_answer(served, "POST", "/" + gemini + query, "2", bodies)[2]
                 for query in ("", "?key=k", "?alt=json")]
        self.assertTrue(all(body is sse[0] for body in sse) and all(body is array[0] for body in array))
        self.assertIsNot(sse[0], array[0])
        self.assertEqual(bodies.builds, 3)   # one openai body, gemini's two framings

        server, url = start_with([OPENAI])
        try:
            results = [post(url + OPENAI_PATH) for _ in range(5)]
        finally:
            stop(server)
        self.assertEqual({(status, body) for status, _, body in results}, {(200, first[2])})
        self.assertEqual((server.bodies.builds, server.bodies.requests), (1, {OPENAI_PATH.split("/")[0]: 5}))

    def test_the_last_request_answered_with_a_stream_is_kept_when_asked(self):
        prefix = OPENAI_PATH.split("/")[0]
        server, url = start_with([OPENAI], keep_requests=True)
        try:
            for body in (b'{"first": 1}', b'{"second": 2}'):
                self.assertEqual(post(url + OPENAI_PATH, body)[0], 200)
            self.assertEqual(post(url + prefix + "/v1/nowhere", b'{"third": 3}')[0], 404)   # no stream: not kept
            self.assertEqual(post(url + OPENAI_PATH, b"x" * (vts.SERVE_MAX_REQUEST_BYTES + 1))[0], 413)
        finally:
            stop(server)
        self.assertEqual(server.bodies.sent, {prefix: b'{"second": 2}'})
        server, url = start_with([OPENAI])   # by default nothing is kept
        try:
            self.assertEqual(post(url + OPENAI_PATH, b'{"first": 1}')[0], 200)
        finally:
            stop(server)
        self.assertEqual(server.bodies.sent, {})

    def test_a_log_sink_that_blocks_never_holds_an_answer(self):

        entered, release, lines = threading.Event(), threading.Event(), []

        def sink(line):   # standard output nobody reads
            entered.set()
            release.wait(20)
            lines.append(line)

        served, _ = vts.serve_plan([OPENAI])
        server = vts.make_server(served, log=sink)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        statuses = []
        try:   # one connection: a handler held by its log line would answer no more (until the sink's 20 s)
            post_on_one_connection(server.server_address[1], 30, statuses, timeout=10)
        finally:
            release.set()
            with mock.patch.object(vts, "_SERVE_LOG_CLOSE_SECONDS", 10.0):   # a busy machine: time to write 30 lines
                stop(server)
        self.assertEqual(statuses, [200] * 30)
        self.assertEqual((server.unlogged, len(lines)), (0, 30))

    def test_lines_past_the_log_queue_are_dropped_and_counted(self):
        import http.client

        entered, release, lines = threading.Event(), threading.Event(), []

        def sink(line):
            entered.set()
            release.wait(20)
            lines.append(line)

        server, _ = start_with([OPENAI], log=sink, log_lines=8)
        try:
            connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
            for number in range(50):
                connection.request("POST", "/" + OPENAI_PATH, body=b"{}")
                response = connection.getresponse()
                response.read()
                self.assertEqual(response.status, 200)
                if number == 0:
                    self.assertTrue(entered.wait(5))   # the writer holds the first line; 8 more fit
            connection.close()
            self.assertTrue(wait_for(lambda: server.connections == 0))
        finally:
            release.set()
            stop(server)
        self.assertEqual(lines[:2], [f"POST /{OPENAI_PATH} 200",
                                     "41 request log lines dropped: the log was not read fast enough"])
        self.assertEqual(lines[2:], [f"POST /{OPENAI_PATH} 200"] * 8)
        self.assertEqual(server.unlogged, 0)


class ClientsThatGoAway(unittest.TestCase):
    def test_a_reset_connection_is_one_log_line_never_a_traceback(self):
        import contextlib
        import io
        import socket
        import struct
        import time

        served, _ = vts.serve_plan([os.path.join(FIXTURES, "openai")])
        lines = []
        server = vts.make_server(served, log=lines.append)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                for _ in range(10):
                    sock = socket.create_connection(server.server_address[:2])
                    sock.sendall(b"POST /valid-fragmented-single-call/v1/chat/completions HTTP/1.1\r\n"
                                 b"Host: x\r\nContent-Length: 2\r\n\r\n{}")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # reset
                    sock.close()
                time.sleep(0.3)
                status, _, _ = post(f"http://127.0.0.1:{server.server_address[1]}/"
                                    "valid-fragmented-single-call/v1/chat/completions")
        finally:
            server.shutdown()
            server.server_close()
        self.assertEqual((err.getvalue(), status), ("", 200))
        self.assertTrue(all(line.startswith(("connection from 127.0.0.1 ended early", "POST ")) for line in lines))


class Plan(unittest.TestCase):
    def test_a_single_file_is_served_under_its_name(self):
        path = os.path.join(FIXTURES, "cohere", "pass-parallel-calls-one-after-another.json")
        served, refused = vts.serve_plan([path])
        self.assertEqual((list(served), refused), (["pass-parallel-calls-one-after-another"], []))
        with self.assertRaises(vts.UsageError):
            vts.serve_plan([os.path.join(FIXTURES, "no-such.json")])

    def test_a_taken_prefix_is_refused(self):
        path = os.path.join(FIXTURES, "cohere", "pass-parallel-calls-one-after-another.json")
        served, refused = vts.serve_plan([path, path])
        self.assertEqual(len(served), 1)
        self.assertIn("taken", refused[0][1])


    def test_a_fixture_beside_a_folder_of_its_name_is_reached_through_its_api_path(self):
        # found by the issue-32 review: a.json beside a/v1.json, the longest prefix "a/v1" was taken and its
        # path "/chat/completions" answered 404, so an adapter of a.json was not-requested
        import shutil
        import tempfile

        source = os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json")
        folder = tempfile.mkdtemp(prefix="vts-nest-")
        self.addCleanup(shutil.rmtree, folder, True)
        os.mkdir(os.path.join(folder, "a"))
        shutil.copy(source, os.path.join(folder, "a.json"))
        shutil.copy(source, os.path.join(folder, "a", "v1.json"))
        served, refused = vts.serve_plan([folder])
        self.assertEqual((sorted(served), refused), (["a", "a/v1"], []))
        for path, prefix in (("/a/v1/chat/completions", "a"), ("/a/v1/v1/chat/completions", "a/v1")):
            with self.subTest(path=path):
                self.assertEqual(vts._serve_route(served, path)[0].prefix, prefix)
                self.assertEqual(vts._serve_answer(served, "POST", path, "2")[0], 200)
        self.assertEqual(vts._serve_answer(served, "POST", "/a/v1/messages", "2")[0], 404)


class Command(unittest.TestCase):
    def test_the_first_line_names_the_url_and_requests_are_logged(self):
        import subprocess
        import sys

        path = os.path.join(FIXTURES, "ollama", "pass-call-line-then-done-line.json")
        process = subprocess.Popen([sys.executable, SCRIPT, "serve", path, "--port", "0"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        try:
            first = process.stdout.readline().decode()
            self.assertRegex(first, r"^serving 1 fixtures at http://127\.0\.0\.1:\d+/\n$")
            url = first.split()[-1]
            status, kind, body = post(url + "pass-call-line-then-done-line/api/chat")
            self.assertEqual((status, kind), (200, "application/x-ndjson"))
            self.assertEqual(process.stdout.readline().decode(), "POST /pass-call-line-then-done-line/api/chat 200\n")
        finally:
            process.terminate()
            out, err = process.communicate(timeout=10)
        self.assertEqual(process.returncode, 0, err)
        self.assertEqual(err, b"")

    def test_another_host_is_said(self):
        import subprocess
        import sys

        path = os.path.join(FIXTURES, "ollama", "pass-call-line-then-done-line.json")
        process = subprocess.Popen([sys.executable, SCRIPT, "serve", path, "--host", "0.0.0.0", "--quiet"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                   env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        try:
            self.assertRegex(process.stdout.readline().decode(), r"^serving 1 fixtures at http://0\.0\.0\.0:\d+/")
        finally:
            process.terminate()
            _, err = process.communicate(timeout=10)
        self.assertIn("not loopback", err.decode())

    @slow("a real process answering 3,000 requests")
    def test_standard_output_nobody_reads_never_stops_the_answers(self):
        import re
        import subprocess
        import sys
        import time

        process = subprocess.Popen([sys.executable, SCRIPT, "serve", OPENAI], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        statuses = []
        try:
            port = int(process.stdout.readline().decode().rsplit(":", 1)[1].strip("/\n"))
            # ~60 bytes a line: a 64 KiB pipe is full after about 1,100
            post_on_one_connection(port, 3000, statuses, timeout=10)
        finally:
            # found by review (issue 30): a second SIGTERM (a runner signals the process and its group)
            # came while closing waited for the log, and made it exit 3 with the count unsaid
            process.terminate()
            time.sleep(0.2)
            if process.poll() is None:
                process.terminate()
            out, err = process.communicate(timeout=20)
        self.assertEqual(statuses, [200] * 3000)
        self.assertEqual(process.returncode, 0, err)
        out, err = out.decode(), err.decode()
        logged = out.count(f"POST /{OPENAI_PATH} 200\n")
        dropped = sum(int(n) for n in re.findall(r"^(\d+) request log lines dropped: the log was not read fast "
                                                 r"enough$", out, re.M))
        unwritten = sum(int(n) for n in re.findall(r"serve: (\d+) request log lines were not written", err))
        self.assertGreater(dropped + unwritten, 0)
        self.assertIn(logged + dropped + unwritten, (2999, 3000))   # the one being written at exit may be lost
        self.assertNotIn("Traceback", err)

    def test_the_callers_signal_handlers_are_back_when_it_returns(self):
        # in this process: SIGTERM stops serve, which then puts back the handlers it found
        import signal
        import time

        def caller(signum, frame):
            return None

        numbers = (signal.SIGTERM, signal.SIGINT)
        saved = {number: signal.signal(number, caller) for number in numbers}

        def stop_it():
            until = time.monotonic() + 20
            while signal.getsignal(signal.SIGTERM) is caller and time.monotonic() < until:
                time.sleep(0.01)
            # serve's own handler now (else, past the wait, Ctrl-C's default ends the run all the same)
            os.kill(os.getpid(), signal.SIGTERM if signal.getsignal(signal.SIGTERM) is not caller else signal.SIGINT)

        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)   # the fallback above must end the run
            numbers_before = {number: signal.getsignal(number) for number in numbers}
            threading.Thread(target=stop_it, daemon=True).start()
            code, out, err = run_cli("serve", "--quiet", os.path.join(FIXTURES, "openai"))
            self.assertEqual((code, err), (0, ""))
            self.assertIn("serving ", out)
            self.assertEqual({number: signal.getsignal(number) for number in numbers}, numbers_before)
        finally:
            for number, handler in saved.items():
                signal.signal(number, handler)

    def test_nothing_to_serve_is_an_error(self):
        code, out, err = run_process("serve", os.path.join(FIXTURES, "envelope"), timeout=30)
        self.assertEqual((code, out), (3, ""))
        self.assertIn("no fixture to serve", err)



def unserved(name):
    """PROFILES with the row of `name` replaced by a stand-in row that has no http rules (a room that is
    not served), as a context manager."""
    return mock.patch.object(vts, "PROFILES", MappingProxyType(dict(vts.PROFILES,
                                                                    **{name: without_http(vts.PROFILES[name])})))


def without_http(row):
    """A stand-in of `row` with no http rules."""
    return vts.Profile(**{field: getattr(row, field) for field in row.__slots__ if field != "http"})


CUT_FIXTURE = "missing-terminal-connection-closed-mid-call"   # each room's cut-off fixture, by name
# what a room's SSE body ends with after its last payload, which a cut body leaves out (none: nothing)
SSE_TRAILER = {"openai": b"data: [DONE]\n\n", "mistral": b"data: [DONE]\n\n", "cohere": b"data: [DONE]\n\n",
               "gemini-interactions": b"event: done\ndata: [DONE]\n\n"}


def raw_post(port, path):
    """(status, [(header, value)], body) of one POST read to the connection's end, byte for byte."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", path, body=b"{}")
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


def fault_fixture(folder, name, row, stream, block):
    """Write fixtures/<name>.json of row's profile with `stream` and the "serve" block; its path."""
    path = os.path.join(folder, name + ".json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"profile": row.name, "tool_schemas": {}, row.stream_key: stream, "serve": block}, handle)
    return path


class ServedFaults(unittest.TestCase):
    """A fixture's "serve" block: each room's own errors answered exactly, the retry sequence, the cut."""

    def setUp(self):
        import tempfile

        self.folder = tempfile.mkdtemp(prefix="vts-faults-")
        self.addCleanup(__import__("shutil").rmtree, self.folder, True)

    def test_every_rooms_errors_are_answered_exactly(self):
        answered = 0
        for name, row in HTTP_ROWS.items():
            self.assertTrue(row.http.errors, f"the row {name!r} answers no error: give its HttpRules errors")
            self.assertTrue(name in NO_RETRYABLE_ERROR or any(error.status in (429, 503, 529)
                                                              for error in row.http.errors), name)
            for error in row.http.errors:
                fault_fixture(self.folder, f"{name}-{error.kind}", row, [],
                              {"error": {"status": error.status, "kind": error.kind}})
        server, _ = start_with([self.folder])
        try:
            port = server.server_address[1]
            for name, row in HTTP_ROWS.items():   # a socket-only row answers them at the upgrade (test_websocket)
                for error in row.http.errors:
                    with self.subTest(profile=name, kind=error.kind):
                        for _ in range(2):   # every request, without "times"
                            status, headers, body = raw_post(port, f"/{name}-{error.kind}{row.http.api_example}")
                            self.assertEqual((status, body), (error.status, error.body))
                            got = [(key.lower(), value) for key, value in headers]
                            self.assertIn(("content-type", error.content_type), got)
                            self.assertIn(("content-length", str(len(error.body))), got)
                            self.assertIn(("connection", "close"), got)
                            for header in error.headers:
                                self.assertIn((header[0].lower(), header[1]), got)
                            answered += 1
        finally:
            stop(server)
        self.assertEqual(server.bodies.builds, 0)   # no stream was ever built
        self.assertEqual(answered, 2 * sum(len(row.http.errors) for row in HTTP_ROWS.values()))

    def test_the_providers_own_error_shapes(self):
        def body(profile, kind):
            return json.loads(vts.PROFILES[profile].http.error(kind).body)

        def header(profile, kind, name):
            return dict(vts.PROFILES[profile].http.error(kind).headers).get(name)

        self.assertEqual(set(body("openai", "rate_limit")["error"]), {"message", "type", "param", "code"})
        self.assertEqual(header("openai", "rate_limit", "retry-after"), "1")
        self.assertEqual(body("anthropic", "overloaded")["error"]["type"], "overloaded_error")
        self.assertEqual(vts.PROFILES["anthropic"].http.error("overloaded").status, 529)
        self.assertEqual(body("gemini", "rate_limit")["error"]["status"], "RESOURCE_EXHAUSTED")
        self.assertEqual(header("bedrock", "rate_limit", "x-amzn-ErrorType").split(":")[0], "ThrottlingException")
        self.assertEqual(set(body("cohere", "rate_limit")), {"id", "message"})
        self.assertEqual(set(body("ollama", "overloaded")), {"error"})
        self.assertEqual(body("mistral", "rate_limit")["type"], "rate_limited")

    def test_the_retry_sequence(self):
        for name, row in HTTP_ROWS.items():
            error = row.http.errors[0]
            fault_fixture(self.folder, name, row, [{}], {"error": {"status": error.status, "kind": error.kind},
                                                         "times": 2})
        served, refused = vts.serve_plan([self.folder])
        self.assertEqual(refused, [])
        asked = []
        server = vts.make_server(served, on_stream=asked.append)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        try:
            port = server.server_address[1]
            for name, row in HTTP_ROWS.items():
                with self.subTest(profile=name):
                    error, path = row.http.errors[0], f"/{name}{row.http.api_example}"
                    statuses = [raw_post(port, path)[0] for _ in range(4)]
                    self.assertEqual(statuses, [error.status, error.status, 200, 200])
                    self.assertEqual(raw_post(port, path)[2], row.http.frame([{}], "alt=sse")[1])
        finally:
            stop(server)
        self.assertEqual(server.bodies.errors, {name: 5 for name in HTTP_ROWS})
        self.assertEqual(server.bodies.requests, {name: 3 for name in HTTP_ROWS})
        self.assertEqual(len(asked), 5 * len(HTTP_ROWS))   # conform hears of the errors too: requested

    def test_without_the_bodies_cache_an_error_answers_once_more(self):
        row = vts.PROFILES["anthropic"]
        fault_fixture(self.folder, "f", row, [], {"error": {"status": 529, "kind": "overloaded"}, "times": 1})
        served, _ = vts.serve_plan([self.folder])
        status, kind, body, headers = vts._serve_answer(served, "POST", "/f/v1/messages", "2")
        self.assertEqual((status, kind, body, headers["request-id"]),
                         (529, "application/json", row.http.error("overloaded").body, "req_vts_overloaded"))

    def test_a_cut_stream_ends_without_its_terminal_and_closes(self):
        served, _ = vts.serve_plan([FIXTURES])
        server = vts.make_server(served)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        try:
            port = server.server_address[1]
            for name, row in HTTP_ROWS.items():
                fixture = served.get(f"{name}/{CUT_FIXTURE}")
                self.assertIsNotNone(fixture, f"fixtures/{name}/{CUT_FIXTURE}.json: each room has a cut fixture")
                self.assertEqual(fixture.fault, {"cut": True})
                if not over_http(row):
                    continue   # cut over its socket: test_websocket
                for query in ("", "?alt=sse"):
                    with self.subTest(profile=name, query=query):
                        path = f"/{name}/{CUT_FIXTURE}{row.http.api_example.split('?')[0]}{query}"
                        status, headers, body = raw_post(port, path)
                        got = {key.lower(): value for key, value in headers}
                        self.assertEqual(status, 200)
                        self.assertNotIn("content-length", got)
                        self.assertEqual(got["connection"], "close")
                        kind, whole = row.http.frame(fixture.stream, query[1:])
                        self.assertEqual(got["content-type"], kind)
                        self.assertEqual(body, (row.http.cut_frame or row.http.frame)(fixture.stream, query[1:])[1])
                        self.assertTrue(whole.startswith(body))
                        self.assertEqual(whole[len(body):], {"text/event-stream": SSE_TRAILER.get(name, b""),
                                                             "application/json": b"]"}.get(kind, b""))
                        self.assertEqual(read_back(kind, body) if kind != "application/json" else
                                         json.loads(body + b"]"), as_framed(kind, fixture.stream))
        finally:
            stop(server)

    def test_a_fault_fixture_with_a_bad_serve_block_is_not_served(self):
        row = vts.PROFILES["openai"]
        fault_fixture(self.folder, "bad", row, [], {"error": {"status": 529, "kind": "overloaded"}})
        served, refused = vts.serve_plan([self.folder])
        self.assertEqual(served, {})
        self.assertEqual([why for _, why in refused],
                         ['not a valid envelope (invalid_fixture: "serve": "error" kind "overloaded" is answered with '
                          'status 503 on profile openai, not 529)'])


class NotServed(unittest.TestCase):
    """A row without http rules (http=None) is a room that is not served: serve says so, never an error."""

    FIXTURE = os.path.join(FIXTURES, "ollama", "pass-call-line-then-done-line.json")

    def test_serve_plan_leaves_its_fixtures_out_and_says_why(self):
        with unserved("ollama"):
            served, refused = vts.serve_plan([self.FIXTURE])
        self.assertEqual(served, {})
        self.assertEqual(refused, [(self.FIXTURE, "its profile ollama is not served (its row has no http rules)")])

    def test_the_command_says_not_served(self):
        with unserved("ollama"):
            code, out, err = run_cli("serve", self.FIXTURE)
        self.assertEqual((code, out), (3, ""))
        self.assertIn("serve: not served: ", err)
        self.assertIn("its profile ollama is not served", err)
        self.assertIn("no fixture to serve", err)
        self.assertNotIn("internal error", err)

    def test_a_request_for_a_fixture_of_it_is_not_found(self):
        served, _ = vts.serve_plan([self.FIXTURE])
        for fixture in served.values():   # the row a fixture carries is the one its request is answered by
            fixture.row = without_http(fixture.row)
        status, kind, body, _ = vts._serve_answer(served, "POST", "/pass-call-line-then-done-line/api/chat", "2")
        self.assertEqual((status, kind), (404, "application/json"))
        self.assertIn(b"not_found", body)



def raw_answers(url, paths):
    """The bodies answered to POSTs of each path, in order, over one kept-alive raw socket (headers
    parsed by hand: nothing between the socket and the bytes)."""
    import socket

    host, _, port = url.split("://", 1)[1].rstrip("/").rpartition(":")
    bodies = []
    with socket.create_connection((host, int(port)), 10) as sock:
        pending = b""
        for path in paths:
            sock.sendall(f"POST /{path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{{}}".encode("ascii"))
            while b"\r\n\r\n" not in pending:
                pending += sock.recv(65536)
            head, _, pending = pending.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 "), head[:200]
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(pending) < length:
                pending += sock.recv(65536)
            bodies.append(pending[:length])
            pending = pending[length:]
    return bodies


def stream_paths(served):
    """(URL path, content type, the body as built whole) of each fixture's stream, Gemini's both ways; not
    of a fixture whose "serve" block plays a fault (ServedFaults reads those)."""
    found = []
    for prefix, fixture in sorted(served.items()):
        if fixture.fault or not over_http(fixture.row):
            continue
        for query in ("", "?alt=sse") if "alt" in fixture.row.http.api_example else ("",):
            path = prefix + fixture.row.http.api_example.split("?")[0] + query
            found.append((path, *fixture.row.http.frame(fixture.stream, query.lstrip("?"))))
    return found


def answers_under(served, transport):
    """(URL path, content type, body built whole) of each fixture's stream, and the bytes answered for each
    under transport, read back over one raw connection."""
    server, url = serving_with(served, transport)
    try:
        streams = stream_paths(served)
        return streams, raw_answers(url, [path for path, _, _ in streams])
    finally:
        server.shutdown()
        server.server_close()


def all_answered(server):
    """Wait until every connection the server took has been answered and closed (each holds one of its slots
    until its thread ends, on_write's last call included): the client has the last byte before that call."""
    taken = [server.slots.acquire(timeout=30) for _ in range(vts.SERVE_MAX_CONNECTIONS)]
    for _ in filter(None, taken):
        server.slots.release()


def serving_with(served, transport, on_write=None):
    server = vts.make_server(served, transport=transport, on_write=on_write)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}/"


class Chunking(unittest.TestCase):
    """--chunking changes where the writes of a stream end, never its bytes."""

    @classmethod
    def setUpClass(cls):
        cls.served, _ = vts.serve_plan([FIXTURES])
        cls.streams = stream_paths(cls.served)

    @slow("every fixture served under two chunkings")
    def test_every_fixture_is_the_same_bytes_under_every_chunking(self):
        paths = [path for path, _, _ in self.streams]
        whole = [body for _, _, body in self.streams]
        for chunking in ("event", "random:1"):   # whole: ServedBytes; byte: one fixture per frame below (CPU)
            server, url = serving_with(self.served, vts.serve_transport(chunking))
            try:
                self.assertEqual(raw_answers(url, paths), whole, chunking)
            finally:
                server.shutdown()
                server.server_close()
        for chunking in ("event", "random:SEED"):   # the writes cover every body once, in order (byte: below)
            for _, kind, body in self.streams:
                writes = vts.serve_writes(body, kind, vts.serve_chunking(chunking.replace("SEED", "9")))
                self.assertEqual(b"".join(body[start:end] for start, end in writes), body)

    def test_byte_chunking_writes_each_byte_alone_on_a_socket_without_nagle(self):
        import socket

        kinds = {}
        for path, kind, body in self.streams:   # one stream of each frame (SSE, CRLF SSE, array, NDJSON, frames)
            kinds.setdefault((kind, kind == "text/event-stream" and b"\r\n" in body), (path, body))
        writes, nodelay = [], set()

        def record(sock, start, end):
            writes.append(end - start)
            nodelay.add(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        server, url = serving_with(self.served, vts.serve_transport("byte"), record)
        try:
            paths, bodies = zip(*kinds.values())
            self.assertEqual(raw_answers(url, paths), list(bodies))
            all_answered(server)
        finally:
            server.shutdown()
            server.server_close()
        self.assertEqual(len(kinds), 5, sorted(kinds))
        self.assertEqual((set(writes), len(writes), nodelay), ({1}, sum(map(len, bodies)), {1}))

    def test_a_kept_alive_client_that_sends_headers_and_body_apart_is_answered_request_after_request(self):
        # issue 34: such a client (Nagle on) holds its body until its headers are acknowledged; each answer is
        # still its body's bytes, on one connection whose accepted socket has Nagle's algorithm off
        import socket

        picked = {}
        for path, kind, body in self.streams:   # a stream of each frame, and a second openai one
            picked.setdefault(kind, (path, body))
        picked["again"] = next((p, b) for p, k, b in self.streams if k == "text/event-stream" and
                               p != picked["text/event-stream"][0])
        paths, bodies = zip(*picked.values())
        for chunking in ("whole", "random:3"):
            writes = []   # (the client's address, Nagle off) per write of a body

            def record(sock, start, end, writes=writes):
                writes.append((sock.getpeername(), sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)))

            server, url = serving_with(self.served, vts.serve_transport(chunking), record)
            answers = []
            try:
                with socket.create_connection(server.server_address[:2], 10) as sock:
                    client, pending = sock.getsockname(), b""
                    for path in paths * 2:
                        sock.sendall(f"POST /{path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n".encode())
                        sock.sendall(b"{}")   # a write of its own
                        while b"\r\n\r\n" not in pending:
                            pending += sock.recv(65536)
                        head, _, pending = pending.partition(b"\r\n\r\n")
                        self.assertTrue(head.startswith(b"HTTP/1.1 200 "), head[:200])
                        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                        while len(pending) < length:
                            pending += sock.recv(65536)
                        answers.append(pending[:length])
                        pending = pending[length:]
            finally:
                server.shutdown()
                server.server_close()
            self.assertEqual(answers, list(bodies) * 2, chunking)   # ten answers on one connection
            ours = {nodelay for peer, nodelay in writes if peer == client}
            self.assertEqual((ours, len(paths)), ({1}, 5), chunking)

    def test_the_loop_waits_on_its_sockets_and_stops_when_told_whatever_its_poll_interval(self):
        # issue 34: shutdown() wakes the loop (socketserver's polls for it every poll_interval)
        path, _, body = self.streams[0]
        server = vts.make_server(self.served)
        loop = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 3600}, daemon=True)
        loop.start()
        try:
            self.assertEqual(raw_answers("http://%s:%d/" % server.server_address[:2], [path, path]), [body, body])
        finally:
            stopping = threading.Thread(target=server.shutdown, daemon=True)
            stopping.start()
            stopping.join(60)
            loop.join(60)
            server.server_close()
        self.assertEqual((stopping.is_alive(), loop.is_alive()), (False, False))

    def test_event_chunking_ends_a_write_at_each_event(self):
        cases = {
            "text/event-stream": (vts.sse_body([{"a": 1}, {"b": 2}], named=False, done=True),
                                  [b'data: {"a":1}\n\n', b'data: {"b":2}\n\n', b"data: [DONE]\n\n"]),
            "application/x-ndjson": (vts.ndjson_body([{"a": 1}, {"b": 2}]), [b'{"a":1}\n', b'{"b":2}\n']),
            "application/json": (b'[{"a":[1]},\r\n{"b":"],"}]', [b'[{"a":[1]},\r\n', b'{"b":"],"}', b"]"]),
            "application/vnd.amazon.eventstream": (
                vts.eventstream_frame({"a": {}}) + vts.eventstream_frame({"bExc": {"m": 1}}),
                [vts.eventstream_frame({"a": {}}), vts.eventstream_frame({"bExc": {"m": 1}})]),
        }
        for kind, (body, pieces) in cases.items():
            writes = vts.serve_writes(body, kind, ("event", None))
            self.assertEqual([body[start:end] for start, end in writes], pieces, kind)

    def test_random_chunking_is_seeded_and_splits_utf8_and_crlf(self):
        served, _ = vts.serve_plan([os.path.join(FIXTURES, "openai", "valid-non-ascii-and-emoji-arguments.json")])
        recorded = []
        server, url = serving_with(served, vts.serve_transport("random:42", framing="crlf,utf8"),
                                   lambda sock, start, end: recorded.append((start, end)))
        try:
            (body,) = raw_answers(url, ["valid-non-ascii-and-emoji-arguments/v1/chat/completions"])
            all_answered(server)
        finally:
            server.shutdown()
            server.server_close()
        self.assertIn("ü".encode("utf-8"), body)
        self.assertEqual(recorded, list(vts.serve_writes(body, "text/event-stream", ("random", 42))))
        plan = vts.serve_chunking("random:42")
        first = list(vts.serve_writes(body, "text/event-stream", plan))
        self.assertEqual(first, list(vts.serve_writes(body, "text/event-stream", plan)))   # the same seed
        self.assertNotEqual(first, list(vts.serve_writes(body, "text/event-stream", vts.serve_chunking("random:43"))))
        sizes = {end - start for start, end in first}
        self.assertLessEqual(max(sizes), vts.SERVE_RANDOM_MOST)
        self.assertGreater(len(sizes), 4)
        cuts = {end for _, end in first[:-1]}
        inside_utf8 = [cut for cut in cuts if 0x80 <= body[cut] < 0xC0]   # the next byte continues a character
        between_cr_lf = [cut for cut in cuts if body[cut - 1:cut + 1] == b"\r\n"]
        inside_data = [cut for cut in cuts if body.rfind(b"data: ", 0, cut) > body.rfind(b"\n", 0, cut)]
        self.assertTrue(inside_utf8 and between_cr_lf and inside_data, (inside_utf8, between_cr_lf))

    def test_the_pacing_pauses_between_writes_and_before_the_first_byte(self):
        import time

        path, kind, body = next(s for s in self.streams if s[0].startswith("openai/valid-fragmented-single-call/"))
        events = len(list(vts.serve_writes(body, kind, ("event", None))))
        server, url = serving_with(self.served, vts.serve_transport("event", delay_ms=30, first_byte_ms=200))
        try:
            began = time.monotonic()
            self.assertEqual(raw_answers(url, [path]), [body])
            took = time.monotonic() - began
        finally:
            server.shutdown()
            server.server_close()
        self.assertGreaterEqual(took, 0.2 + 0.03 * (events - 1) - 0.01)

    def test_the_pauses_of_one_answer_are_bounded_in_all(self):
        # found by the issue-32 review: byte chunking and --delay-ms held a 3 MB answer's connection for a year
        path, kind, body = next(s for s in self.streams if s[0].startswith("openai/valid-fragmented-single-call/"))
        server, url = serving_with(self.served, vts.serve_transport("byte", delay_ms=30))
        pauses, pause = [], server.pause
        server.pause = lambda milliseconds: pauses.append(milliseconds) or pause(milliseconds)
        try:
            with mock.patch.object(vts, "SERVE_MAX_PAUSED_MS", 90):
                self.assertEqual(raw_answers(url, [path]), [body])
        finally:
            server.shutdown()
            server.server_close()
        self.assertGreater(len(body), 100)
        self.assertEqual(pauses, [30, 30, 30])   # then the rest of its writes, unpaused

    def test_bad_options_are_usage_errors(self):
        for extra in (("--chunking", "lines"), ("--chunking", "random"), ("--chunking", "random:-1"),
                      ("--chunking", "byte:1"), ("--framing", "crlf,tabs"), ("--delay-ms", "-1"),
                      ("--delay-ms", str(vts.SERVE_MAX_DELAY_MS + 1)), ("--first-byte-ms", "x"),
                      ("--first-byte-ms", str(vts.SERVE_MAX_FIRST_BYTE_MS + 1))):
            code, out, err = run_cli("serve", *extra, FIXTURES)
            self.assertEqual((code, out), (3, ""), extra)
            self.assertIn(extra[0], err)
        for bad in ({"chunking": "bytes"}, {"framing": ["ids", "utf16"]}, {"delay_ms": 1.5}, {"first_byte_ms": -3}):
            with self.assertRaises(ValueError):
                vts.serve_transport(**bad)


class Framing(unittest.TestCase):
    """--framing: the same events in legal SSE variants, only on the rows whose SDKs read them alike."""

    def test_the_variants_on_an_sse_body(self):
        body = vts.sse_body([{"type": "a"}, {"type": "b"}], named=True, done=False)
        self.assertEqual(vts.sse_reframed(body, frozenset()), body)
        self.assertEqual(vts.sse_reframed(body, frozenset({"crlf"})), body.replace(b"\n", b"\r\n"))
        self.assertEqual(vts.sse_reframed(body, vts.SSE_FRAMINGS),
                         b'retry: 3000\r\nid: 1\r\nevent: a\r\ndata: {"type":"a"}\r\n\r\n: keep-alive\r\n'
                         b'id: 2\r\nevent: b\r\ndata: {"type":"b"}\r\n\r\n')
        gemini = vts.sse_body([{"x": 1}, {"y": 2}], named=False, done=False, end="\r\n")
        self.assertEqual(vts.sse_reframed(gemini, frozenset({"crlf"})), gemini)   # CRLF already: no CR added
        self.assertEqual(vts.sse_reframed(gemini, frozenset({"ids"})),
                         b'retry: 3000\r\nid: 1\r\ndata: {"x":1}\r\n\r\nid: 2\r\ndata: {"y":2}\r\n\r\n')

    def test_served_with_every_variant_the_events_read_back_alike(self):
        served, _ = vts.serve_plan([os.path.join(FIXTURES, name) for name in (
            "openai/valid-fragmented-single-call.json", "anthropic", "gemini", "ollama", "bedrock")])
        streams, answers = answers_under(served, vts.serve_transport("random:3", framing="crlf,comments,ids"))
        for (path, kind, whole), answer in zip(streams, answers):
            self.assertEqual(read_back(kind, answer), read_back(kind, whole), path)
            row = served[path.split("/v1")[0].split("/model/")[0].split("/api/")[0]].row
            framed = kind == "text/event-stream" and row.http.framings >= {"comments"}
            self.assertEqual(b": keep-alive\r\n" in answer, framed and whole.count(b"data: ") > 1, path)
            self.assertEqual(answer == whole, not framed or not whole, path)   # gemini: only crlf, a no-op there

    def test_openai_pythons_decoder_reads_every_variant_combination_as_the_plain_body(self):
        # found by the issue-32 review: a comment block of its own after an id: line is an event with empty
        # data to openai-python's SSEDecoder (a blank line dispatches once an id was seen), and its stream
        # loop fails parsing it; modelled here on its decode rules (src/openai/_streaming.py)
        def events(body):
            found, data, seen = [], [], False
            for line in body.decode("utf-8").splitlines():
                if not line:
                    if data or seen:
                        found.append("\n".join(data))
                    data = []
                    continue
                field, _, value = line.partition(":")
                if field == "data":
                    data.append(value[1:] if value.startswith(" ") else value)
                seen = seen or field in ("id", "event", "retry") and bool(value)
            return found

        served, _ = vts.serve_plan([os.path.join(FIXTURES, name) for name in ("openai", "openai-responses")])
        checked = 0
        for path, kind, whole in stream_paths(served):
            plain = [data for data in events(whole) if data != "[DONE]"]
            for size in range(1, len(vts.SSE_FRAMINGS) + 1):
                for chosen in itertools.combinations(sorted(vts.SSE_FRAMINGS), size):
                    read = [data for data in events(vts.sse_reframed(whole, frozenset(chosen))) if data != "[DONE]"]
                    with self.subTest(path=path, framing=chosen):
                        self.assertEqual(read, plain)
                        checked += 1
        self.assertGreater(checked, 100)

    def test_the_command_says_which_profiles_a_variant_is_not_applied_to(self):
        with mock.patch.object(vts, "make_server", side_effect=OSError(98, "in use")):
            code, out, err = run_cli("serve", "--framing", "ids", os.path.join(FIXTURES, "gemini"),
                                     os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json"))
        self.assertEqual(code, 3)
        self.assertIn("--framing ids is not applied to gemini (", err)
        self.assertNotIn("openai", err.split("not applied to")[1].split("\n")[0])


def ascii_again(body):
    """A body served with the utf8 variant, each character past ASCII escaped again as wire_json does."""
    return "".join(c if ord(c) < 0x80 else json.dumps(c)[1:-1] for c in body.decode("utf-8")).encode("ascii")


class RawUtf8(unittest.TestCase):
    def test_utf8_writes_json_escapes_as_utf8_and_nothing_else(self):
        served, _ = vts.serve_plan([FIXTURES])
        streams, answers = answers_under(served, vts.serve_transport(framing="utf8"))
        raw = 0
        for (path, kind, whole), answer in zip(streams, answers):
            if kind == "application/vnd.amazon.eventstream":   # bedrock's row does not take it
                self.assertEqual(answer, whole, path)
                continue
            self.assertEqual(ascii_again(answer), whole, path)
            raw += answer != whole
        self.assertGreaterEqual(raw, 15)
        # C1 controls (U+0085 too), U+2028 and U+2029 stay escaped: a line reader breaks at each (issue-32 review)
        self.assertEqual(vts.json_raw_utf8(b'["\\u00e9","\\\\u00e9","\\ud83d\\ude00","\\ud800","\\u0085","\\u001f",'
                                           b'"\\u2028\\u2029\\u00a0"]'),
                         '["é","\\\\u00e9","😀","\\ud800","\\u0085","\\u001f","\\u2028\\u2029\u00a0"]'.encode("utf-8"))


class InProcess(unittest.TestCase):
    """vts.serving: an adapter's own unittest reads a fixture's stream with no subprocess."""

    FIXTURE = os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json")

    def test_an_http_client_reads_the_whole_body_under_byte_and_random_chunking(self):
        import http.client
        from urllib.parse import urlsplit

        served, _ = vts.serve_plan([self.FIXTURE])
        whole = vts.PROFILES["openai"].http.frame(served["valid-fragmented-single-call.json"[:-5]].stream, "")[1]
        for chunking in ("byte", "random:7"):
            with vts.serving([self.FIXTURE], chunking=chunking) as server:
                base = urlsplit(server.base_url("valid-fragmented-single-call"))
                connection = http.client.HTTPConnection(base.hostname, base.port, timeout=10)
                connection.request("POST", base.path + "/v1/chat/completions", body=b"{}",
                                   headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                got = b""
                while True:   # read as a streaming client does: what has arrived, until the end
                    piece = response.read1(65536)
                    if not piece:
                        break
                    got += piece
                connection.close()
                self.assertEqual((response.status, got), (200, whole), chunking)
                self.assertEqual(server.requests, {"valid-fragmented-single-call": 1})
            self.assertTrue(server.url.startswith("http://127.0.0.1:"))

    def test_it_shuts_down_on_leaving_even_while_a_stream_is_paced(self):
        import socket

        with vts.serving(self.FIXTURE, chunking="byte", delay_ms=vts.SERVE_MAX_DELAY_MS) as server:
            host, port = server.server.server_address[:2]
            sock = socket.create_connection((host, port), 10)
            sock.sendall(b"POST /valid-fragmented-single-call/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: 2\r\n\r\n{}")
            self.assertTrue(sock.recv(65536).startswith(b"HTTP/1.1 200 "))
        sock.settimeout(10)
        try:
            rest = b""
            while True:   # the stream ends (the server stopped) long before its 10 s pause
                piece = sock.recv(65536)
                if not piece:
                    break
                rest += piece
        except ConnectionResetError:
            pass
        finally:
            sock.close()
        self.assertRaises(OSError, socket.create_connection, (host, port), 1)

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            vts.serving(self.FIXTURE, chunking="random:x")
        with self.assertRaises(ValueError):
            vts.serving(os.path.join(FIXTURES, "no-such-folder"))
        # found by the issue-32 review: other types raised AttributeError, TypeError or OverflowError from inside
        for wrong in ({"chunking": None}, {"chunking": 5}, {"chunking": b"byte"}, {"framing": None}, {"framing": [1]},
                      {"port": "80"}, {"port": True}, {"host": None}):
            with self.subTest(wrong=wrong), self.assertRaises(TypeError):
                vts.serving(self.FIXTURE, **wrong)
        with self.assertRaises(TypeError):
            vts.serving(FIXTURES.encode())
        with self.assertRaises(ValueError):
            vts.serving(self.FIXTURE, port=70000)
        with vts.serving(self.FIXTURE, framing="crlf,ids", chunking="byte") as server:
            self.assertEqual(server.prefixes, ["valid-fragmented-single-call"])
        with vts.serving(self.FIXTURE) as server:
            self.assertRaises(KeyError, server.base_url, "no-such-prefix")
            self.assertEqual(server.prefixes, ["valid-fragmented-single-call"])


if __name__ == "__main__":
    unittest.main()
