"""What a CI user meets around the verdict: no internal error, bounded output, honest messages.

One regression test per case: inputs that used to end in "internal error", structures and
messages that grew with the input, a Bedrock exception frame read as data, annotations at the
wrong place, a step failing without saying why, usage lines naming the wrong command, and a
reference check that measured nothing and said it passed.  (The output rule for every mode
is tests/test_output_safety.py; pin's writes are tests/test_pin_safety.py.)
"""

import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import tracemalloc
import unittest
import zlib

from support import ROOT, SCRIPT, codes, run_cli, slow, vts, write


def frame(message_type, type_header, name, payload):
    """One AWS event-stream frame with valid checksums."""
    def header(key, value):
        key, value = key.encode(), value.encode()
        return bytes([len(key)]) + key + bytes([7]) + struct.pack(">H", len(value)) + value

    headers = header(":message-type", message_type) + header(type_header, name)
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


class NoInternalError(unittest.TestCase):
    def test_responses_event_types_that_are_objects_or_lists(self):
        with tempfile.TemporaryDirectory() as folder:
            body = write(folder, "r.sse", 'data: {"type": {"a": 1}}\n\ndata: {"type": ["response.created"]}\n\n')
            code, out, err = run_cli("capture", "--profile", "openai-responses", body)
        self.assertEqual(code, 0, err)
        self.assertNotIn("internal error", err)
        report = vts.validate_envelope(json.loads(out))
        self.assertEqual((report["status"], set(codes(report))), ("blocked", {"unsupported_event"}))

    def test_gemini_counts_of_thousands_of_digits(self):
        schema = {"type": "ARRAY", "minItems": "1" * 5000}
        with self.assertRaises(vts.CaptureError) as caught:
            vts.gemini_schema(schema)
        self.assertIn("5000 digits", str(caught.exception))
        self.assertEqual(vts.gemini_schema({"type": "ARRAY", "minItems": "9223372036854775807"}),
                         {"type": "array", "minItems": 9223372036854775807})
        request = {"tools": [{"functionDeclarations": [{"name": "f", "parameters": {
            "type": "OBJECT", "properties": {"a": schema}}}]}]}
        with tempfile.TemporaryDirectory() as folder:
            body = write(folder, "b.sse", 'data: {"candidates": [{"content": {"role": "model", "parts": '
                                          '[{"text": "t"}]}, "finishReason": "STOP"}]}\r\n\r\n')
            for option in ("--request", "--schemas"):
                with self.subTest(option=option):
                    doc = request if option == "--request" else request["tools"]
                    code, _, err = run_cli("capture", "--profile", "gemini", option,
                                           write(folder, "r.json", json.dumps(doc)), body)
                    self.assertEqual(code, 3)
                    self.assertNotIn("internal error", err)
                    self.assertIn("digits", err)

    def test_entry_selectors_of_thousands_of_digits(self):
        with tempfile.TemporaryDirectory() as folder:
            har = write(folder, "s.har", json.dumps({"log": {"entries": []}}))
            code, _, err = run_cli("capture", "--profile", "openai", "--entry", "1" * 5000, har)
        self.assertEqual(code, 3)
        self.assertNotIn("internal error", err)
        self.assertIn("the archive has 0 entries", err)
        self.assertLess(len(err), 300)


class BoundedWhereDataEnters(unittest.TestCase):
    def test_a_deep_gemini_json_path_is_refused_before_it_is_built(self):
        path = "$" + ".a" * 500_000   # 1 MB
        chunks = [{"candidates": [{"content": {"role": "model", "parts": [
                      {"functionCall": {"name": "f", "willContinue": True}}]}}]},
                  {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {
                      "partialArgs": [{"jsonPath": path, "numberValue": 1}], "willContinue": True}}]}}]},
                  {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {}}]},
                                   "finishReason": "STOP"}]}]
        tracemalloc.start()
        report = vts.validate_envelope({"profile": "gemini", "tool_schemas": {"f": {}}, "chunks": chunks})
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        self.assertEqual((codes(report), report["calls"][0]["arguments"]), (["limit_exceeded"], "{}"))
        self.assertIn("deeper than the limit of 64", report["findings"][0]["message"])
        self.assertLess(peak, 4 * len(path), "the path was built before the depth limit applied")
        # the limit follows --max-depth, and a path at it is placed
        at_limit = {"jsonPath": "$" + ".a" * 70, "numberValue": 1}
        chunks[1]["candidates"][0]["content"]["parts"][0]["functionCall"]["partialArgs"] = [at_limit]
        report = vts.validate_envelope({"profile": "gemini", "tool_schemas": {"f": {}}, "chunks": chunks},
                                       vts.Limits(max_depth=70))
        self.assertEqual(report["status"], "pass")

    def test_path_text_in_messages_is_clipped(self):
        text = vts._gemini_path_text(tuple(["a"] * 1000) + (3,))
        self.assertTrue(text.startswith("$" + ".a" * 12 + "..."))
        self.assertLess(len(text), 80)
        self.assertEqual(vts._gemini_path_text(("a", 0, "b")), "$.a[0].b")

    def test_request_violation_messages_do_not_repeat_the_allowed_list(self):
        names = [f"tool_{n:05d}" for n in range(10_000)]
        calls = [{"index": k, "id": f"call_{k}", "type": "function", "function": {"name": "other", "arguments": "{}"}}
                 for k in range(200)]
        chunks = [{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": calls}}]},
                  {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
        choice = {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
            {"type": "function", "function": {"name": n}} for n in names]}}
        doc = {"profile": "openai", "tool_schemas": {"other": {}}, "chunks": chunks, "request": {"tool_choice": choice}}
        report = vts.validate_envelope(doc)
        self.assertEqual(set(codes(report)), {"request_violation"})
        message = report["findings"][0]["message"]
        self.assertIn('"tool_00000", "tool_00001", "tool_00002", "tool_00003", "tool_00004" and 9995 more', message)
        self.assertLess(len(message), 300)
        self.assertLess(len(vts.render_json(report)), 3 * len(json.dumps(doc)))

    def test_long_names_are_quoted_clipped_in_messages(self):
        name = "n" * 100_000
        chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [
                      {"index": 0, "id": "c", "type": "function", "function": {"name": name, "arguments": "{}"}}]}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
        report = vts.validate_envelope({"profile": "openai", "tool_schemas": {}, "chunks": chunks})
        self.assertEqual(codes(report), ["unknown_tool"])
        self.assertIn("(100000 characters)", report["findings"][0]["message"])
        self.assertLess(len(report["findings"][0]["message"]), 300)
        self.assertEqual(report["calls"][0]["name"], name)   # the call itself keeps it whole

    def test_secret_hint_prefilter_finds_what_the_patterns_find(self):
        rng = random.Random(22)
        planted = ["sk-ant-" + "a" * 12, "sk-" + "B" * 24, "Bearer " + "t" * 20, "BEARER " + "t" * 20,
                   "AKIA" + "Q" * 16, "ghp_" + "x" * 24, "github_pat_" + "y" * 24, "xoxb-" + "1" * 12,
                   "eyJhbGciOi.eyJzdWIiOi.sig", "API_KEY=" + "k" * 24, "Api-Key: " + "k" * 24]
        pool = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.=: "
        slow = vts._SECRET_PATTERNS
        for _ in range(3000):
            text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 60)))
            if rng.random() < 0.5:
                cut = rng.randint(0, len(text))
                text = text[:cut] + rng.choice(planted) + text[cut:]
            expected = sorted((m.start(1), m.end(1), label) for label, pattern in slow
                              for m in re.finditer(pattern, text))
            self.assertEqual(vts._secret_spans(text), expected, text)


class BedrockExceptionFrames(unittest.TestCase):
    def test_an_exception_frame_named_like_a_data_event_is_a_stream_error(self):
        body = (frame("event", ":event-type", "messageStart", {"role": "assistant"})
                + frame("event", ":event-type", "contentBlockStart", {"contentBlockIndex": 0, "start": {
                    "toolUse": {"toolUseId": "t1", "name": "f"}}})
                + frame("exception", ":exception-type", "contentBlockDelta", {"contentBlockIndex": 0, "delta": {
                    "toolUse": {"input": "{}"}}})
                + frame("event", ":event-type", "contentBlockStop", {"contentBlockIndex": 0})
                + frame("error", ":error-code", "messageStop", {"stopReason": "tool_use"}))
        envelope, _ = vts.sse_to_envelope(body, "bedrock", {"f": {}})
        self.assertEqual([next(iter(e)) for e in envelope["events"]],
                         ["messageStart", "contentBlockStart", "contentBlockDeltaException", "contentBlockStop",
                          "messageStopException"])
        report = vts.validate_envelope(envelope)
        self.assertEqual(report["status"], "blocked")
        self.assertIn("stream_error", codes(report))
        named = frame("exception", ":exception-type", "throttlingException", {"message": "m"})
        self.assertEqual(vts.eventstream_events(named), [{"throttlingException": {"message": "m"}}])

    def test_any_exception_member_is_a_stream_error(self):
        events = [{"messageStart": {"role": "assistant"}}, {"accessDeniedException": {"message": "m"}}]
        report = vts.validate_envelope({"profile": "bedrock", "tool_schemas": {}, "events": events})
        self.assertEqual(codes(report), ["stream_error"])


class WhatCiSees(unittest.TestCase):
    def test_github_puts_a_syntax_error_where_the_parser_stopped(self):
        with tempfile.TemporaryDirectory() as folder:
            path = write(folder, "bad.json", '{\n "profile": "openai",\n "chunks": [1 2]\n}\n')
            _, out, _ = run_cli(path, "--report", "github")
        self.assertIn(",line=3,col=15::invalid_fixture:", out)

    def test_a_not_applicable_fixture_says_why_the_step_fails(self):
        path = os.path.join(ROOT, "fixtures", "openai", "not-applicable-text-only-stop.json")
        code, out, _ = run_cli(path, "--report", "github")
        self.assertEqual(code, 2)
        self.assertRegex(out, r"^::error file=[^\n]*::not_applicable: .*fails \(exit 2\).*--allow-not-applicable")
        code, out, _ = run_cli(path, "--report", "github", "--allow-not-applicable")
        self.assertEqual((code, out), (0, ""))

    @slow("real processes: the installed command's own name")
    def test_the_installed_command_names_itself(self):
        with tempfile.TemporaryDirectory() as folder:
            link = os.path.join(folder, "validate-tool-stream")
            shutil.copy(SCRIPT, link)
            for args, stream in ((["--version"], "stdout"), (["--help"], "stdout"), (["pin", "--help"], "stdout"),
                                 (["capture", "--help"], "stdout")):
                with self.subTest(args=args):
                    proc = subprocess.run([sys.executable, link, *args], capture_output=True, text=True, timeout=60)
                    text = getattr(proc, stream)
                    self.assertIn("validate-tool-stream", text)
                    self.assertNotIn("validate_tool_stream.py", text)
        code, out, _ = run_cli("--version")
        self.assertEqual((code, out.strip()), (0, f"validate_tool_stream {vts.VERSION}"))
        code, out, _ = run_cli("--help")
        self.assertTrue(out.startswith("usage: validate_tool_stream.py"))

    def test_usage_errors_point_to_help(self):
        for args in (["-q", "x"], ["--report", "xml", "x"], []):
            with self.subTest(args=args):
                code, out, err = run_cli(*args)
                self.assertEqual((code, out), (3, ""))
                self.assertTrue(err.rstrip().endswith("(see --help)"), err)

    @slow("real processes: the interpreter version check")
    def test_an_old_python_says_so_and_exits_3(self):
        found = 0
        for version in ("3.9", "3.8", "3.7"):
            python = shutil.which(f"python{version}")
            if python is None:
                continue
            found += 1
            with self.subTest(version=version):
                proc = subprocess.run([python, SCRIPT, "x"], capture_output=True, text=True, timeout=60)
                if "No module named" in proc.stderr or proc.returncode == 127 or "not installed" in proc.stderr:
                    continue   # a pyenv shim without that version
                self.assertEqual(proc.returncode, 3, proc.stderr)
                self.assertIn(f"needs Python 3.10 or newer, this is {version}", proc.stderr)
                self.assertNotIn("Traceback", proc.stderr)
        # whatever is installed: the check itself, with an older version pretended
        code = ("import sys, runpy; sys.version_info = (3, 8, 18, 'final', 0); sys.argv = ['x', 'y']; "
                f"runpy.run_path({SCRIPT!r}, run_name='__main__')")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 3)
        self.assertEqual(proc.stderr, "validate_tool_stream: needs Python 3.10 or newer, this is 3.8; no verdict\n")

    def test_redacted_text_reports_keep_the_json_pointer(self):
        path = os.path.join(ROOT, "fixtures", "openai", "schema-violation-additional-property.json")
        _, out, _ = run_cli(path, "--report", "text", "--redact-arguments")
        self.assertRegex(out, r"schema_violation at position \d+.*: the arguments do not satisfy the tool's schema "
                              r"\(at /[^)]*\)")

    def test_schemas_and_request_parse_errors_name_the_file(self):
        with tempfile.TemporaryDirectory() as folder:
            broken = write(folder, "tools.json", '{"a": ')
            body = os.path.join(ROOT, "fixtures", "capture", "openai-weather.sse")
            for option in ("--schemas", "--request"):
                with self.subTest(option=option):
                    code, _, err = run_cli("capture", "--profile", "openai", option, broken, body)
                    self.assertEqual(code, 3)
                    self.assertIn(f"{option} {broken}: not strict JSON", err)

    @slow("a real process: conformance.py's exit code")
    def test_the_reference_check_fails_when_it_measured_nothing(self):
        with tempfile.TemporaryDirectory() as folder:
            env = dict(os.environ, VTS_SHARED=folder)
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "conformance.py")], env=env,
                                  capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 3)
        self.assertIn("nothing measured", proc.stdout)


if __name__ == "__main__":
    unittest.main()


class ExpectBlocksOfAnyShape(unittest.TestCase):
    def test_a_status_or_code_that_is_not_a_string_is_a_difference(self):
        source = os.path.join(ROOT, "fixtures", "openai", "valid-fragmented-single-call.json")
        with open(source, encoding="utf-8") as handle:
            doc = json.load(handle)
        for expect, said in (({"status": ["pass"]}, "expect status a list is not pass, blocked or not_applicable"),
                             ({"status": {"a": 1}}, "is not pass, blocked or not_applicable"),
                             ({"status": "pass", "codes": [["x"]]}, "expect codes must be a list of finding codes"),
                             ({"status": "pass", "codes": [{}, 1]}, "expect codes must be a list of finding codes")):
            doc["expect"] = expect
            with tempfile.TemporaryDirectory() as folder:
                path = write(folder, "f.json", json.dumps(doc))
                for mode in ("json", "text", "junit", "github"):
                    code, out, err = run_cli(path, "--expect", "--report", mode)
                    self.assertEqual(code, 1, f"{expect} {mode}: {err}")
                    self.assertNotIn("internal error", err)
                    self.assertIn(said, out + err, mode)


class GithubLineNumbers(unittest.TestCase):
    def test_line_and_column_match_a_plain_count_for_every_line_end(self):
        rng = random.Random(22)
        for _ in range(200):
            text = "".join(rng.choice(["a", "b", "\n", "\r", "\r\n", "\u2028"]) for _ in range(rng.randrange(0, 40)))
            where = vts._Lines(text)
            for offset in range(len(text) + 1):
                if text[offset - 1:offset + 1] == "\r\n":   # inside one line end: no token starts there
                    continue
                head = text[:offset]
                line = head.count("\n") + head.count("\r") - head.count("\r\n") + 1
                start = max(head.rfind("\n"), head.rfind("\r")) + 1
                self.assertEqual(where.at(offset), (line, offset - start + 1), repr(text))


class UnwritableOutput(unittest.TestCase):
    FIXTURE = os.path.join(ROOT, "fixtures", "openai", "valid-fragmented-single-call.json")

    def run_with_stdout(self, stdout, *args):
        proc = subprocess.run([sys.executable, SCRIPT, *args], stdout=stdout, stderr=subprocess.PIPE,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), timeout=120)
        return proc.returncode, proc.stderr.decode("utf-8")

    @unittest.skipUnless(os.path.exists("/dev/full"), "no /dev/full here")
    @slow("real processes writing to /dev/full")
    def test_a_full_output_says_so(self):
        with open(self.FIXTURE, encoding="utf-8") as handle:
            chunks = json.load(handle)["chunks"]
        with tempfile.TemporaryDirectory() as folder, open("/dev/full", "wb") as full:
            body = write(folder, "body.sse", "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n")
            for args in ((self.FIXTURE,), ("capture", "--profile", "openai", body)):
                code, err = self.run_with_stdout(full, *args)
                self.assertEqual(code, 3)
                self.assertIn("cannot write standard output: No space left on device", err)
                self.assertNotIn("internal error", err)
                self.assertNotIn("Exception ignored", err)

    @slow("a real process with standard output closed")
    def test_a_closed_output_says_so(self):
        proc = subprocess.run([sys.executable, "-c", "import os, runpy, sys; os.close(1); sys.stdout = None; "
                               f"sys.argv = ['x', {self.FIXTURE!r}]; "
                               f"sys.exit(runpy.run_path({SCRIPT!r}, run_name='vts')['main']())"],
                              stderr=subprocess.PIPE, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), timeout=120)
        err = proc.stderr.decode("utf-8")
        self.assertEqual(proc.returncode, 3, err)
        self.assertIn("cannot write standard output: it is closed", err)


class SpecialFiles(unittest.TestCase):
    @unittest.skipUnless(hasattr(os, "mkfifo"), "no named pipes here")
    def test_a_pipe_in_a_fixture_folder_is_refused_not_waited_on(self):
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy(UnwritableOutput.FIXTURE, os.path.join(folder, "a.json"))
            os.mkfifo(os.path.join(folder, "b.json"))
            code, out, err = run_cli(folder)
            self.assertEqual((code, out), (3, ""))
            self.assertIn("b.json is not a regular file", err)

    @unittest.skipUnless(os.path.exists("/dev/fd/0"), "no /dev/fd here")
    @slow("a real process reading a pipe")
    def test_a_pipe_given_by_name_is_read(self):
        with open(UnwritableOutput.FIXTURE, "rb") as handle:
            data = handle.read()
        proc = subprocess.run([sys.executable, SCRIPT, "--quiet", "/dev/fd/0"], input=data, capture_output=True,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
