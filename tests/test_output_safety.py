"""Output safety: every byte the tool writes is safe for a terminal and for a CI log reader.

A fixture, a captured body and even a fixture's file name are untrusted text: a model chose the
call ids, tool names and arguments, and whoever committed the file chose its name and its schemas.
Whatever the tool prints about them ends up in two kinds of readers:

* a terminal, which acts on control characters (ESC sequences that recolour, retitle or clear the
  screen, BEL, the C1 introducer U+009B), treats U+2028/U+2029 as line breaks, and lets the bidi
  controls reorder what a person sees;
* the GitHub Actions runner, which reads every line a step writes with two parsers:
    - the legacy one recognises "##[command]" ANYWHERE in a line ("##[warning]", "##[group]",
      "##[set-output ...]");
    - the v2 workflow-command parser takes a line whose text, after leading whitespace, starts
      with "::" as a command: `::stop-commands::TOKEN` switches command processing off,
      `::add-mask::` hides text, `::set-output`, `::endgroup::`, `::error` ... all act.

So the contract checked here, line by line, on stdout AND stderr of every run (assert_runner_safe):

1. no raw control character but the line feed that ends a line: no C0 (U+0000-U+001F but "\\n"),
   no DEL, no C1 (U+0080-U+009F), no U+2028/U+2029, no bidi control (U+200E, U+200F,
   U+202A-U+202E, U+2066-U+2069), no lone surrogate (a non-UTF-8 byte decodes to one here);
   the tool writes `\\uXXXX` escapes for such characters instead;
2. the legacy prefix "##[" appears nowhere;
3. a line starting (after leading whitespace) with "::" appears only on stdout of
   `--report github`, and there only in the tool's own annotation shape
   `::error|warning|notice file=VALUE[,line=L,col=C]::MESSAGE`, VALUE holding no raw ":" "," CR LF
   (the tool writes %3A %2C %0D %0A), never any other command.

Rule 1's "line feed that ends a line" is checked too (assert_own_lines): where a mode's lines have
a known start (text and github reports, the stderr of --expect, capture and pin), every line must
start that way, so a raw line feed copied from the input (a file name) cannot start a line of
planted text, whatever that text starts with.  JSON reports must parse, JUnit must be well-formed.

Hostile strings are planted in every position a message can quote: the fixture's file name (and
its folder's), the call id, the tool name (known and unknown), the argument fragments (values and
object keys, some characters raw in the JSON text, some as escapes), the tool schema (a property
name, an `enum` value, a `pattern`, a `const`), the profile, the `expect` block, a raw SSE body for
`capture` (with an SSE comment and an unknown field line) and the files `pin` rewrites or refuses.
Some fixtures pass, some are blocked (schema_violation, unknown_tool, malformed_json,
unknown_profile) and every expect block but one is wrong.  Exit codes are not part of this
contract: only "0..3, and no Traceback".
"""

import subprocess
import json
import os
import re
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

from support import ROOT, SCRIPT, run_cli, run_process, slow, write

# --- the contract ------------------------------------------------------------------------------

# Rule 1: what a terminal or a log viewer acts on (the line feed is the line end and is split off).
_UNSAFE_CHARACTER = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e"
                               "\u2066-\u2069\ud800-\udfff]")
# Rule 3: the one workflow command the tool may write, on stdout of --report github only.
_ANNOTATION = re.compile(r"::(?:error|warning|notice) file=[^:,\r\n]+(?:,line=\d+,col=\d+)?::[^\r\n]*")


def runner_problems(text, github=False):
    """The lines of `text` that break rules 1-3 (see the module docstring), one entry per rule broken."""
    problems = []
    for number, line in enumerate(text.split("\n"), 1):
        shown = repr(line if len(line) <= 160 else line[:160] + "...")
        bad = sorted({f"U+{ord(char):04X}" for char in _UNSAFE_CHARACTER.findall(line)})
        if bad:
            problems.append(f"line {number}: raw {', '.join(bad)}: {shown}")
        if "##[" in line:
            problems.append(f"line {number}: legacy command prefix '##[': {shown}")
        if line.lstrip().startswith("::"):
            if not github:
                problems.append(f"line {number}: a workflow command outside --report github: {shown}")
            elif not _ANNOTATION.fullmatch(line):
                problems.append(f"line {number}: a workflow command that is not the tool's annotation: {shown}")
    return problems


def assert_runner_safe(testcase, text, github=False, label="output"):
    """Fail `testcase` when `text` (all of one stream) breaks rules 1-3; github: stdout of --report github."""
    problems = runner_problems(text, github)
    if problems:
        listed = "\n  ".join(problems[:15]) + (f"\n  ... and {len(problems) - 15} more" if len(problems) > 15 else "")
        testcase.fail(f"{label}: {len(problems)} unsafe line(s) for a terminal or the Actions runner:\n  {listed}")


def assert_own_lines(testcase, text, starts, label="output"):
    """Rule 1's other half: a line feed only ends a line the tool composed.

    A raw line feed copied from the input (a file name may hold one) would start a line of
    planted text, which rules 2 and 3 only judge by what it happens to start with; so each
    line must start the way the tool starts its own lines in that mode (`starts`).
    """
    stray = [f"line {number}: {line[:160]!r}" for number, line in enumerate(text.split("\n")[:-1], 1)
             if not line.startswith(tuple(starts))]
    if not text.endswith("\n") and text:
        stray.append(f"the last line has no line end: {text.rsplit(chr(10), 1)[-1][:160]!r}")
    if stray:
        testcase.fail(f"{label}: {len(stray)} line(s) not started by the tool (expected {list(starts)}):\n  "
                      + "\n  ".join(stray[:15]))


def json_documents(testcase, text, label="stdout"):
    """--report json writes one JSON document, or JSON Lines: a raw line end inside would break either."""
    try:
        return [json.loads(text)]
    except ValueError:
        pass
    try:
        return [json.loads(line) for line in text.split("\n") if line]
    except ValueError as exc:
        testcase.fail(f"{label} is neither one JSON document nor JSON Lines: {exc}")


def run_tool(*args, stdin=None, process=False):
    """Run the CLI (in this process, or as a real process) -> (exit code, stdout, stderr).

    The streams are decoded with surrogateescape instead of strict UTF-8, so a byte that is not
    UTF-8 becomes a lone surrogate that rule 1 reports, not an error in this test.
    """
    run = run_process if process else run_cli
    return run(*args, stdin=stdin, decode="surrogateescape")


# How the tool starts its own lines, per mode (see assert_own_lines).
TEXT_LINES = ("== ", "PASS: ", "BLOCKED: ", "NOT APPLICABLE: ", "  ", "summary: ")
GITHUB_LINES = ("::error file=", "::warning file=", "::notice file=", "summary: ")
EXPECT_LINES = ("expect: ", "  ")             # stderr of --expect
MESSAGE_LINES = ("validate_tool_stream", "validate-tool-stream")   # errors and warnings on stderr


class SafeRuns(unittest.TestCase):
    """A TestCase whose run_safe() checks both streams of a CLI run against the contract."""

    def run_safe(self, *args, stdin=None, github=False, out_lines=None, err_lines=None, process=False):
        """Run the CLI; check rules 1-3 on stdout and stderr, and optionally how each line starts.
        process=True runs the real script in a subprocess (every byte the process writes)."""
        code, out, err = run_tool(*args, stdin=stdin, process=process)
        self.assertIn(code, (0, 1, 2, 3), f"exit code {code}; stderr: {err[-600:]!r}")
        for name, text, starts in (("stdout", out, out_lines), ("stderr", err, err_lines)):
            with self.subTest(stream=name):
                self.assertNotIn("Traceback", text, f"{name}: {text[-1200:]!r}")
                assert_runner_safe(self, text, github=github and name == "stdout", label=name)
            if starts is not None:
                with self.subTest(stream=name, check="own lines"):
                    assert_own_lines(self, text, starts, label=name)
        return code, out, err


# --- the planted strings ---------------------------------------------------------------------------

def hostile(tag):
    """A short string carrying everything both runner parsers and a terminal act on."""
    return (f"{tag}\n::stop-commands::tok{tag}\n  ::add-mask::{tag}\r\n::endgroup::##[warning]{tag}"
            "\x1b[31m\x1b]0;title\x07\x00\x0b\x0c\x7f\x9b\x85\u2028\u2029\u202e\u2066\u200f"
            f"\n\u3000::add-mask::{tag}\n\u00a0::endgroup::")


KNOWN_TOOL = "get_weather\n::warning::tool\x1b]0;t\x07##[error]\u202e\x9b"     # a key of tool_schemas
UNKNOWN_TOOL = "rm\n::add-mask::u\x1b[2J##[group]\u2066\x7f"                     # absent from tool_schemas
CALL_ID = "call_\n::endgroup::\x1b[1m##[section]\u2028"
ODD_ID = CALL_ID + "\ud800"             # a lone surrogate: blocks the call (invalid_unicode)
KEY = "\n::error::k\x1b"                  # a schema property name and an arguments key
VALUE = "##[set-output name=x]1\x07\x9b\u2029"
ENUM = "celsius\n::notice::e\x1b[0m##[debug]\u200f"
PATTERN = "^(ok|##[\\[]x|\n::stop-commands::p\x1b\u2029)$"     # the text "##[" is in the pattern itself
CONST = "c\r\n::set-output name=c::1\x7f##[warning]\u202a"

SCHEMA = {
    "type": "object",
    "description": hostile("description"),
    "properties": {KEY: {"type": "string"},
                   "unit": {"type": "string", "enum": ["fahrenheit", ENUM]},
                   "code": {"type": "string", "pattern": PATTERN},
                   "mode": {"const": CONST}},
    "required": [KEY],
    "additionalProperties": False,
}


def _chunk(delta, finish=None):
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1764680000, "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def chat_chunks(calls):
    """chat.completion.chunk objects for calls given as (id, name, [argument fragments])."""
    chunks = []
    for index, (call_id, name, fragments) in enumerate(calls):
        first = {"index": index, "id": call_id, "type": "function",
                 "function": {"name": name, "arguments": fragments[0]}}
        chunks.append(_chunk({"role": "assistant", "tool_calls": [first]} if index == 0 else {"tool_calls": [first]}))
        chunks.extend(_chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
                      for fragment in fragments[1:])
    chunks.append(_chunk({}, "tool_calls"))
    return chunks


def fragments(text, parts=3):
    step = max(1, len(text) // parts)
    return [text[:step], text[step:2 * step], text[2 * step:]]


def arguments_text(value):
    """JSON text of value: C0 characters as escapes (the parsed strings hold them), DEL, C1,
    U+2028 and the bidi controls raw (valid inside a JSON string)."""
    return json.dumps(value, ensure_ascii=False)


PASS_ARGUMENTS = arguments_text({KEY: VALUE, "unit": ENUM, "code": "ok", "mode": CONST})
VIOLATING_ARGUMENTS = arguments_text({
    KEY: VALUE,
    "unit": "kelvin\n::error::u\x1b[5m##[x]\u2028",                 # not in the enum (which is quoted)
    "code": "no\n::warning::c##[y]\x07",                             # does not match the pattern
    "mode": "other\n::notice::m##[z]",                               # not the const
    "\n::add-mask::extra\x1b##[w]\u202e": 1,                         # additionalProperties: false
})
# Not JSON: a raw line feed inside a string, so the text itself carries a command line.
BROKEN_ARGUMENTS = '{"a": "\n::error::raw##[error]\x1b[31m\u2028"}'


def planted_envelope(calls, expect=None, profile="openai"):
    doc = {"profile": profile, "tool_schemas": {KNOWN_TOOL: SCHEMA}, "chunks": chat_chunks(calls),
           "meta": {"covers": hostile("meta"), "provider": hostile("provider"), "model": [hostile("model")],
                    "adapter": {hostile("adapter"): 1}}}
    if expect is not None:
        doc["expect"] = expect
    return json.dumps(doc, indent=2)   # ASCII with \\u escapes: the parsed strings hold the raw characters


PASSING = planted_envelope([(CALL_ID, KNOWN_TOOL, fragments(PASS_ARGUMENTS))],
                   {"status": "pass", "codes": [], "calls": [{"id": CALL_ID, "name": KNOWN_TOOL,
                                                             "arguments": PASS_ARGUMENTS}]})
# schema_violation messages quote the planted key, value, enum, pattern and const; the expect
# block is wrong in every member, so --expect prints differences quoting the planted strings.
VIOLATING = planted_envelope([(ODD_ID, KNOWN_TOOL, fragments(VIOLATING_ARGUMENTS))],
                     {"status": "pass", "codes": ["##[error]\n::warning::c\x1b"],
                      "calls": [{"id": hostile("id"), "name": hostile("name"), "arguments": hostile("args")}]})
UNKNOWN = planted_envelope([(hostile("id2"), UNKNOWN_TOOL, ["{}"])],
                   {"status": "blocked\n::error::s##[x]\x1b", "codes": ["unknown_tool"],
                    "calls": [{"id": "x\n::endgroup::##[y]", "name": UNKNOWN_TOOL + "!", "arguments": "{}"}]})
BROKEN = planted_envelope([(CALL_ID, KNOWN_TOOL, fragments(BROKEN_ARGUMENTS))],
                  {"status": "blocked", "codes": ["invalid_json\n::add-mask::c##[z]"]})
ODD_PROFILE = planted_envelope([(CALL_ID, KNOWN_TOOL, ["{}"])], {"status": hostile("status")},
                       profile="openai\n::error::p##[x]\x1b[31m")

# File names: Linux allows every byte but "/" and NUL; one name is not even UTF-8.  The runner
# trims any Unicode white space before "::" (U+3000, U+00A0 as well as spaces and tabs).
PASSING_NAME = "p\n::stop-commands::tok\n##[warning]x\x1b[31m\x07\u2028\n\u3000::add-mask::p.json"
VIOLATING_NAME = " \t::add-mask::secret,line=9:x\r\n  ::endgroup::\u202e\x9b\x7f\n\u00a0::endgroup::.json"
PLANTED = {
    PASSING_NAME: PASSING,
    VIOLATING_NAME: VIOLATING,
    "d\n::error::dir##[x]\x1b[1m/u\n::set-output name=a::b\n##[group]g\u2066\x85.json": UNKNOWN,
    os.fsdecode(b"b\xff\xfe\n::error::not-utf8##[x].json"): BROKEN,
    "q\x01\x1b]8;;file:x\x07link\x1b]8;;\x07\n::notice::n,file=a:b.json": ODD_PROFILE,
}


def plant(folder, files):
    """Write {relative name: text} under folder; SkipTest when the file system refuses a name."""
    for name, text in files.items():
        full = os.path.join(folder, name)
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        except (OSError, UnicodeError) as exc:
            raise unittest.SkipTest(f"this file system cannot hold the planted name {name!r}: {exc}") from None
    return folder


# How each report starts its stdout lines (json and junit are parsed instead).
REPORT_LINES = {"json": None, "junit": None, "text": TEXT_LINES, "github": GITHUB_LINES,
                "summary": None, "summary-json": None, "summary-markdown": None}   # the summaries: test_summary.py


class Planted(SafeRuns):
    """Runs over a temporary folder of planted fixtures (`self.folder`) and one planted file (`self.single`)."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.folder = os.path.join(cls._tmp.name, "fixtures\n::error::top##[x]")
        try:
            plant(cls.folder, PLANTED)
        except unittest.SkipTest:
            cls._tmp.cleanup()
            raise
        cls.single = os.path.join(cls.folder, VIOLATING_NAME)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def run_report(self, *args, stdin=None, process=False):
        """run_safe, plus the shape of the --report given in args (json when none) and of --expect's stderr."""
        report = args[args.index("--report") + 1] if "--report" in args else "json"
        code, out, err = self.run_safe(*args, stdin=stdin, github=report == "github", out_lines=REPORT_LINES[report],
                                       err_lines=EXPECT_LINES if "--expect" in args else MESSAGE_LINES,
                                       process=process)
        with self.subTest(check=f"--report {report} is well-formed"):
            if report in ("json", "summary-json"):
                json_documents(self, out)
            elif report == "junit":
                try:
                    ET.fromstring(out)
                except ET.ParseError as exc:
                    self.fail(f"--report junit is not well-formed XML: {exc}")
        return code, out, err

    def stdin_bytes(self):
        with open(self.single, "rb") as handle:
            return handle.read()


# --- the tests -----------------------------------------------------------------------------------

class TheChecker(unittest.TestCase):
    """The checks themselves (no CLI run): what they let through and what they report."""

    def test_it_accepts_the_tools_own_shapes(self):
        for text, github in (('{\n  "fixture": "a\\n::b#\\u0023[",\n  "x": "\\u001b"\n}\n', False),
                             ("== a%0A::b\nBLOCKED: x\n  schema_violation at position 1: y \\u001b\n", False),
                             ("::error file=a%0A%3A%2Cb,line=2,col=3::c: m :: %0A::x\n"
                              "::warning file=a,line=1,col=1::not_applicable: z\n::notice file=a::n\n"
                              "summary: fixtures 1\n", True)):
            with self.subTest(text=text):
                self.assertEqual(runner_problems(text, github), [])

    def test_it_reports_each_rule(self):
        cases = (("a\x1bb\n", False), ("a\x9b\n", False), ("a\u2028\n", False), ("\u202ea\n", False),
                 ("a\ud800\n", False), ("a\rb\n", False), ("a\tb\n", False), ("x ##[group]y\n", False),
                 ("  ::add-mask::x\n", False), ("\u3000::add-mask::x\n", False),
                 ("::error file=a,line=1,col=1::m\n", False), ("::stop-commands::t\n", True),
                 ("::error file=a:b,line=1,col=1::m\n", True), ("::error file=a,b::m\n", True),
                 ("  ::error file=a::m\n", True), ("::error::m\n", True), ("::set-output name=a::b\n", True))
        for text, github in cases:
            with self.subTest(text=text, github=github):
                self.assertEqual(len(runner_problems(text, github)), 1, runner_problems(text, github))

    def test_a_stray_line_is_reported(self):
        assert_own_lines(self, "pin: a\npinned b\n", ("pin: ", "pinned "))
        for text in ("pin: a\n:\\u003aendgroup:: b\n", "pin: a"):
            with self.subTest(text=text), self.assertRaises(AssertionError):
                assert_own_lines(self, text, ("pin: ", "pinned "))


class ReportModes(Planted):
    """Every report of a folder of planted fixtures and of one planted file; --quiet,
    --redact-arguments and standard input."""

    def test_every_report_of_a_folder(self):
        for report in ("json", "text", "junit", "github", "summary", "summary-json", "summary-markdown"):
            with self.subTest(report=report):
                self.run_report(self.folder, "--report", report)

    def test_every_report_of_one_file(self):
        for report in ("json", "text", "junit", "github"):
            with self.subTest(report=report):
                self.run_report(self.single, "--report", report)

    def test_quiet(self):
        for report in ("json", "text", "github"):
            with self.subTest(report=report):
                self.run_report(self.folder, "--report", report, "--quiet")

    def test_redact_arguments(self):
        self.run_report(self.folder, "--report", "text", "--redact-arguments")

    @slow("a real process: every byte the interpreter itself writes")
    def test_standard_input(self):
        self.run_report("-", "--report", "text", stdin=self.stdin_bytes(), process=True)


class Expect(Planted):
    """--expect: differences quoting the planted expect values, on stderr and in each report."""

    def test_every_report_of_a_folder(self):
        for report in ("json", "text", "junit", "github", "summary", "summary-json", "summary-markdown"):
            with self.subTest(report=report):
                self.run_report(self.folder, "--report", report, "--expect")

    def test_every_report_of_one_file(self):
        for report in ("json", "text", "junit", "github"):
            with self.subTest(report=report):
                self.run_report(self.single, "--report", report, "--expect")

    def test_ci_recipe_redacted_differences_and_standard_input(self):
        with self.subTest(run="--expect --report github --quiet"):
            self.run_report(self.folder, "--expect", "--report", "github", "--quiet")
        with self.subTest(run="--expect --redact-arguments"):
            self.run_report(self.folder, "--expect", "--report", "text", "--redact-arguments")
        with self.subTest(run="- --expect"):
            self.run_report("-", "--expect", "--report", "text", stdin=self.stdin_bytes())


def sse_event(payload):
    return "data: " + json.dumps(payload, ensure_ascii=False) + "\n\n"


GRAMMAR_TOOL = "g##[warning]x\x1b[31m\n::add-mask::g\u202e"   # short: a warning quotes its first 60 characters


def chat_request(*tools):
    """An OpenAI chat request body offering `tools` (the planted function tool first), forcing it."""
    function = {"type": "function", "function": {"name": KNOWN_TOOL, "parameters": SCHEMA}}
    return json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": hostile("prompt")}],
                       "tools": [function, *tools],
                       "tool_choice": {"type": "function", "function": {"name": KNOWN_TOOL}}})


class Capture(SafeRuns):
    """capture: a raw SSE body, schemas and a request whose ids, names, arguments, text, comments
    and field names are planted; the envelope on stdout, warnings and errors on stderr."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name

    def write(self, name, text):
        return os.path.join(plant(self.dir, {name: text}), name)

    def capture(self, *args):
        _, out, _ = self.run_safe("capture", "--profile", "openai", *args, err_lines=MESSAGE_LINES)
        if out:
            with self.subTest(check="the envelope is one JSON document"):
                json.loads(out)

    def test_a_planted_body_becomes_an_envelope(self):
        chunks = ([_chunk({"role": "assistant", "content": hostile("content")})]
                  + chat_chunks([(CALL_ID, KNOWN_TOOL, fragments(VIOLATING_ARGUMENTS)),
                                 (hostile("id2"), UNKNOWN_TOOL, ["{}"])]))
        body = (": ::warning::x ##[error] a comment\x1b[31m\u2028\n"
                + "".join(sse_event(chunk) for chunk in chunks) + "data: [DONE]\n\n")
        raw = self.write("raw\n::error::sse##[x]\x1b.sse", body)
        with self.subTest(run="capture"):
            self.capture(raw)
        with self.subTest(run="--schemas --no-redact"):
            schemas = self.write("tools\n::add-mask::s##[y]\u202e.json", json.dumps({KNOWN_TOOL: SCHEMA}))
            self.capture("--schemas", schemas, "--no-redact", raw)
        with self.subTest(run="--request with a grammar tool (a warning quoting its name)"):
            grammar = {"type": "custom", "custom": {"name": GRAMMAR_TOOL, "format": {
                "type": "grammar", "grammar": {"syntax": "lark", "definition": "start: /##[x]\n::error::g/"}}}}
            self.capture("--request", self.write("request\n::endgroup::##[z].json", chat_request(grammar)), raw)

    def test_refusals(self):
        body = (sse_event(_chunk({"role": "assistant"}))
                + "##[error]\x1b[2J\u202e ::warning::x\n"            # an unknown field: its name is all before ":"
                + "::warning::x ##[error]\n"                         # a comment, to the SSE parser
                + sse_event(_chunk({}, "stop")) + "data: [DONE]\n\n")
        with self.subTest(run="an unknown field line"):
            self.capture(self.write("field\n::error::f##[x].sse", body))
        with self.subTest(run="--request naming a tool twice"):
            duplicate = {"type": "function", "function": {"name": KNOWN_TOOL, "parameters": {}}}
            self.capture("--request", self.write("twice.json", chat_request(duplicate)),
                         self.write("ok.sse", "data: " + json.dumps(_chunk({}, "stop")) + "\n\ndata: [DONE]\n\n"))


PIN_OUT = ("pinned ", "already pinned ")
PIN_ERR = ("pin: ",)


class Pin(SafeRuns):
    """pin: the lines naming each file it rewrote (stdout) or refused (stderr)."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name

    def test_pin_a_copy_of_a_planted_fixture(self):
        plant(self.dir, {VIOLATING_NAME: VIOLATING})
        self.run_safe("pin", os.path.join(self.dir, VIOLATING_NAME), out_lines=PIN_OUT, err_lines=PIN_ERR)

    def test_pin_refuses_a_non_envelope(self):
        name = "list\n::stop-commands::tok\n##[warning]x\x1b[31m\u2028\n\u3000::add-mask::l.json"
        plant(self.dir, {name: json.dumps([hostile("item")])})
        self.run_safe("pin", os.path.join(self.dir, name), out_lines=PIN_OUT, err_lines=PIN_ERR)

    def test_pin_a_copy_of_the_planted_folder(self):
        folder = plant(os.path.join(self.dir, "fixtures\n::endgroup::##[x]"), PLANTED)
        self.run_safe("pin", folder, out_lines=PIN_OUT, err_lines=PIN_ERR)

# ---------------------------------------------------------------------------------------------------
# An unwritable standard output (was test_ci_safety.py, issue 22).
# ---------------------------------------------------------------------------------------------------


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


if __name__ == "__main__":
    unittest.main()
