"""--jsonl: one envelope per line of JSON Lines in, one report per line out, then the summary; and --jsonl-rows,
a database's executable-UDF rows (ClickHouse JSONEachRow) in, one {"result": REPORT} line per row out.

Every test runs the command line in this process (run_cli) or calls its pieces; nothing is timed.
"""

import io
import json
import os
import tempfile
import threading
import tracemalloc
import unittest
import xml.etree.ElementTree as ET

from support import (
    BLOCKED_DOC, FIXTURES, PASS_DOC, envelope, fixture_paths, run_cli, run_process, slow, vts, write,
)

NA_DOC = envelope("openai", [{"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}])
LATE_CHUNK = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": " "}}]}}]}
LATE_DOC = dict(PASS_DOC, chunks=PASS_DOC["chunks"] + [LATE_CHUNK])   # delta_after_terminal at position 2


def line(doc):
    return json.dumps(doc).encode("utf-8")


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def jsonl(*lines):
    return b"".join((item if isinstance(item, bytes) else line(item)) + b"\n" for item in lines)


def reports(out):
    """The per-line reports and the summary of a --jsonl json run."""
    rows = [json.loads(text) for text in out.splitlines()]
    return rows[:-1], rows[-1]["summary"]


def pinned(doc, status, codes):
    return dict(doc, expect={"status": status, "codes": codes})


def answered_line_by_line(lines, argv):
    """main(argv) reading LINES from a stdin that notes, at each readline, how many answer lines stdout holds by
    then: (exit code, those counts)."""
    seen = []

    class Stdin:
        def __init__(self, out):
            self.buffer, self.out = self, out

        def readline(self, size):
            seen.append(self.out.getvalue().count(b"\n"))
            return lines.pop(0) if lines else b""

    out = io.BytesIO()
    text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    saved = vts.sys.stdin, vts.sys.stdout
    vts.sys.stdin, vts.sys.stdout = Stdin(out), text
    try:
        code = vts.main(argv)
    finally:
        vts.sys.stdin, vts.sys.stdout = saved
    return code, seen


class LinesAndReports(unittest.TestCase):
    def test_one_report_per_line_in_order_then_the_summary(self):
        code, out, err = run_cli("--jsonl", "-", stdin=jsonl(PASS_DOC, BLOCKED_DOC, NA_DOC))
        self.assertEqual((code, err), (1, ""))
        rows, summary = reports(out)
        self.assertEqual([(r["fixture"], r["line"], r["status"]) for r in rows],
                         [("-", 1, "pass"), ("-", 2, "blocked"), ("-", 3, "not_applicable")])
        self.assertEqual(list(rows[0])[:3], ["fixture", "line", "tool"])
        self.assertEqual(rows[0]["calls"][0]["arguments"], '{"city":"Paris"}')
        self.assertEqual([f["code"] for f in rows[1]["findings"]], ["missing_terminal"])
        self.assertEqual(summary, {"fixtures": 3, "pass": 1, "blocked": 1, "not_applicable": 1})
        self.assertEqual(out.splitlines()[-1],
                         '{"tool": "validate_tool_stream", "version": "%s", "summary": {"fixtures": 3, "pass": 1, '
                         '"blocked": 1, "not_applicable": 1}}' % vts.VERSION)

    def test_each_report_is_the_report_of_the_same_envelope_as_a_file(self):
        # every bundled fixture, laid out on one line (its line ends become spaces, JSON white space)
        paths = fixture_paths()
        data = [read(os.path.join(FIXTURES, p)) for p in paths]
        code, out, _ = run_cli("--jsonl", "-", stdin=jsonl(*(d.replace(b"\r", b" ").replace(b"\n", b" ")
                                                              for d in data)))
        rows, summary = reports(out)
        self.assertEqual(len(rows), len(paths))
        for number, (path, raw, row) in enumerate(zip(paths, data, rows), 1):
            with self.subTest(fixture=path):
                self.assertEqual(row.pop("line"), number)
                self.assertEqual(row.pop("fixture"), "-")
                self.assertEqual(row, vts.validate_bytes(raw))
        folder = reports(run_cli(FIXTURES)[1])[1]
        self.assertEqual(summary, folder)
        self.assertEqual(code, run_cli(FIXTURES, "--quiet")[0])

    def test_every_bundled_fixture_matches_its_expect_block_on_its_line(self):
        data = [read(os.path.join(FIXTURES, p)).replace(b"\n", b" ") for p in fixture_paths()]
        code, out, err = run_cli("--jsonl", "--expect", "--quiet", "-", stdin=jsonl(*data))
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(out.count("\n"), 1)   # only the summary
        self.assertEqual(reports(out)[1]["expect_mismatches"], 0)

    def test_a_line_that_is_not_an_envelope_is_invalid_fixture_and_the_run_goes_on(self):
        bad = [b"", b"  \t", b"\r", b"[1]", b"1", b"null", b"not json", b"\xff", b"{}", b'{"a":1} x',
               b'{"profile":"openai","profile":"openai"}', b"[" * 5000]
        code, out, err = run_cli("--jsonl", "-", stdin=jsonl(*bad, PASS_DOC))
        self.assertEqual((code, err), (1, ""))
        rows, summary = reports(out)
        self.assertEqual([r["line"] for r in rows], list(range(1, len(bad) + 2)))
        for raw, row in zip(bad, rows):
            with self.subTest(line=raw[:12]):
                self.assertEqual(row["status"], "blocked")
                self.assertEqual(row["findings"][0]["code"], "invalid_fixture")
                self.assertEqual(row["findings"], vts.validate_bytes(raw)["findings"])
        self.assertEqual(rows[0]["findings"][0]["message"], "not strict JSON: the envelope: empty")
        self.assertEqual(rows[1]["findings"][0]["message"], "not strict JSON: the envelope: only whitespace")
        self.assertEqual(rows[-1]["status"], "pass")
        self.assertEqual(summary, {"fixtures": len(bad) + 1, "pass": 1, "blocked": len(bad), "not_applicable": 0})

    def test_line_ends_a_last_line_without_one_and_separators_inside_strings(self):
        doc = dict(PASS_DOC, meta={"note": "a\u2028b\u0085c\u2029d"})
        raw = json.dumps(doc, ensure_ascii=False).encode("utf-8")
        crlf = line(PASS_DOC) + b"\r\n" + raw + b"\r\n" + line(BLOCKED_DOC)   # no LF after the last line
        rows, summary = reports(run_cli("--jsonl", "-", stdin=crlf)[1])
        self.assertEqual([(r["line"], r["status"]) for r in rows], [(1, "pass"), (2, "pass"), (3, "blocked")])
        self.assertEqual(rows[1]["meta"], {"note": "a\u2028b\u0085c\u2029d"})
        self.assertEqual(summary["fixtures"], 3)
        lf = reports(run_cli("--jsonl", "-", stdin=crlf.replace(b"\r\n", b"\n"))[1])
        self.assertEqual(lf, (rows, summary))

    def test_a_line_over_max_input_bytes_is_limit_exceeded_and_the_run_goes_on(self):
        small = b'{"profile":"openai","tool_schemas":{},"chunks":[]}'
        big = line(PASS_DOC)
        code, out, _ = run_cli("--jsonl", "--max-input-bytes", str(len(big) - 1), "-",
                               stdin=jsonl(big, small, b" " * (len(big) - 1), big))
        rows, _ = reports(out)
        message = f"the fixture is larger than {len(big) - 1} bytes"
        self.assertEqual([f["code"] for f in rows[0]["findings"]], ["limit_exceeded"])
        self.assertEqual(rows[0]["findings"][0]["message"], message)
        self.assertEqual(rows[0], dict(vts.validate_bytes(big, vts.Limits(max_input_bytes=len(big) - 1)),
                                       fixture="-", line=1))
        self.assertEqual(rows[1]["status"], "not_applicable")
        self.assertEqual(rows[2]["findings"][0]["message"], "not strict JSON: the envelope: only whitespace")
        self.assertEqual(rows[3]["findings"][0]["code"], "limit_exceeded")
        self.assertEqual(code, 1)

    def test_a_long_line_is_read_through_never_held(self):
        class Endless:   # one 32 MiB line, made up as it is read, then a short one
            def __init__(self):
                self.left, self.tail = 32 << 20, [b"{}\n"]

            def readline(self, size):
                if self.left:
                    piece = b" " * min(size, self.left)
                    self.left -= len(piece)
                    return piece if self.left else piece + b"\n"
                return self.tail.pop() if self.tail else b""

        tracemalloc.start()
        try:
            got = [(n, None if d is None else len(d)) for n, d in vts._jsonl_lines(Endless(), 1000, "x")]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertEqual(got, [(1, None), (2, 2)])
        self.assertLess(peak, 4 << 20)   # a piece or two of 1 MiB, not the 32 MiB line

    def test_memory_does_not_grow_with_the_number_of_lines(self):
        def peak(pairs):   # the run's peak allocation (the input is made before tracing starts)
            data = jsonl(PASS_DOC, BLOCKED_DOC) * pairs

            class Stdin:
                buffer = io.BytesIO(data)

            saved = vts.sys.stdin, vts.sys.stdout
            with open(os.devnull, "w") as null:
                vts.sys.stdin, vts.sys.stdout = Stdin(), null
                tracemalloc.start()
                try:
                    self.assertEqual(vts.main(["--jsonl", "-"]), 1)
                    return tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
                    vts.sys.stdin, vts.sys.stdout = saved

        few, many = peak(10), peak(300)
        # 600 lines peak about where 20 do: cyclic garbage awaiting the collector moves it by some 100 KiB either
        # way, while keeping the 600 reports (or their lines) would add megabytes
        self.assertLess(many, few + (512 << 10), (few, many))

    def test_the_reader_splits_only_at_lf(self):
        data = b"a\rb\n\nc\r\n" + b"d" * ((1 << 20) + 5) + b"\ne"
        got = list(vts._jsonl_lines(io.BytesIO(data), 1 << 21, "x"))
        self.assertEqual(got, [(1, b"a\rb"), (2, b""), (3, b"c\r"), (4, b"d" * ((1 << 20) + 5)), (5, b"e")])
        self.assertEqual(list(vts._jsonl_lines(io.BytesIO(b"x\n"), 1, "x")), [(1, b"x")])
        self.assertEqual(list(vts._jsonl_lines(io.BytesIO(b"xy\n"), 1, "x")), [(1, None)])
        self.assertEqual(list(vts._jsonl_lines(io.BytesIO(b""), 1, "x")), [])


class Options(unittest.TestCase):
    def test_expect_compares_each_line_with_its_own_block(self):
        lines = jsonl(pinned(PASS_DOC, "pass", []), pinned(BLOCKED_DOC, "pass", []), BLOCKED_DOC,
                      pinned(BLOCKED_DOC, "blocked", ["missing_terminal"]))
        code, out, err = run_cli("--jsonl", "--expect", "-", stdin=lines)
        self.assertEqual(code, 1)
        rows, summary = reports(out)
        self.assertEqual([r["expectation"]["matched"] for r in rows], [True, False, False, True])
        self.assertEqual(summary["expect_mismatches"], 2)
        self.assertEqual(err, 'expect: MISMATCH -:2\n  status: expected "pass", got "blocked"\n'
                              'expect: MISMATCH -:3\n  the fixture has no usable "expect" object\n')
        code, _, err = run_cli("--jsonl", "--expect", "-", stdin=jsonl(pinned(PASS_DOC, "pass", [])))
        self.assertEqual((code, err), (0, ""))   # never "expect: matched" per line: many fixtures

    def test_quiet_prints_only_the_lines_that_do_not_succeed(self):
        code, out, _ = run_cli("--jsonl", "--quiet", "-", stdin=jsonl(PASS_DOC, BLOCKED_DOC, PASS_DOC, NA_DOC))
        rows, summary = reports(out)
        self.assertEqual([r["line"] for r in rows], [2, 4])
        self.assertEqual((code, summary["fixtures"]), (1, 4))
        code, out, _ = run_cli("--jsonl", "--quiet", "--allow-not-applicable", "-", stdin=jsonl(PASS_DOC, NA_DOC))
        self.assertEqual((code, reports(out)[0]), (0, []))

    def test_exit_codes_are_those_of_a_folder(self):
        for lines, flags, want in (((PASS_DOC, PASS_DOC), (), 0), ((PASS_DOC, NA_DOC), (), 2),
                                   ((PASS_DOC, NA_DOC), ("--allow-not-applicable",), 0),
                                   ((NA_DOC, BLOCKED_DOC), (), 1), ((BLOCKED_DOC,), (), 1)):
            with self.subTest(lines=len(lines), flags=flags, want=want):
                self.assertEqual(run_cli("--jsonl", *flags, "-", stdin=jsonl(*lines))[0], want)

    def test_redact_arguments(self):
        rows, _ = reports(run_cli("--jsonl", "--redact-arguments", "-", stdin=jsonl(PASS_DOC))[1])
        self.assertEqual(rows[0]["calls"][0]["arguments"]["utf8_bytes"], 16)
        self.assertIs(rows[0]["arguments_redacted"], True)
        self.assertNotIn("Paris", json.dumps(rows))

    def test_several_files_each_numbered_from_one_and_named(self):
        with tempfile.TemporaryDirectory() as folder:
            first = write(folder, "a.jsonl", jsonl(PASS_DOC, BLOCKED_DOC))
            second = write(folder, "b.jsonl", jsonl(NA_DOC))
            empty = write(folder, "c.jsonl", b"")
            code, out, _ = run_cli("--jsonl", first, empty, second)
            rows, summary = reports(out)
            self.assertEqual([(r["fixture"], r["line"]) for r in rows], [(first, 1), (first, 2), (second, 1)])
            self.assertEqual((code, summary["fixtures"]), (1, 3))
            code, out, err = run_cli("--jsonl", "--exclude", "a.*", first, second)
            self.assertEqual([(r["fixture"], r["line"]) for r in reports(out)[0]], [(second, 1)])
            self.assertEqual((code, err), (2, ""))

    def test_usage_errors_print_no_report(self):
        with tempfile.TemporaryDirectory() as folder:
            name = write(folder, "a.jsonl", jsonl(PASS_DOC))
            empty = write(folder, "e.jsonl", b"")
            for args, stdin, message in (
                    ((folder,), None, f"--jsonl reads files of JSON Lines (or - for standard input); {folder} is a "
                                      "folder"),
                    (("-",), b"", "--jsonl found no line to validate (the input is empty)"),
                    ((empty, empty), None, "--jsonl found no line to validate (the input is empty)"),
                    ((name, "-"), jsonl(PASS_DOC), "standard input (-) can only be the single fixture"),
                    (("--adapter-output", name, name), None,
                     "--adapter-output compares one fixture; it does not combine with --jsonl"),
                    ((os.path.join(folder, "missing.jsonl"),), None,
                     f"cannot read {os.path.join(folder, 'missing.jsonl')}: no such file"),
                    (("--exclude", "*.jsonl", name), None, "--exclude left no fixture to validate")):
                with self.subTest(args=args):
                    self.assertEqual(run_cli("--jsonl", *args, stdin=stdin),
                                     (3, "", f"validate_tool_stream: {message}\n"))


class Formats(unittest.TestCase):
    LINES = jsonl(PASS_DOC, LATE_DOC, NA_DOC, b"oops")

    def test_text_names_the_file_and_the_line(self):
        code, out, _ = run_cli("--jsonl", "--report", "text", "-", stdin=self.LINES)
        heads = [text for text in out.splitlines() if text.startswith("== ")]
        self.assertEqual(heads, ["== -:1", "== -:2", "== -:3", "== -:4"])
        self.assertEqual(out.splitlines()[-1], "summary: fixtures 4, pass 1, blocked 2, not_applicable 1")
        self.assertEqual(out.split("== -:2\n")[1].split("== -:3")[0],
                         vts.render_text(vts.validate_bytes(line(LATE_DOC))) + "\n")
        self.assertEqual(code, 1)

    def test_github_annotations_name_the_line_and_the_column_in_it(self):
        late = line(LATE_DOC)
        col = late.index(json.dumps(LATE_CHUNK).encode()) + 1
        code, out, _ = run_cli("--jsonl", "--report", "github", "-", stdin=self.LINES)
        self.assertEqual(out.splitlines(), [
            f"::error file=-,line=2,col={col}::delta_after_terminal: tool-call fragment after choice 0 finished "
            '("tool_calls")',
            "::error file=-,line=3,col=1::not_applicable: the turn carries no tool call, so the step fails (exit 2); "
            "--allow-not-applicable lets such a turn pass",
            "::error file=-,line=4,col=1::invalid_fixture: not strict JSON: expecting value at line 1 column 1",
            "summary: fixtures 4, pass 1, blocked 2, not_applicable 1"])
        # a CR inside a line is white space, not a line end: the column still counts from the line's start
        spaced = late.replace(b'"chunks": ', b'"chunks":\r')
        out = run_cli("--jsonl", "--report", "github", "-", stdin=jsonl(PASS_DOC, spaced))[1]
        self.assertTrue(out.startswith(f"::error file=-,line=2,col={col}::delta_after_terminal"), out)

    def test_github_expect_differences_sit_on_their_line(self):
        doc = pinned(BLOCKED_DOC, "pass", [])
        good = pinned(PASS_DOC, "pass", [])
        code, out, _ = run_cli("--jsonl", "--report", "github", "--expect", "-", stdin=jsonl(good, PASS_DOC, doc))
        col = line(doc).index(b'"expect"') + 1
        self.assertEqual(out.splitlines(), [
            '::error file=-,line=2,col=1::expect: the fixture has no usable "expect" object',
            f'::error file=-,line=3,col={col}::expect: status: expected "pass", got "blocked"',
            "summary: fixtures 3, pass 2, blocked 1, not_applicable 0, expect_mismatches 2"])
        self.assertEqual(code, 1)

    def test_junit_one_case_per_line(self):
        code, out, _ = run_cli("--jsonl", "--report", "junit", "--allow-not-applicable", "--quiet", "-",
                               stdin=self.LINES)
        root = ET.fromstring(out)
        suite = root.find("testsuite")
        self.assertEqual((root.get("tests"), root.get("failures")), ("4", "2"))
        self.assertEqual((suite.get("tests"), suite.get("failures"), suite.get("skipped")), ("4", "2", "1"))
        cases = suite.findall("testcase")
        self.assertEqual([c.get("name") for c in cases], ["-:1", "-:2", "-:3", "-:4"])
        self.assertEqual([c[0].tag for c in cases], ["system-out", "failure", "skipped", "failure"])
        self.assertEqual(cases[3].find("failure").get("message"), "blocked: invalid_fixture")
        self.assertEqual(code, 1)
        # the cases are the ones a folder run writes, one to a line between the document's opening and closing
        lines = out.splitlines()
        self.assertEqual(lines[2], vts._junit_case("-:1", vts.validate_bytes(line(PASS_DOC)), 0, None, True))
        self.assertEqual(lines[-1], "</testsuite></testsuites>")

    def test_a_file_and_standard_input_give_the_same_bytes_but_the_name(self):
        with tempfile.TemporaryDirectory() as folder:
            name = write(folder, "dump.jsonl", self.LINES)
            for flags in (("--report", "json"), ("--report", "text"), ("--report", "github", "--expect"),
                          ("--report", "junit"), ("--quiet", "--redact-arguments")):
                with self.subTest(flags=flags):
                    from_file = run_cli("--jsonl", *flags, name)
                    from_stdin = run_cli("--jsonl", *flags, "-", stdin=self.LINES)
                    self.assertEqual(from_file, tuple(
                        part.replace('"fixture": "-"', f'"fixture": {json.dumps(name)}').replace("== -:", f"== {name}:")
                        .replace("file=-,", f"file={name},").replace('name="-:', f'name="{name}:')
                        .replace("MISMATCH -:", f"MISMATCH {name}:") if isinstance(part, str) else part
                        for part in from_stdin))


class HostileLines(unittest.TestCase):
    NAME = "w\r::stop-commands::x\n##[group]\u2028\u202e\ud800"

    def test_hostile_names_stay_inside_their_line_in_every_format(self):
        doc = json.loads(json.dumps(PASS_DOC).replace('"weather"', json.dumps(self.NAME)))
        lines = jsonl(doc, LATE_DOC)
        for form in ("json", "text", "github", "junit"):
            with self.subTest(form=form):
                code, out, err = run_cli("--jsonl", "--report", form, "-", stdin=lines)
                self.assertEqual((code, err), (1, ""))
                self.assertNotIn("##[", out)
                self.assertNotIn("\r", out)
                for text in out.splitlines():
                    self.assertFalse(text.lstrip().startswith("::") and not text.startswith("::error file=-,"), text)
                if form == "junit":
                    cases = ET.fromstring(out).find("testsuite").findall("testcase")
                    self.assertEqual([c.get("name") for c in cases], ["-:1", "-:2"])
                if form == "json":
                    self.assertEqual(reports(out)[0][0]["calls"][0]["name"], self.NAME)


@slow("starts the command as a process, reading a pipe, a named pipe and a file")
class AsAProcess(unittest.TestCase):
    def test_a_pipe_a_named_pipe_and_a_file_give_the_same_reports(self):
        lines = jsonl(PASS_DOC, BLOCKED_DOC, b"", NA_DOC)
        in_process = run_cli("--jsonl", "-", stdin=lines)
        self.assertEqual(run_process("--jsonl", "-", stdin=lines), in_process)
        with tempfile.TemporaryDirectory() as folder:
            name = write(folder, "dump.jsonl", lines)
            as_file = run_process("--jsonl", name)
            self.assertEqual(as_file[1].replace(json.dumps(name), '"-"'), in_process[1])
            if hasattr(os, "mkfifo"):
                fifo = os.path.join(folder, "pipe.jsonl")
                os.mkfifo(fifo)
                writer = threading.Thread(target=write, args=(folder, "pipe.jsonl", lines))
                writer.start()
                try:
                    code, out, err = run_process("--jsonl", fifo)
                finally:
                    writer.join()
                self.assertEqual((code, out.replace(json.dumps(fifo), '"-"'), err), in_process)


class TheUnitOfWork(unittest.TestCase):
    def test_judge_line_is_what_the_run_prints_and_prints_nothing_itself(self):
        args = vts._parse_args(["--jsonl", "--expect", "-"])
        limits = vts.Limits()
        data = line(pinned(BLOCKED_DOC, "pass", []))
        first = vts._judge_line("-", 7, data, args, limits)
        self.assertEqual(first, vts._judge_line("-", 7, data, args, limits))
        report, code, differences, text = first
        self.assertEqual((report["status"], code), ("blocked", 1))
        self.assertEqual(differences, ['status: expected "pass", got "blocked"'])
        self.assertEqual(json.loads(text)["line"], 7)
        out = run_cli("--jsonl", "--expect", "-", stdin=b"\n" * 6 + data)[1]
        self.assertEqual(out.splitlines()[6], text)

    def test_each_answer_is_written_before_the_next_line_is_read(self):
        # a reader that feeds one line and waits for its answer (a pipe to a database UDF) is never stuck
        code, seen = answered_line_by_line([line(PASS_DOC) + b"\n", line(BLOCKED_DOC) + b"\n"], ["--jsonl", "-"])
        self.assertEqual(code, 1)
        self.assertEqual(seen, [0, 1, 2])   # before line 1, before line 2, before the end


def row(data, name="envelope", **other):
    """A JSONEachRow row as ClickHouse writes a String argument: the envelope's text, '/' escaped."""
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else json.dumps(data)
    return json.dumps({**other, name: text}).replace("/", "\\/").encode("utf-8", "surrogateescape")


def answers(out, name="result"):
    """The REPORT of each answer line of a --jsonl-rows run (each line exactly {name: REPORT})."""
    lines = [json.loads(text) for text in out.splitlines()]
    for item in lines:
        assert list(item) == [name], item
    return [item[name] for item in lines]


class Rows(unittest.TestCase):
    """--jsonl --jsonl-rows NAME: a database's executable UDF (ClickHouse JSONEachRow): a row in, one answer out."""

    def rows(self, *lines, args=("--jsonl-rows", "envelope")):
        code, out, err = run_cli("--jsonl", "-", *args, stdin=b"".join(item + b"\n" for item in lines))
        self.assertEqual((code, err), (0, ""))    # every row got its answer, blocked ones included
        return out

    def test_a_string_member_and_an_object_member_get_the_report_of_their_envelope(self):
        out = self.rows(row(PASS_DOC), row(BLOCKED_DOC), b'{"envelope": ' + line(NA_DOC) + b', "other": [1]}',
                        b'\t{"other":{"envelope":1},\r"envelope":' + line(PASS_DOC) + b"} \r")
        self.assertTrue(out.endswith("\n"))
        self.assertEqual(answers(out), [dict(vts.validate_bytes(line(doc)), fixture="-", line=number)
                                        for number, doc in enumerate((PASS_DOC, BLOCKED_DOC, NA_DOC, PASS_DOC), 1)])

    def test_the_answer_is_the_jsonl_report_line_inside_one_member_and_no_summary_follows(self):
        out = self.rows(row(PASS_DOC), row(BLOCKED_DOC))
        jsonl_out = run_cli("--jsonl", "-", stdin=jsonl(PASS_DOC, BLOCKED_DOC))[1]
        self.assertEqual(out, "".join('{"result": %s}\n' % text for text in jsonl_out.splitlines()[:-1]))
        self.assertNotIn("summary", out)
        named = self.rows(row(PASS_DOC), args=("--jsonl-rows", "body", "--jsonl-result", "verdict"))
        self.assertEqual(answers(named, "verdict")[0]["findings"][0]["message"],
                         'the row has no member "body"')

    def test_a_line_that_is_no_row_gets_invalid_fixture_in_its_answer_never_a_skipped_row(self):
        why = {
            b"": 'the line is not a JSON object (a row with the member "envelope")',
            b" \t\r": 'the line is not a JSON object (a row with the member "envelope")',
            b"[1]": 'the line is not a JSON object (a row with the member "envelope")',
            b"not json": 'the line is not a JSON object (a row with the member "envelope")',
            b"\xff": 'the line is not a JSON object (a row with the member "envelope")',
            b'{"envelope": "{}"} x': 'the line is not a JSON object (a row with the member "envelope")',
            b'{"envelope": "{}",}': 'the line is not a JSON object (a row with the member "envelope")',
            b'{"a": ' + b"[" * 100000 + b"}": 'the line is not a JSON object (a row with the member "envelope")',
            b"{}": 'the row has no member "envelope"',
            b'{"Envelope": "{}"}': 'the row has no member "envelope"',
            b'{"envelope": "{}", "envelope": "{}"}': 'the row has more than one member "envelope"',
            b'{"envelope": null}': 'the row\'s member "envelope" is neither a string nor an object',
            b'{"envelope": [1]}': 'the row\'s member "envelope" is neither a string nor an object',
            b'{"envelope": "\\ud800"}': 'the row\'s member "envelope" holds a lone surrogate escape, which no UTF-8 '
                                        'text holds',
        }
        out = self.rows(*why, row(PASS_DOC))
        got = answers(out)
        self.assertEqual([r["line"] for r in got], list(range(1, len(why) + 2)))
        for (raw, message), report in zip(why.items(), got):
            with self.subTest(line=raw[:20]):
                self.assertEqual((report["status"], report["calls"], report["findings"]),
                                 ("blocked", [], [{"code": "invalid_fixture", "choice": None, "index": None,
                                                   "position": None, "message": message}]))
        self.assertEqual(got[-1]["status"], "pass")

    def test_an_envelope_inside_the_row_is_judged_as_its_file(self):
        # a duplicate key inside an object member stays visible; an empty string is an empty file
        dup = b'{"envelope": {"profile": "openai", "profile": "openai", "chunks": []}}'
        got = answers(self.rows(dup, b'{"envelope": ""}'))
        self.assertEqual(got[0]["findings"], vts.validate_bytes(dup[13:-1])["findings"])
        self.assertEqual(got[0]["findings"][0]["code"], "invalid_fixture")
        self.assertEqual(got[1]["findings"][0]["message"], "not strict JSON: the envelope: empty")

    def test_bytes_that_are_not_utf8_in_a_string_reach_the_validator_unchanged_and_fail(self):
        # ClickHouse writes a String's bytes as they are inside the JSON string (chdb 4.4, ClickHouse 26.9)
        body = b'{"profile": "openai", "tool_schemas": {}, "chunks": ["\xff"]}'
        raw = b'{"envelope":"' + body.replace(b'"', b'\\"') + b'"}'
        escaped = b'{"envelope": "' + body.replace(b'"', b'\\"').replace(b"\xff", b"\\udcff") + b'"}'
        got = answers(self.rows(raw, escaped))
        for report in got:
            self.assertEqual(report["findings"], vts.validate_bytes(body)["findings"])
            self.assertEqual((report["status"], report["findings"][0]["code"]), ("blocked", "invalid_fixture"))

    def test_a_row_over_max_input_bytes_is_limit_exceeded_and_the_rows_go_on(self):
        big = row(PASS_DOC)
        out = self.rows(big, row(NA_DOC)[:len(big) - 1], args=("--jsonl-rows", "envelope", "--max-input-bytes",
                                                               str(len(big) - 1)))
        got = answers(out)
        self.assertEqual([f["code"] for f in got[0]["findings"]], ["limit_exceeded"])
        self.assertEqual(got[0]["findings"][0]["message"], f"the fixture is larger than {len(big) - 1} bytes")
        self.assertEqual(len(got), 2)

    def test_exit_0_with_blocked_rows_and_with_no_row(self):
        self.assertEqual(run_cli("--jsonl", "-", "--jsonl-rows", "envelope", stdin=row(BLOCKED_DOC) + b"\n"
                                 )[0], 0)
        self.assertEqual(run_cli("--jsonl", "-", "--jsonl-rows", "envelope", stdin=b""), (0, "", ""))

    def test_expect_and_redact_act_on_each_report(self):
        out = self.rows(row(pinned(PASS_DOC, "pass", [])), row(pinned(PASS_DOC, "blocked", [])), b"[]",
                        args=("--jsonl-rows", "envelope", "--expect", "--redact-arguments"))
        got = answers(out)
        self.assertEqual([r["expectation"]["matched"] for r in got], [True, False, False])
        self.assertTrue(got[0]["arguments_redacted"])
        self.assertEqual(got[2]["expectation"]["differences"],
                         ['the fixture could not be read, so it has no "expect" block: the line is not a JSON object '
                          '(a row with the member "envelope")'])

    def test_usage_errors(self):
        for args, message in (
                (("--jsonl-rows", "e", "-"), "--jsonl-rows reads JSON Lines: give --jsonl too"),
                (("--jsonl", "--jsonl-result", "r", "-"),
                 "--jsonl-result names the answer's member of --jsonl-rows; give --jsonl-rows too"),
                (("--jsonl", "--jsonl-rows", "e", "--quiet", "-"), None),
                (("--jsonl", "--jsonl-rows", "e", "--report", "text", "-"), None),
                (("--jsonl", "--jsonl-rows", "e", "--jobs", "2", "-"),
                 "--jsonl-rows answers rows one by one (the database runs several commands at once): it does not "
                 "combine with --jobs")):
            with self.subTest(args=args):
                code, out, err = run_cli(*args, stdin=row(PASS_DOC) + b"\n")
                self.assertEqual((code, out), (3, ""))
                self.assertEqual(err, f"validate_tool_stream: {message}\n" if message else
                                 "validate_tool_stream: --jsonl-rows answers every row with its JSON report: it does "
                                 "not combine with --report other than json, nor with --quiet\n")

    def test_each_answer_is_written_before_the_next_row_is_read(self):
        code, seen = answered_line_by_line([row(PASS_DOC) + b"\n", b"\n", row(BLOCKED_DOC) + b"\n"],
                                           ["--jsonl", "-", "--jsonl-rows", "envelope"])
        self.assertEqual(code, 0)
        self.assertEqual(seen, [0, 1, 2, 3])

    def test_jsonl_without_the_option_is_unchanged(self):
        # the same input without --jsonl-rows: reports of the rows themselves (not envelopes), then the summary
        data = row(PASS_DOC) + b"\n" + line(PASS_DOC) + b"\n"
        code, out, err = run_cli("--jsonl", "-", stdin=data)
        rows_, summary = reports(out)
        self.assertEqual((code, err, summary["fixtures"]), (1, "", 2))
        self.assertEqual(rows_[0], dict(vts.validate_bytes(row(PASS_DOC)), fixture="-", line=1))
        self.assertEqual(rows_[1]["status"], "pass")


if __name__ == "__main__":
    unittest.main()


class Summaries(unittest.TestCase):
    """--report summary over JSON Lines: the counts a folder of the same envelopes gives, each example a line."""

    def test_the_summary_of_lines_counts_as_the_folder_of_their_files(self):
        docs = [(PASS_DOC, "a.json"), (BLOCKED_DOC, "b.json"), (NA_DOC, "c.json"), (LATE_DOC, "d.json")]
        with tempfile.TemporaryDirectory() as folder:
            for doc, name in docs:
                write(folder, name, line(doc))
            _, by_folder, _ = run_cli(folder, "--report", "summary-json")
        code, by_lines, err = run_cli("--jsonl", "-", "--report", "summary-json",
                                      stdin=jsonl(*(doc for doc, _ in docs)))
        self.assertEqual((code, err), (1, ""))
        folder_doc, lines_doc = json.loads(by_folder), json.loads(by_lines)
        self.assertEqual(lines_doc["summary"], folder_doc["summary"])
        strip = [[{k: v for k, v in row.items() if k != "example"} for row in table["rows"]]
                 for table in folder_doc["tables"]]
        self.assertEqual([[{k: v for k, v in row.items() if k != "example"} for row in table["rows"]]
                          for table in lines_doc["tables"]], strip)
        examples = {row["example"] for table in lines_doc["tables"] for row in table["rows"]}
        self.assertEqual(examples, {"-:1", "-:2", "-:3", "-:4"} & examples)
        self.assertIn("-:4", examples)   # delta_after_terminal: only the fourth line has it
        code, text, _ = run_cli("--jsonl", "-", "--report", "summary", stdin=jsonl(PASS_DOC, b"not json"))
        self.assertEqual(code, 1)
        self.assertIn("\n  invalid_fixture         1  -:2\n", text)
