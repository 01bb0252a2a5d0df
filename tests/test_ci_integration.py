"""issue 12: the tool where its users work -- install, CI report formats, pre-commit, pinning."""

import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

from support import FIXTURES, ROOT, SCRIPT, envelope, run_cli, slow, vts

PASS_DOC = envelope("openai", [
    {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"ci"}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": "ty\":\"Paris\"}"}}]}, "finish_reason": "tool_calls"}]},
], {"weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
BLOCKED_DOC = dict(PASS_DOC, chunks=PASS_DOC["chunks"][:1])
EMPTY_DOC = envelope("openai", [{"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}])


def one_chunk_per_line(doc):
    """An envelope written with each chunk on its own line (so chunk N starts on a known line)."""
    head = json.dumps({k: v for k, v in doc.items() if k != "chunks"})[:-1]
    lines = [head + ',\n "chunks": [']
    for n, item in enumerate(doc["chunks"]):
        lines.append("  " + json.dumps(item) + ("," if n < len(doc["chunks"]) - 1 else ""))
    lines.append(" ]\n}\n")
    return "\n".join(lines)


class Folder:
    def __init__(self, files):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = self.tmp.name
        for name, content in files.items():
            full = os.path.join(self.path, name)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as handle:
                handle.write(content if isinstance(content, str) else json.dumps(content, indent=2))

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.tmp.cleanup()

    def file(self, name):
        return os.path.join(self.path, name)


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
        text = json.dumps(dict(PASS_DOC, profile="cohere", expect={"status": "pass"}), indent=2)
        lines = text.splitlines()
        with Folder({"g.json": text}) as folder:
            _, out, _ = run_cli(folder.file("g.json"), "--report", "github")
            profile_line = [n for n, line in enumerate(lines, 1) if line.startswith('  "profile"')][0]
            self.assertIn(f",line={profile_line},col=3::unknown_profile", out)
            _, out, _ = run_cli(folder.file("g.json"), "--report", "github", "--expect")
            expect_line = [n for n, line in enumerate(lines, 1) if line.startswith('  "expect"')][0]
            self.assertIn(f",line={expect_line},col=3::expect: ", out)


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


class Pin(unittest.TestCase):
    def test_pin_writes_the_outcome_and_keeps_every_other_byte(self):
        text = one_chunk_per_line(PASS_DOC)
        with Folder({"a.json": text, "b.json": json.dumps(dict(BLOCKED_DOC, expect={"note": "keep"})),
                     "bad.json": {"profile": "cohere", "tool_schemas": {}, "chunks": []}}) as folder:
            code, out, err = run_cli("pin", folder.path)
            self.assertEqual(code, 3)                                  # bad.json refused
            self.assertIn("unknown_profile", err)
            with open(folder.file("a.json"), encoding="utf-8") as handle:
                pinned = handle.read()
            self.assertTrue(pinned.startswith(text.rstrip()[:-1].rstrip()))   # everything before is unchanged
            self.assertEqual(json.loads(pinned)["expect"], {
                "status": "pass", "codes": [],
                "calls": [{"id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'}]})
            with open(folder.file("b.json"), encoding="utf-8") as handle:
                self.assertEqual(json.loads(handle.read())["expect"], {
                    "status": "blocked", "codes": ["missing_terminal"],
                    "calls": [{"id": "call_1", "name": "weather", "arguments": '{"ci'}], "note": "keep"})
            with open(folder.file("bad.json"), encoding="utf-8") as handle:
                self.assertNotIn("expect", handle.read())
            code, out, _ = run_cli("pin", folder.path, "--exclude", "bad.json")
            self.assertEqual(code, 0)
            self.assertEqual(out.count("already pinned"), 2)
            self.assertEqual(run_cli(folder.path, "--expect", "--exclude", "bad.json")[0], 0)
            self.assertEqual(run_cli("pin", folder.file("bad.json"), "--allow-invalid")[0], 0)
            self.assertEqual(run_cli(folder.file("bad.json"), "--expect")[0], 0)
            self.assertEqual(run_cli("pin", "-", stdin=b"{}")[0], 3)


if __name__ == "__main__":
    unittest.main()
