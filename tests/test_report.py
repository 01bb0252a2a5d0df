"""Validation, gate and report: the report formats (json, text, github, junit) and what they show."""

import json
import os
import random
import re
import unittest
import xml.etree.ElementTree as ET

from support import BLOCKED_DOC, envelope, Folder, one_chunk_per_line, PASS_DOC, run_cli, vts


# ---------------------------------------------------------------------------------------------------
# The report formats (was test_ci_integration.py, issue 12).
# ---------------------------------------------------------------------------------------------------


EMPTY_DOC = envelope("openai", [{"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}])


class ReportFormats(unittest.TestCase):
    def test_output_always_names_the_fixture(self):
        with Folder({"a.json": PASS_DOC}) as folder:
            code, out, _ = run_cli(folder.file("a.json"))
            self.assertEqual(json.loads(out)["fixture"], folder.file("a.json"))
            code, out, _ = run_cli(folder.file("a.json"), "--report", "text")
            self.assertEqual(out.splitlines()[0], "== " + folder.file("a.json"))

    def test_junit_one_case_per_fixture(self):
        with Folder({"a.json": PASS_DOC, "b.json": BLOCKED_DOC, "c.json": EMPTY_DOC}) as folder:
            code, out, _ = run_cli(folder.path, "--report", "junit")
            self.assertEqual(code, 1)
            root = ET.fromstring(out)
            self.assertEqual(root.tag, "testsuites")
            suite = root.find("testsuite")
            self.assertEqual((root.get("tests"), root.get("failures")), ("3", "2"))
            cases = {os.path.basename(case.get("name")): case for case in suite.findall("testcase")}
            self.assertEqual(sorted(cases), ["a.json", "b.json", "c.json"])
            self.assertEqual((suite.get("tests"), suite.get("failures"), suite.get("skipped")), ("3", "2", "0"))
            self.assertIsNone(cases["a.json"].find("failure"))
            failure = cases["b.json"].find("failure")
            self.assertEqual(failure.get("message"), "blocked: missing_terminal")
            self.assertIn("missing_terminal: ", failure.text)
            self.assertEqual(cases["c.json"].find("failure").get("type"), "not_applicable")
            code, out, _ = run_cli(folder.path, "--report", "junit", "--allow-not-applicable", "--exclude", "b.json")
            self.assertEqual(code, 0)
            suite = ET.fromstring(out).find("testsuite")
            self.assertEqual((suite.get("tests"), suite.get("failures"), suite.get("skipped")), ("2", "0", "1"))

    def test_junit_uses_only_the_common_schema(self):
        # the elements and attributes of Jenkins' junit-10.xsd, which GitHub and GitLab readers accept
        allowed = {"testsuites": {"name", "time", "tests", "failures", "disabled", "errors"},
                   "testsuite": {"name", "tests", "failures", "errors", "time", "disabled", "skipped", "timestamp",
                                 "hostname", "id", "package", "file", "log", "url", "version"},
                   "testcase": {"name", "assertions", "time", "classname", "status"},
                   "failure": {"message", "type"}, "skipped": {"message"}, "system-out": set()}
        with Folder({"a.json": PASS_DOC, "b.json": BLOCKED_DOC, "c.json": EMPTY_DOC}) as folder:
            _, out, _ = run_cli(folder.path, "--report", "junit", "--allow-not-applicable")
        self.assertTrue(out.startswith('<?xml version="1.0" encoding="UTF-8"?>'))
        for element in ET.fromstring(out).iter():
            self.assertIn(element.tag, allowed)
            self.assertLessEqual(set(element.attrib), allowed[element.tag], element.tag)
        self.assertEqual({"name", "tests"} - set(ET.fromstring(out).find("testsuite").attrib), set())

    def test_junit_carries_expect_mismatches_and_odd_characters_safely(self):
        doc = dict(BLOCKED_DOC, expect={"status": "pass"})
        doc["chunks"] = [dict(doc["chunks"][0], choices=[{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_\u0001\ud800", "type": "function", "function": {"name": "weather", "arguments": "{"}}]}}])]
        with Folder({"odd \u00e9.json": json.dumps(doc)}) as folder:
            code, out, _ = run_cli(folder.path, "--report", "junit", "--expect")
            self.assertEqual(code, 1)
            case = ET.fromstring(out).find("testsuite/testcase")
            self.assertEqual(case.find("failure").get("type"), "expect_mismatch")
            self.assertIn("status: expected", case.find("failure").get("message"))

    def test_github_annotations_point_at_the_chunks_line(self):
        doc = dict(PASS_DOC, chunks=PASS_DOC["chunks"] + [PASS_DOC["chunks"][1]])   # a late fragment: chunk 2
        text = one_chunk_per_line(doc)
        with Folder({"late.json": text}) as folder:
            code, out, _ = run_cli(folder.file("late.json"), "--report", "github")
            self.assertEqual(code, 1)
            lines = [line for line in out.splitlines() if line.startswith("::error")]
            self.assertTrue(lines)
            starts = [n for n, ln in enumerate(text.splitlines(), 1) if ln.startswith("  {")]
            chunk_line = starts[2]                                 # the late fragment is chunk 2
            for line in lines:
                match = re.match(r"::error file=([^,]+),line=(\d+),col=(\d+)::([a-z_]+): ", line)
                self.assertIsNotNone(match, line)
                self.assertEqual(match.group(1), folder.file("late.json").replace(":", "%3A").replace(",", "%2C"))
                self.assertEqual((int(match.group(2)), int(match.group(3))), (chunk_line, 3), line)

    def test_github_envelope_findings_point_at_the_key(self):
        doc = dict(PASS_DOC, chunks={"not": "a list"})
        text = json.dumps(doc, indent=2)
        key_line = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith('  "chunks"')][0]
        with Folder({"bad.json": text}) as folder:
            _, out, _ = run_cli(folder.file("bad.json"), "--report", "github")
            self.assertIn(f",line={key_line},col=3::invalid_fixture: ", out)

    def test_github_escapes_workflow_command_characters(self):
        self.assertEqual(vts._github_escape("a%b\r\nc:d,e"), "a%25b%0D%0Ac:d,e")
        self.assertEqual(vts._github_escape("a:b,c", True), "a%3Ab%2Cc")

    def test_quiet_exclude_and_allow_not_applicable(self):
        with Folder({"a.json": PASS_DOC, "skip/b.json": BLOCKED_DOC, "c.json": EMPTY_DOC}) as folder:
            code, out, _ = run_cli(folder.path, "--report", "text", "--quiet")
            self.assertEqual(code, 1)
            self.assertNotIn("a.json", out)
            self.assertIn("b.json", out)
            self.assertTrue(out.rstrip().splitlines()[-1].startswith("summary: fixtures 3"))
            code, out, _ = run_cli(folder.path, "--exclude", "*/skip/*", "--quiet")
            self.assertEqual(code, 2)                                  # c.json is not applicable
            code, out, _ = run_cli(folder.path, "--exclude", "*/skip/*", "--allow-not-applicable", "--quiet")
            self.assertEqual(code, 0)
            self.assertEqual(len(out.strip().splitlines()), 1)         # only the summary line
            self.assertEqual(run_cli(folder.path, "--exclude", "*.json")[0], 3)

    def test_an_unreadable_file_fails_before_anything_is_validated(self):
        with Folder({"a.json": PASS_DOC}) as folder:
            os.symlink("/nonexistent/x", folder.file("b.json"))
            code, out, err = run_cli(folder.path)
            self.assertEqual((code, out), (3, ""))
            self.assertIn("b.json", err)


class TextReport(unittest.TestCase):
    def test_characters_as_they_are_and_long_arguments_elided(self):
        args = json.dumps({"city": "K\u00f8benhavn \u2603", "note": "x" * 400}, ensure_ascii=False)
        doc = envelope("openai", [{"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_\u00e9", "type": "function", "function": {"name": "weather", "arguments": args}}]},
            "finish_reason": "tool_calls"}]}], {"weather": {"type": "object"}})
        code, out, _ = run_cli("-", "--report", "text", stdin=json.dumps(doc).encode("utf-8"))
        self.assertEqual(code, 0)
        call = out.splitlines()[2]
        self.assertIn('id="call_\u00e9"', call)
        self.assertIn("K\u00f8benhavn \u2603", call)
        raw = args.encode("utf-8")
        import hashlib
        self.assertTrue(call.endswith(f'..." ({len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()[:12]})'), call)
        self.assertLess(len(call), 400)
        code, out, _ = run_cli("-", "--report", "text", stdin=json.dumps(doc).encode("utf-8"), encoding="ascii")
        self.assertEqual(code, 0)                                      # an ASCII terminal gets escapes, no crash
        self.assertIn("K\\xf8benhavn", out)

# ---------------------------------------------------------------------------------------------------
# GitHub annotations' line numbers (was test_ci_safety.py, issue 22).
# ---------------------------------------------------------------------------------------------------


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


if __name__ == "__main__":
    unittest.main()
