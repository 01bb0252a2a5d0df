"""The command line: exit codes 0-3 only, a message on stderr for 3, no traceback."""

import shutil
import xml.etree.ElementTree as ET
import stat
import re
import json
import os
import subprocess
import sys
import tempfile
import unittest

from support import (
    BLOCKED_DOC, codes, envelope, FIXTURES, Folder, PASS_DOC, ROOT, run_cli, SCRIPT, slow, vts,
    write,
)

STRICT_PASS_DOC = envelope("openai", [
    {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"ci"}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": "ty\":\"Paris\"}"}}]}, "finish_reason": "tool_calls"}]},
], {"weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                "additionalProperties": False}})


def dumps(doc):
    return json.dumps(doc).encode("utf-8")


class ExitCodes(unittest.TestCase):
    def test_pass_from_stdin_reports_the_exact_call(self):
        code, out, err = run_cli("-", stdin=dumps(STRICT_PASS_DOC))
        self.assertEqual(code, 0, err)
        report = json.loads(out)
        self.assertEqual((report["status"], report["applicable"], report["executable"]), ("pass", True, True))
        self.assertEqual(report["calls"][0]["id"], "call_1")
        self.assertEqual(report["calls"][0]["name"], "weather")
        self.assertEqual(report["calls"][0]["arguments"], '{"city":"Paris"}')
        self.assertEqual(err, "")

    def test_blocked_is_one(self):
        doc = dict(STRICT_PASS_DOC, chunks=STRICT_PASS_DOC["chunks"][:1])
        code, out, _ = run_cli("-", stdin=dumps(doc))
        self.assertEqual(code, 1)
        self.assertEqual([f["code"] for f in json.loads(out)["findings"]], ["missing_terminal"])

    def test_not_applicable_is_two(self):
        doc = envelope("openai", [{"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}])
        code, out, _ = run_cli("-", stdin=dumps(doc))
        self.assertEqual(code, 2)
        self.assertEqual(json.loads(out)["status"], "not_applicable")

    def test_invalid_fixture_is_a_blocked_report_not_a_crash(self):
        for raw in (b"", b"\xef\xbb\xbf{}", b"\xff", b"[1]", b'{"a":NaN}', b"{} {}", b"[" * 100000,
                    b'{"profile":"openai","profile":"openai"}', b'{"x":1e400}', b'{"x":' + b"9" * 5000 + b"}",
                    b'{"x":"\x01"}', b"null"):
            with self.subTest(raw=raw[:12]):
                code, out, err = run_cli("-", stdin=raw)
                self.assertEqual(code, 1, err)
                self.assertEqual(json.loads(out)["findings"][0]["code"], "invalid_fixture")
                self.assertNotIn("Traceback", err)

    def test_cannot_run_is_three_with_a_message_and_no_report(self):
        with tempfile.TemporaryDirectory() as folder:
            for args in ((), (os.path.join(folder, "missing.json"),), (folder,), ("--report", "xml", "x"),
                         ("--bogus", "x"), ("--max-depth", "0", "x"), ("--max-depth", "ten", "x"), ("a", "b")):
                with self.subTest(args=args):
                    code, out, err = run_cli(*args)
                    self.assertEqual(code, 3)
                    self.assertEqual(out, "")
                    self.assertTrue(err.startswith("validate_tool_stream: "), err)
                    self.assertNotIn("Traceback", err)

    def test_help_and_version_exit_zero(self):
        for flag in ("--help", "--version"):
            code, out, _ = run_cli(flag)
            self.assertEqual(code, 0)
            self.assertIn("validate_tool_stream", out)


class Reports(unittest.TestCase):
    def test_text_report_puts_the_status_first(self):
        code, out, _ = run_cli("-", "--report", "text", stdin=dumps(STRICT_PASS_DOC))
        self.assertEqual(code, 0)
        lines = out.splitlines()
        self.assertEqual(lines[0], "== -")                      # issue 12: output always names the fixture
        self.assertTrue(lines[1].startswith("PASS"))
        self.assertIn('id="call_1"', lines[2])

    def test_text_report_lists_findings(self):
        doc = dict(STRICT_PASS_DOC, chunks=STRICT_PASS_DOC["chunks"][:1])
        code, out, _ = run_cli("-", "--report", "text", stdin=dumps(doc))
        self.assertEqual(code, 1)
        self.assertTrue(out.startswith("== -\nBLOCKED"))
        self.assertIn("missing_terminal at end of stream", out)

    def test_text_report_never_echoes_an_unknown_profile(self):
        # Regression (found by the fuzzer): a profile string with a lone surrogate was printed
        # raw, and writing it raised UnicodeEncodeError (exit 3, no verdict)
        doc = dict(STRICT_PASS_DOC, profile="op\ude00enai-SECRET")
        code, out, err = run_cli("-", "--report", "text", stdin=json.dumps(doc).encode("ascii"))
        self.assertEqual((code, err), (1, ""))
        self.assertIn("(profile unknown,", out)
        self.assertNotIn("SECRET", out.splitlines()[0])

    def test_json_report_is_deterministic_and_ascii(self):
        doc = json.loads(json.dumps(STRICT_PASS_DOC))
        doc["chunks"][1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = "ty\":\"Z\u00fcrich \U0001F600\"}"
        first = run_cli("-", stdin=dumps(doc))
        second = run_cli("-", stdin=dumps(doc))
        self.assertEqual(first, second)
        self.assertTrue(first[1].isascii())
        self.assertEqual(json.loads(first[1])["calls"][0]["arguments"], '{"city":"Z\u00fcrich \U0001F600"}')

    def test_meta_is_echoed(self):
        doc = dict(STRICT_PASS_DOC, meta={"provider": "test", "adapter_version": "1.2.3"})
        _, out, _ = run_cli("-", stdin=dumps(doc))
        self.assertEqual(json.loads(out)["meta"], {"provider": "test", "adapter_version": "1.2.3"})


class ExpectFlag(unittest.TestCase):
    def test_match_exits_zero_even_for_a_blocked_turn(self):
        doc = dict(STRICT_PASS_DOC, chunks=STRICT_PASS_DOC["chunks"][:1],
                   expect={"status": "blocked", "codes": ["missing_terminal"]})
        code, out, err = run_cli("-", "--expect", stdin=dumps(doc))
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["expectation"], {"matched": True, "differences": []})

    def test_mismatch_exits_one_and_prints_the_difference(self):
        doc = dict(STRICT_PASS_DOC, expect={"status": "pass", "codes": [],
                                     "calls": [{"id": "call_1", "name": "weather", "arguments": "{\"city\":\"Rome\"}"}]})
        code, out, err = run_cli("-", "--expect", stdin=dumps(doc))
        self.assertEqual(code, 1)
        self.assertIn("MISMATCH", err)
        self.assertIn("calls[0].arguments", err)
        self.assertFalse(json.loads(out)["expectation"]["matched"])

    def test_missing_code_and_missing_expect_block_are_mismatches(self):
        doc = dict(STRICT_PASS_DOC, expect={"codes": ["identity_collision"]})
        self.assertEqual(run_cli("-", "--expect", stdin=dumps(doc))[0], 1)
        self.assertEqual(run_cli("-", "--expect", stdin=dumps(STRICT_PASS_DOC))[0], 1)

    def test_expect_on_a_bundled_fixture_file(self):
        path = os.path.join(FIXTURES, "openai")
        if not os.path.isdir(path):
            self.skipTest("no openai fixtures")
        name = sorted(os.listdir(path))[0]
        code, _, err = run_cli(os.path.join(path, name), "--expect")
        self.assertEqual(code, 0, err)


    def test_expect_on_a_file_that_is_not_json_says_where_it_breaks(self):
        # issue 30: it said "no usable expect object", annotated at 1:1, in every mode
        broken = b'{"profile": "openai",\n "tool_schemas": {}, "chunks": [,],\n "expect": {"status": "pass"}}'
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "broken.json")
            with open(path, "wb") as handle:
                handle.write(broken)
            code, out, err = run_cli(path, "--expect", "--report", "github")
            self.assertEqual(code, 1)
            self.assertEqual(out, f"::error file={path},line=2,col=33::expect: the fixture could not be read, so it "
                                  "has no \"expect\" block: not strict JSON: expecting value at line 2 column 33\n")
            self.assertIn("expecting value at line 2 column 33", err)
            self.assertNotIn("usable", err)
            code, out, err = run_cli(path, "--expect", "--report", "junit")
            self.assertEqual(code, 1)
            failure = ET.fromstring(out).find("./testsuite/testcase/failure")
            self.assertIn("not strict JSON: expecting value at line 2 column 33", failure.get("message"))
            code, out, _ = run_cli(path, "--expect")
            self.assertEqual(json.loads(out)["expectation"]["differences"],
                             ["the fixture could not be read, so it has no \"expect\" block: not strict JSON: "
                              "expecting value at line 2 column 33"])
        # a parsed envelope without an expect block keeps its own message
        code, out, _ = run_cli("-", "--expect", stdin=dumps(STRICT_PASS_DOC))
        self.assertEqual(json.loads(out)["expectation"]["differences"], ["the fixture has no usable \"expect\" object"])


class ManyFixtures(unittest.TestCase):
    """Several fixtures in one run: JSON Lines, a summary, the worst status wins."""

    def write(self, folder, name, doc):
        path = os.path.join(folder, name)
        with open(path, "wb") as handle:
            handle.write(dumps(doc))
        return path

    def test_json_lines_summary_and_exit_priority(self):
        text_only = envelope("openai", [{"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]}])
        blocked = dict(STRICT_PASS_DOC, chunks=STRICT_PASS_DOC["chunks"][:1])
        with tempfile.TemporaryDirectory() as folder:
            ok = self.write(folder, "a.json", STRICT_PASS_DOC)
            na = self.write(folder, "b.json", text_only)
            bad = self.write(folder, "c.json", blocked)
            code, out, _ = run_cli(ok, na)
            self.assertEqual(code, 2)
            lines = [json.loads(line) for line in out.splitlines()]
            self.assertEqual([line.get("fixture") for line in lines[:2]], [ok, na])
            self.assertEqual(lines[-1]["summary"], {"fixtures": 2, "pass": 1, "blocked": 0, "not_applicable": 1})
            self.assertEqual(run_cli(ok, ok)[0], 0)
            code, out, _ = run_cli(folder)
            self.assertEqual(code, 1)
            self.assertEqual(json.loads(out.splitlines()[-1])["summary"]["fixtures"], 3)
            self.assertEqual(json.loads(out.splitlines()[2])["fixture"], bad)

    def test_expect_over_a_folder_needs_every_fixture_to_match(self):
        with tempfile.TemporaryDirectory() as folder:
            self.write(folder, "a.json", dict(STRICT_PASS_DOC, expect={"status": "pass"}))
            self.assertEqual(run_cli(folder, "--expect")[0], 0)
            self.write(folder, "b.json", dict(STRICT_PASS_DOC, expect={"status": "blocked"}))
            code, out, err = run_cli(folder, "--expect")
            self.assertEqual(code, 1)
            self.assertIn("b.json", err)
            self.assertEqual(json.loads(out.splitlines()[-1])["summary"]["expect_mismatches"], 1)

    def test_bundled_fixture_folder_matches_its_expectations(self):
        code, out, err = run_cli(FIXTURES, "--expect", "--report", "text")
        self.assertEqual(code, 0, err)
        self.assertIn("summary: fixtures", out.splitlines()[-1])

    def test_empty_folder_and_stdin_among_many_are_usage_errors(self):
        with tempfile.TemporaryDirectory() as folder:
            self.assertEqual(run_cli(folder)[0], 3)
            path = self.write(folder, "a.json", STRICT_PASS_DOC)
            self.assertEqual(run_cli(path, "-", stdin=b"{}")[0], 3)


class RedactArguments(unittest.TestCase):
    def test_arguments_become_size_and_hash_and_values_leave_messages(self):
        import hashlib

        secret = "hunter2-secret-value"
        doc = envelope("openai", [{"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "login",
                                                  "arguments": json.dumps({"password": secret, "password ": 1})}}]},
            "finish_reason": "tool_calls"}]}],
            {"login": {"type": "object", "properties": {"password": {"type": "integer"}}}})
        code, out, _ = run_cli("-", "--redact-arguments", stdin=dumps(doc))
        self.assertEqual(code, 1)
        self.assertNotIn(secret, out)
        report = json.loads(out)
        raw = json.dumps({"password": secret, "password ": 1}).encode()
        self.assertEqual(report["calls"][0]["arguments"], {"utf8_bytes": len(raw),
                                                           "sha256": hashlib.sha256(raw).hexdigest()})
        self.assertEqual([f["code"] for f in report["findings"]], ["schema_violation"])
        self.assertEqual(report["findings"][0]["pointer"], "/password")
        _, plain, _ = run_cli("-", stdin=dumps(doc))
        self.assertIn("hunter2", plain)  # the unredacted report does quote it: the flag is what removes it

    def test_expect_and_adapter_output_do_not_leak_arguments(self):
        # issue 11 item 7: expectation differences, their stderr lines and adapter_mismatch messages
        # quoted both argument strings under --redact-arguments
        secret = "hunter2-secret-value"
        doc = dict(STRICT_PASS_DOC, expect={"calls": [{"arguments": json.dumps({"city": secret})}]})
        code, out, err = run_cli("-", "--redact-arguments", "--expect", stdin=dumps(doc))
        self.assertEqual(code, 1)
        self.assertNotIn(secret, out + err)
        self.assertNotIn("Paris", out + err)
        self.assertIn("calls[0].arguments: ", out)
        with tempfile.TemporaryDirectory() as folder:
            adapter = os.path.join(folder, "adapter.json")
            with open(adapter, "w") as handle:
                json.dump([{"id": "call_1", "name": "weather", "arguments": json.dumps({"city": secret})}], handle)
            code, out, err = run_cli("-", "--redact-arguments", "--adapter-output", adapter, stdin=dumps(STRICT_PASS_DOC))
            self.assertEqual(code, 1)
            self.assertNotIn(secret, out + err)
            self.assertNotIn("Paris", out + err)
            self.assertIn("adapter_mismatch", out)


class ExpectBlockTypos(unittest.TestCase):
    def test_malformed_expect_blocks_never_match(self):
        for expect in ({"stauts": "blocked"}, {"codes": "missing_terminal"}, {"status": "ok"},
                       {"codes": ["missing_terminall"]}, {"calls": {}}):
            with self.subTest(expect=expect):
                doc = dict(STRICT_PASS_DOC, chunks=STRICT_PASS_DOC["chunks"][:1], expect=expect)
                self.assertEqual(run_cli("-", "--expect", stdin=dumps(doc))[0], 1)

    def test_a_turn_never_judged_matches_only_when_its_code_is_pinned(self):
        # issue 12 item 1: a typo in a fixture pinned as {"status": "blocked"} passed CI forever
        typo = {"profile": "openai", "tool_schemas": {}, "chunk": [], "expect": {"status": "blocked"}}
        code, out, err = run_cli("-", "--expect", stdin=dumps(typo))
        self.assertEqual(code, 1)
        self.assertIn("never judged", err)
        self.assertFalse(json.loads(out)["expectation"]["matched"])
        for pinned, want in (({"status": "blocked", "codes": ["invalid_fixture"]}, 0),
                             ({"codes": ["invalid_fixture"]}, 0), ({"codes": []}, 1), ({}, 1)):
            with self.subTest(expect=pinned):
                self.assertEqual(run_cli("-", "--expect", stdin=dumps(dict(typo, expect=pinned)))[0], want)
        cohere = {"profile": "watsonx", "tool_schemas": {}, "chunks": [], "expect": {"status": "blocked"}}
        self.assertEqual(run_cli("-", "--expect", stdin=dumps(cohere))[0], 1)
        self.assertEqual(run_cli("-", "--expect", stdin=dumps(dict(cohere, expect={"codes": ["unknown_profile"]})))[0], 0)

    def test_free_form_notes_beside_the_pinned_keys_are_allowed(self):
        doc = dict(STRICT_PASS_DOC, expect={"status": "pass", "note": "recorded 2026-11", "sdk_asserted": True})
        self.assertEqual(run_cli("-", "--expect", stdin=dumps(doc))[0], 0)


class CaptureAndAdapterCommands(unittest.TestCase):
    """`capture` turns raw SSE into an envelope; --adapter-output diffs an adapter's calls."""

    def sse_body(self):
        lines = [": keep-alive", ""]
        for chunk_obj in STRICT_PASS_DOC["chunks"]:
            lines += ["data: " + json.dumps(dict(chunk_obj, system_fingerprint="fp_x")), ""]
        lines += ["data: [DONE]", ""]
        return "\r\n".join(lines).encode()

    def test_capture_then_validate(self):
        with tempfile.TemporaryDirectory() as folder:
            raw = os.path.join(folder, "raw.sse")
            with open(raw, "wb") as handle:
                handle.write(self.sse_body())
            tools = os.path.join(folder, "tools.json")
            with open(tools, "w") as handle:
                json.dump([{"type": "function", "function": {"name": "weather",
                                                             "parameters": STRICT_PASS_DOC["tool_schemas"]["weather"]}}], handle)
            code, out, err = run_cli("capture", "--profile", "openai", "--schemas", tools, raw)
            self.assertEqual(code, 0, err)
            envelope_doc = json.loads(out)
            self.assertEqual(len(envelope_doc["chunks"]), 2)
            self.assertEqual(envelope_doc["meta"]["sse_comment_lines"], 1)
            self.assertNotIn("fp_x", out)
            code, out, err = run_cli("-", stdin=out.encode())
            self.assertEqual(code, 0, err)
            self.assertEqual(json.loads(out)["calls"][0]["arguments"], '{"city":"Paris"}')

    def test_capture_errors_are_usage_errors_with_a_line_number(self):
        code, out, err = run_cli("capture", "--profile", "openai", "-", stdin=b"data: {\"a\":1}\n\ndata: {nope}\n\n")
        self.assertEqual((code, out), (3, ""))
        self.assertIn("line 3", err)
        code, out, err = run_cli("capture", "--profile", "bedrock", "-", stdin=b"")
        self.assertEqual((code, out), (3, ""))
        self.assertIn("empty", err)
        self.assertEqual(run_cli("capture", "--profile", "watsonx", "-", stdin=b"")[0], 3)

    def test_adapter_output_difference_blocks_the_turn(self):
        with tempfile.TemporaryDirectory() as folder:
            adapter = os.path.join(folder, "adapter.json")
            with open(adapter, "w") as handle:
                json.dump([{"id": "call_1", "name": "weather", "arguments": "{\"city\":\"Paris\"}"}], handle)
            self.assertEqual(run_cli("-", "--adapter-output", adapter, stdin=dumps(STRICT_PASS_DOC))[0], 0)
            with open(adapter, "w") as handle:
                json.dump([{"id": "call_1", "name": "weather", "arguments": "{\"city\":\"Par\"}"}], handle)
            code, out, _ = run_cli("-", "--adapter-output", adapter, stdin=dumps(STRICT_PASS_DOC))
            self.assertEqual(code, 1)
            report = json.loads(out)
            self.assertEqual([f["code"] for f in report["findings"]], ["adapter_mismatch"])
            self.assertFalse(report["executable"])
            self.assertEqual(run_cli("-", "--adapter-output", os.path.join(folder, "none.json"),
                                     stdin=dumps(STRICT_PASS_DOC))[0], 3)


class ModuleForm(unittest.TestCase):
    """README: `PYTHONPATH=scripts python3 -m validate_tool_stream` is the same command."""

    @slow("a real process: the module form")
    def test_module_form_matches_script_form(self):
        import subprocess
        import sys

        from support import ROOT
        fixture = os.path.join(FIXTURES, "openai", "valid-fragmented-single-call.json")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=os.path.join(ROOT, "scripts"))
        proc = subprocess.run([sys.executable, "-m", "validate_tool_stream", fixture], capture_output=True,
                              env=env, cwd=ROOT, timeout=120)
        code, out, _ = run_cli(fixture)
        self.assertEqual((proc.returncode, code), (0, 0))
        self.assertEqual(proc.stdout.decode("utf-8"), out)
        self.assertEqual(json.loads(out)["status"], "pass")


class EscapingExceptions(unittest.TestCase):
    """Inputs that once ended in "internal error" (issue 11, item 1): each is a verdict or a usage error."""

    CALL = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{\"a\":\"x\"}"}}

    def envelope(self, schema):
        return {"profile": "openai", "tool_schemas": {"f": schema}, "chunks": [
            {"choices": [{"index": 0, "delta": {"tool_calls": [self.CALL]}, "finish_reason": "tool_calls"}]}]}

    def test_counts_and_indices_beyond_the_integer_digit_limit_get_a_verdict(self):
        # a count is a documented limit (limit_exceeded); an index that points nowhere is unsupported
        for schema, code in (
                ({"type": "object", "properties": {"a": {"pattern": "a{" + "9" * 5000 + "}"}}}, "limit_exceeded"),
                ({"type": "object", "properties": {"a": {"pattern": "a{1," + "9" * 5000 + "}"}}}, "limit_exceeded"),
                ({"type": "object", "$defs": {"l": [{"type": "string"}]},
                  "properties": {"a": {"$ref": "#/$defs/l/" + "1" * 5000}}}, "unsupported_schema")):
            with self.subTest(schema=str(schema)[:60]):
                self.assertEqual(codes(vts.validate_envelope(self.envelope(schema))), [code])

    def test_schema_budget_out_of_range_is_refused(self):
        for bad in ("1e12", "nan", "inf", "0"):
            with self.subTest(value=bad):
                code, out, err = run_cli("-", "--max-schema-seconds", bad, stdin=dumps(STRICT_PASS_DOC))
                self.assertEqual((code, out), (3, ""))
                self.assertNotIn("internal error", err)
        for kwargs in ({"max_schema_seconds": 1e10}, {"max_schema_seconds": float("nan")}, {"max_depth": 0},
                       {"max_calls": True}, {"max_findings": 1.5}):
            with self.subTest(limits=kwargs), self.assertRaises(ValueError):
                vts.Limits(**kwargs)

    @slow("a real process whose standard input is closed")
    def test_closed_standard_input_is_a_usage_error(self):
        proc = subprocess.run([sys.executable, SCRIPT, "-"], stdin=subprocess.DEVNULL, capture_output=True,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), timeout=60,
                              preexec_fn=lambda: os.close(0))
        self.assertEqual(proc.returncode, 3)
        self.assertIn(b"standard input", proc.stderr)
        self.assertNotIn(b"internal error", proc.stderr)

    def test_a_narrow_output_encoding_never_crashes_the_text_report(self):
        # a schema_violation message quotes the failing value; an ascii stdout raised UnicodeEncodeError
        doc = self.envelope({"type": "object", "properties": {"a": {"enum": ["x"]}}})
        doc["chunks"][0]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = '{"a":"caf\u00e9"}'
        code, out, err = run_cli("-", "--report", "text", stdin=dumps(doc), encoding="ascii")  # PYTHONIOENCODING=ascii
        self.assertEqual(code, 1, err)
        self.assertIn("schema_violation", out)
        self.assertIn("caf\\xe9", out)

    def test_interrupt_says_interrupted(self):
        import io
        from unittest import mock

        err = io.StringIO()
        with mock.patch.object(vts, "run", side_effect=KeyboardInterrupt), mock.patch.object(sys, "stderr", err):
            self.assertEqual(vts.main(["x"]), 3)
        self.assertIn("interrupted", err.getvalue())
        self.assertNotIn("internal error", err.getvalue())

# ---------------------------------------------------------------------------------------------------
# The seed's release criteria, checked through the real command line (was test_objective_verification.py).
# ---------------------------------------------------------------------------------------------------


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

# ---------------------------------------------------------------------------------------------------
# Installable, folders and JSON Lines (was test_ci_integration.py, issue 12).
# ---------------------------------------------------------------------------------------------------


class Installable(unittest.TestCase):
    @slow("a real process: the script run by its shebang")
    def test_the_script_is_executable_with_its_shebang(self):
        with open(SCRIPT, "rb") as handle:
            self.assertEqual(handle.readline(), b"#!/usr/bin/env python3\n")
        self.assertTrue(os.stat(SCRIPT).st_mode & stat.S_IXUSR)
        listed = subprocess.run(["git", "ls-files", "-s", "scripts/validate_tool_stream.py"], cwd=ROOT,
                                capture_output=True, text=True)
        if listed.returncode == 0 and listed.stdout:
            self.assertTrue(listed.stdout.startswith("100755"), listed.stdout)   # the mode git checks out
        proc = subprocess.run([SCRIPT, "--version"], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual((proc.returncode, proc.stdout.strip()), (0, f"{vts.TOOL} {vts.VERSION}"))

    def test_pyproject_declares_the_single_module_and_its_command(self):
        try:
            import tomllib
        except ImportError:  # Python 3.10
            self.skipTest("tomllib needs Python 3.11")
        with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
            project = tomllib.load(handle)
        self.assertEqual(project["project"]["dependencies"], [])
        self.assertEqual(project["project"]["version"], vts.VERSION)
        self.assertEqual(project["project"]["scripts"], {"validate-tool-stream": "validate_tool_stream:main"})
        self.assertEqual(project["tool"]["setuptools"]["py-modules"], ["validate_tool_stream"])
        self.assertEqual(project["tool"]["setuptools"]["package-dir"], {"": "scripts"})
        self.assertTrue(callable(vts.main))

    def test_pre_commit_hook_runs_the_real_command(self):
        with open(os.path.join(ROOT, ".pre-commit-hooks.yaml"), encoding="utf-8") as handle:
            text = handle.read()
        self.assertIn("- id: validate-tool-stream", text)
        self.assertIn("language: python", text)
        entry = re.search(r"^\s*entry: (.+)$", text, re.M).group(1).split()
        self.assertEqual(entry[0], "validate-tool-stream")       # the console script of pyproject.toml
        with Folder({"fixtures/a.json": dict(PASS_DOC, expect={"status": "pass"}),
                     "fixtures/b.json": dict(BLOCKED_DOC, expect={"status": "pass"})}) as folder:
            code, out, err = run_cli(*entry[1:], folder.file("fixtures/a.json"), folder.file("fixtures/b.json"))
            self.assertEqual(code, 1)
            self.assertNotIn("a.json", out)                       # --quiet: only the failing fixture
            self.assertIn("b.json", out)
            files = re.search(r"^\s*files: (.+)$", text, re.M).group(1)
            self.assertTrue(re.search(files, "fixtures/openai/x.json"))
            self.assertFalse(re.search(files, "package.json"))

    def test_help_lists_every_subcommand_run_dispatches(self):
        # run() dispatches from _SUBCOMMANDS and --help lists that table: each name once, with its line
        from unittest import mock

        code, out, _ = run_cli("--help")
        self.assertEqual(code, 0)
        listing = out.split("subcommands (each has its own --help):\n", 1)[1].splitlines()
        self.assertEqual(listing, [f"  {name:<9} {line}" for name, (_, line) in vts._SUBCOMMANDS.items()])
        self.assertEqual(list(vts._SUBCOMMANDS), ["capture", "pin", "serve", "conform"])
        for name, (_, line) in vts._SUBCOMMANDS.items():
            with self.subTest(name=name):
                self.assertTrue(line and "\n" not in line and len(f"  {name:<9} {line}") <= 120)
                code, out, err = run_cli(name, "--help")
                self.assertEqual((code, err), (0, ""))
                self.assertIn(f" {name} ", out.splitlines()[0] + " ")
                with mock.patch.dict(vts._SUBCOMMANDS, {name: (lambda argv: 42, line)}):
                    self.assertEqual(vts.run([name, "x"]), 42)   # dispatched through the table, nowhere else

    def test_help_lists_the_subcommands_and_options_are_never_abbreviated(self):
        code, out, _ = run_cli("--help")
        self.assertEqual(code, 0)
        for word in ("capture", "pin", "--report", "junit", "github", "--quiet", "--exclude", "--allow-not-applicable"):
            self.assertIn(word, out)
        code, out, err = run_cli(os.path.join(FIXTURES, "openai"), "--max-dept", "3")
        self.assertEqual((code, out), (3, ""))
        self.assertIn("--max-dept", err)
        code, _, err = run_cli("-", "--max-depth", "x", stdin=b"{}")
        self.assertEqual(code, 3)
        self.assertIn("argument --max-depth", err)
        for argv, bad in ((["--hel"], "--hel"), (["capture", "--prof", "openai", "-"], "--prof"),
                          (["pin", "--allow", "x.json"], "--allow")):
            code, out, err = run_cli(*argv, stdin=b"")
            self.assertEqual((code, out), (3, ""))
            self.assertIn(f"unknown option {bad} ", err)


class ReviewFindings(unittest.TestCase):
    """The review of issue 12, one regression each."""

    def test_linked_folders_are_followed_once_and_unreadable_ones_refused(self):
        with Folder({"a/x.json": PASS_DOC, "b/y.json": BLOCKED_DOC}) as folder:
            os.symlink(folder.file("b"), folder.file("a/linked"))          # a linked folder is checked
            os.symlink(folder.file("a"), folder.file("a/loop"))            # a loop is walked once
            code, out, _ = run_cli(folder.file("a"))
            self.assertEqual(code, 1)
            self.assertEqual(json.loads(out.splitlines()[-1])["summary"]["fixtures"], 2)
        with self.assertRaises(vts.UsageError):       # a folder that cannot be listed (root reads everything here)
            def failing(*_args, **_kwargs):
                raise PermissionError(13, "Permission denied", "/x")
            original = os.scandir
            os.scandir = failing
            try:
                vts._walk_json(ROOT)
            finally:
                os.scandir = original

    def test_json_lines_keep_unicode_line_separators_inside_strings(self):
        doc = json.loads(json.dumps(PASS_DOC))
        doc["chunks"][0]["choices"][0]["delta"]["content"] = "a\u2028b\u2029c\u0085d"
        body = "\n".join(json.dumps(c, ensure_ascii=False) for c in doc["chunks"]).encode("utf-8")
        envelope, _ = vts.sse_to_envelope(body, "openai", doc["tool_schemas"], redact=False)
        self.assertEqual(len(envelope["chunks"]), 2)
        self.assertEqual(vts.validate_envelope(envelope)["status"], "pass")

    def test_junit_is_ascii_and_quiet_json_is_json_lines(self):
        with Folder({"caf\u00e9.json": BLOCKED_DOC}) as folder:
            _, junit, _ = run_cli(folder.path, "--report", "junit", encoding="cp1252")   # PYTHONIOENCODING=cp1252
            junit.encode("ascii")
            self.assertTrue(ET.fromstring(junit).find("testsuite/testcase").get("name").endswith("caf\u00e9.json"))
            code, out, _ = run_cli(folder.file("caf\u00e9.json"), "--quiet")
            self.assertEqual(code, 1)
            lines = [json.loads(line) for line in out.splitlines()]
            self.assertEqual((lines[0]["status"], lines[1]["summary"]["blocked"]), ("blocked", 1))

    def test_pin_keeps_crlf_tabs_and_stays_stable(self):
        plain = {k: v for k, v in PASS_DOC.items()}
        with Folder({"crlf.json": json.dumps(plain, indent=2).replace("\n", "\r\n") + "\r\n",
                     "tabs.json": json.dumps(plain, indent="\t") + "\n",
                     "notobj.json": json.dumps(dict(plain, expect="x"), indent=2),
                     "typo.json": json.dumps(dict(plain, expect={"code": []}), indent=2)}) as folder:
            code, _, err = run_cli("pin", folder.path, "--allow-invalid")
            self.assertEqual(code, 3)
            self.assertIn("typo.json: not pinned", err)
            with open(folder.file("crlf.json"), "rb") as handle:
                data = handle.read()
            self.assertEqual(data.count(b"\n"), data.count(b"\r\n"))
            with open(folder.file("tabs.json"), encoding="utf-8") as handle:
                self.assertIn('\n\t"expect": {\n\t\t"status": "pass"', handle.read())
            self.assertEqual(run_cli(folder.path, "--expect", "--exclude", "typo.json")[0], 0)

    def test_har_entry_with_schemas_keeps_the_request_block(self):
        request = {"model": "m", "tools": [{"type": "function", "function": {"name": "weather", "parameters": {}}}],
                   "tool_choice": "required", "parallel_tool_calls": False}
        sse = "".join(f"data: {json.dumps(c)}\n\n" for c in PASS_DOC["chunks"]) + "data: [DONE]\n\n"
        har = {"log": {"entries": [{"request": {"url": "https://x.test/v1/chat/completions",
                                                "postData": {"text": json.dumps(request)}},
                                    "response": {"content": {"text": sse}}}]}}
        with Folder({"s.har": har, "tools.json": {"weather": {"type": "object"}}}) as folder:
            code, out, err = run_cli("capture", "--profile", "openai", "--entry", "0", "--schemas",
                                     folder.file("tools.json"), folder.file("s.har"))
            self.assertEqual(code, 0, err)
            envelope = json.loads(out)
            self.assertEqual(envelope["request"]["tool_choice"], "required")
            self.assertEqual(envelope["tool_schemas"], {"weather": {"type": "object"}})
            self.assertEqual(run_cli("capture", "--profile", "openai", "--entry", "\u00b2", folder.file("s.har"))[0], 3)

    def test_github_points_at_the_profile_and_the_expect_block(self):
        text = json.dumps(dict(PASS_DOC, profile="watsonx", expect={"status": "pass"}), indent=2)
        lines = text.splitlines()
        with Folder({"g.json": text}) as folder:
            _, out, _ = run_cli(folder.file("g.json"), "--report", "github")
            profile_line = [n for n, line in enumerate(lines, 1) if line.startswith('  "profile"')][0]
            self.assertIn(f",line={profile_line},col=3::unknown_profile", out)
            _, out, _ = run_cli(folder.file("g.json"), "--report", "github", "--expect")
            expect_line = [n for n, line in enumerate(lines, 1) if line.startswith('  "expect"')][0]
            self.assertIn(f",line={expect_line},col=3::expect: ", out)

# ---------------------------------------------------------------------------------------------------
# What CI sees of the command line (was test_ci_safety.py, issue 22).
# ---------------------------------------------------------------------------------------------------


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


class SpecialFiles(unittest.TestCase):
    FIXTURE = os.path.join(ROOT, "fixtures", "openai", "valid-fragmented-single-call.json")

    @unittest.skipUnless(hasattr(os, "mkfifo"), "no named pipes here")
    def test_a_pipe_in_a_fixture_folder_is_refused_not_waited_on(self):
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy(SpecialFiles.FIXTURE, os.path.join(folder, "a.json"))
            os.mkfifo(os.path.join(folder, "b.json"))
            code, out, err = run_cli(folder)
            self.assertEqual((code, out), (3, ""))
            self.assertIn("b.json is not a regular file", err)

    @unittest.skipUnless(os.path.exists("/dev/fd/0"), "no /dev/fd here")
    @slow("a real process reading a pipe")
    def test_a_pipe_given_by_name_is_read(self):
        with open(SpecialFiles.FIXTURE, "rb") as handle:
            data = handle.read()
        proc = subprocess.run([sys.executable, SCRIPT, "--quiet", "/dev/fd/0"], input=data, capture_output=True,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)


if __name__ == "__main__":
    unittest.main()


class ReadingTheInput(unittest.TestCase):
    """The CLI reads a file at its size, never a buffer of max_input_bytes first: the bytes up to the limit and
    one more (which says the input is over it), from a file, a pipe or an in-memory stream alike."""

    def test_up_to_the_limit_and_one_byte_more(self):
        import io
        limit = 1000
        with tempfile.TemporaryDirectory() as folder:
            for size in (0, 1, limit - 1, limit, limit + 1, limit + 7, 3 * limit):
                content = bytes(range(256)) * (size // 256 + 1)
                content = content[:size]
                path = os.path.join(folder, f"f{size}")
                with open(path, "wb") as handle:
                    handle.write(content)
                with self.subTest(size=size):
                    with open(path, "rb") as handle:
                        self.assertEqual(vts._read_limited(handle, limit), content[:limit + 1])
                    self.assertEqual(vts._read_limited(io.BytesIO(content), limit), content[:limit + 1])
                    read, write = os.pipe()
                    with open(read, "rb") as pipe, open(write, "wb") as out:
                        out.write(content)
                        out.close()
                        self.assertEqual(vts._read_limited(pipe, limit), content[:limit + 1])
                    self.assertEqual(vts._read_input(path, limit), content[:limit + 1])
