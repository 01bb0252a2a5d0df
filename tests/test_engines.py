"""README's "Auditing logged traffic" recipes, each run as written inside its engine (optional packages).

Each recipe is the code block after its `<!-- engine: NAME -->` comment in README.md, read from README itself,
so the text and its test cannot drift.  Every engine's table holds every bundled fixture (`fixtures/**/*.json`,
read by the engine from the files, as the recipe says), and each row's verdict (status, sorted set of codes,
calls) must equal the one taken from `validate_bytes`'s report for the same bytes; `CommandLineAgrees` checks,
for one fixture of each folder, that this report is the command line's (a real process) less its `fixture` key.

DuckDB, Apache Spark (local mode, a JVM: Java 17 or newer) and ClickHouse (chdb, ClickHouse embedded in Python,
running the recipe's executable UDF, the command line's `--jsonl - --jsonl-rows envelope`) each skip, naming the
package, without it; `python3 tests/engines/setup.py` installs all three into tests/engines/.venv, and
`tests/engines/.venv/bin/python -m unittest test_engines` (from tests/) runs them.  The validator imports none of
this.  Without the packages only the README checks run (in process, fast); test_jsonl tests `--jsonl-rows` itself.
"""

import contextlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from support import ENV, FIXTURES, ROOT, SCRIPT, fixture_paths, load_fixture, slow, vts

with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
    README = handle.read()

RECIPES = dict(re.findall(r"^<!-- engine: ([a-z-]+) -->\n```[a-z]+\n(.*?)^```$", README, re.S | re.M))


def expected(data):
    """What every engine must give a body: the report's status, sorted set of codes, and calls."""
    report = vts.validate_bytes(data)
    return {"status": report["status"], "codes": sorted({f["code"] for f in report["findings"]}),
            "calls": report["calls"]}


def read(verdict):
    """An engine's verdict with its calls' JSON text parsed, to compare with expected()."""
    return {"status": verdict["status"], "codes": list(verdict["codes"]), "calls": json.loads(verdict["calls"])}


def every_fixture():
    """{path relative to fixtures/: expected verdict} for every bundled fixture."""
    return {relpath: expected(load_fixture(relpath)[0]) for relpath in fixture_paths()}


def relative(path):
    """A path an engine reports (absolute, or a file: URL) relative to fixtures/."""
    path = path[len("file:"):] if path.startswith("file:") else path
    return os.path.relpath(os.path.realpath(os.path.join(ROOT, path)), os.path.realpath(FIXTURES))


def package(name):
    """The module, or skip naming it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise unittest.SkipTest(f"{name} is not installed (python3 tests/engines/setup.py; "
                                f"then run this module with tests/engines/.venv/bin/python)") from None


@contextlib.contextmanager
def in_root():
    """Run a recipe from the checkout's root, where its relative paths point."""
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def run_recipe(*names):
    """Execute the README blocks in one namespace, as a user's script would, and return it."""
    namespace = {"__name__": "engine_recipe"}
    with in_root():
        for name in names:
            exec(compile(RECIPES[name], f"README engine: {name}", "exec"), namespace)
    return namespace


class RecipesAreInReadme(unittest.TestCase):
    """Every engine block is in README, short and well-formed, and the verdict function is the expected one."""

    def test_each_recipe_is_found_and_short(self):
        self.assertEqual(set(RECIPES), {"verdict", "duckdb", "spark", "clickhouse-config", "clickhouse-query"})
        self.assertEqual(README.count("<!-- engine: "), len(RECIPES))
        for name in ("verdict", "duckdb", "spark"):
            with self.subTest(recipe=name):
                self.assertLessEqual(len(RECIPES[name].splitlines()), 10)
                compile(RECIPES[name], name, "exec")
        self.assertIn("<command>validate_tool_stream.py --jsonl - --jsonl-rows envelope</command>",
                      RECIPES["clickhouse-config"])
        self.assertIn("<format>JSONEachRow</format>", RECIPES["clickhouse-config"])

    def test_the_verdict_function_gives_the_report_verdict(self):
        verdict = run_recipe("verdict")["tool_stream_verdict"]
        for relpath in ("openai/valid-n2-tool-choice-and-text-choice.json",
                        "openai/ambiguous-choice-tool-calls-in-two-choices.json"):
            data = load_fixture(relpath)[0]
            self.assertEqual(read(verdict(data)), expected(data))


@slow("starts the command line as a process")
class CommandLineAgrees(unittest.TestCase):
    """The in-process report is the command line's (less its `fixture` key), for one fixture of each folder."""

    def test_a_sample_against_the_real_command_line(self):
        sample = {}
        for relpath in fixture_paths():
            sample.setdefault(os.path.dirname(relpath), relpath)
        paths = [os.path.join(FIXTURES, relpath) for relpath in sample.values()]
        run = subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, env=ENV, timeout=300)
        self.assertIn(run.returncode, (0, 1, 2), run.stderr)
        lines = [json.loads(line) for line in run.stdout.splitlines()]
        self.assertEqual(len(lines), len(paths) + 1)      # then the summary line
        for path, line in zip(paths, lines):
            with self.subTest(fixture=path):
                self.assertEqual(line.pop("fixture"), path)
                with open(path, "rb") as handle:
                    self.assertEqual(line, vts.validate_bytes(handle.read()))


class DuckDB(unittest.TestCase):
    """The DuckDB recipe over every bundled fixture, as BLOB and as VARCHAR."""

    @classmethod
    def setUpClass(cls):
        package("duckdb")
        cls.recipe = run_recipe("verdict", "duckdb")
        cls.want = every_fixture()

    def test_every_row_as_blob(self):
        rows = self.recipe["con"].sql("SELECT name, tool_stream_verdict(body) FROM bodies").fetchall()
        got = {relative(name): read(verdict) for name, verdict in rows}
        self.assertEqual(got, self.want)

    def test_every_row_as_varchar_through_encode(self):
        con = self.recipe["con"]
        con.sql("CREATE OR REPLACE TABLE texts AS SELECT name, decode(body) AS body FROM bodies")
        self.assertEqual(con.sql("SELECT typeof(body) FROM texts LIMIT 1").fetchall()[0][0], "VARCHAR")
        rows = con.sql("SELECT name, tool_stream_verdict(encode(body)) FROM texts").fetchall()
        self.assertEqual({relative(name): read(verdict) for name, verdict in rows}, self.want)

    def test_a_null_body_gets_null(self):
        self.assertEqual(self.recipe["con"].sql("SELECT tool_stream_verdict(NULL::BLOB)").fetchall(), [(None,)])

    def test_the_recipe_query_lists_the_blocked_rows(self):
        got = {relative(name): codes for name, codes in self.recipe["blocked"].fetchall()}
        self.assertEqual(got, {relpath: want["codes"] for relpath, want in self.want.items()
                               if want["status"] == "blocked"})


@slow("starts Apache Spark (a JVM) in local mode")
class Spark(unittest.TestCase):
    """The Spark recipe in local mode, the validator shipped with addPyFile, over every bundled fixture."""

    @classmethod
    def setUpClass(cls):
        package("pyspark")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise unittest.SkipTest("pyspark needs Java 17 or newer (java not found)")
        cls.environ = mock.patch.dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                                      SPARK_LOCAL_IP="127.0.0.1",    # loopback only; no web UI, no progress bar
                                      PYSPARK_SUBMIT_ARGS="--conf spark.ui.enabled=false "
                                                          "--conf spark.ui.showConsoleProgress=false pyspark-shell")
        cls.environ.start()
        try:
            cls.recipe = run_recipe("verdict", "spark")
        except BaseException:
            cls.environ.stop()
            raise
        cls.want = every_fixture()

    @classmethod
    def tearDownClass(cls):
        cls.recipe["spark"].stop()
        cls.environ.stop()

    def test_every_row(self):
        rows = self.recipe["verdicts"].collect()
        got = {relative(row["path"]): read(row["verdict"].asDict()) for row in rows}
        self.assertEqual(got, self.want)

    def test_a_string_column_through_encode(self):
        from pyspark.sql.functions import encode
        texts = self.recipe["bodies"].selectExpr("path", "CAST(content AS STRING) AS body")
        rows = texts.select("path", self.recipe["verdict"](encode("body", "UTF-8")).alias("verdict")).collect()
        self.assertEqual({relative(row["path"]): read(row["verdict"].asDict()) for row in rows}, self.want)

    def test_the_validator_was_shipped(self):
        from pyspark import SparkFiles   # noqa: the executors import it from the SparkFiles root
        root = self.recipe["spark"].sparkContext.parallelize([0], 1).map(lambda _: SparkFiles.getRootDirectory())
        self.assertTrue(os.path.isfile(os.path.join(root.collect()[0], "validate_tool_stream.py")))


class ClickHouse(unittest.TestCase):
    """The ClickHouse recipe in chdb (ClickHouse embedded): its config running the command line's --jsonl-rows,
    its query, every fixture; each row's report against the command line's --jsonl report of the same bytes."""

    @classmethod
    def setUpClass(cls):
        cls.chdb = package("chdb")
        cls.scripts = tempfile.mkdtemp(prefix="vts-udf-")
        with open(os.path.join(cls.scripts, "tool_stream_function.xml"), "w", encoding="utf-8") as handle:
            handle.write(RECIPES["clickhouse-config"])
        shutil.copy(SCRIPT, cls.scripts)       # keeps its executable bit, as ClickHouse requires
        cls.want = every_fixture()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scripts, ignore_errors=True)

    def query(self, sql):
        with in_root():
            result = self.chdb.query(sql, "JSONEachRow", udf_path=self.scripts)
        return [json.loads(line) for line in result.bytes().decode().split("\n")[:-1]]

    def test_every_row_of_the_recipe_query(self):
        rows = self.query(RECIPES["clickhouse-query"])
        self.assertEqual({relative(row["name"]): read(row) for row in rows}, self.want)

    def test_each_row_is_the_command_line_report_of_its_file(self):
        # the report's members the return type keeps, against --jsonl over the same files laid out one per line
        rows = self.query("SELECT _path AS name, tool_stream_report(raw_blob) AS report "
                          "FROM file('fixtures/**/*.json', RawBLOB)")
        paths = fixture_paths()
        bodies = b"".join(load_fixture(p)[0].replace(b"\r", b" ").replace(b"\n", b" ") + b"\n" for p in paths)
        run = subprocess.run([sys.executable, SCRIPT, "--jsonl", "-"], input=bodies, capture_output=True, env=ENV,
                             timeout=300)
        lines = [json.loads(line) for line in run.stdout.splitlines()[:-1]]
        cli = {p: {"status": line["status"], "findings": [{"code": f["code"], "message": f["message"]}
                                                          for f in line["findings"]], "calls": line["calls"]}
               for p, line in zip(paths, lines)}
        got = {relative(row["name"]): dict(row["report"], calls=json.loads(row["report"]["calls"])) for row in rows}
        self.assertEqual(got, cli)

    def test_bytes_that_are_not_utf8_reach_the_validator_unchanged(self):
        body = b'{"profile": "openai", "chunks": ["\xff"]}'
        rows = self.query(f"SELECT tool_stream_report(unhex('{body.hex()}')) AS report")
        report = vts.validate_bytes(body)
        self.assertEqual(rows, [{"report": {"status": "blocked", "findings": [
            {"code": f["code"], "message": f["message"]} for f in report["findings"]], "calls": "[]"}}])
        self.assertEqual(report["findings"][0]["code"], "invalid_fixture")

    def test_the_executable_type_one_process_per_block_takes_blocked_rows(self):
        # that type fails the query on a non-zero exit: --jsonl-rows exits 0 whatever the verdicts
        passing = load_fixture("openai/valid-n2-tool-choice-and-text-choice.json")[0]
        with tempfile.TemporaryDirectory(prefix="vts-udf-") as scripts:
            with open(os.path.join(scripts, "tool_stream_function.xml"), "w", encoding="utf-8") as handle:
                handle.write(RECIPES["clickhouse-config"].replace("<type>executable_pool</type>",
                                                                  "<type>executable</type>"))
            shutil.copy(SCRIPT, scripts)
            result = self.chdb.query(f"SELECT tool_stream_report(b).status AS s FROM (SELECT arrayJoin(['', "
                                     f"unhex('{passing.hex()}'), '[1]']) AS b)", "TSV", udf_path=scripts)
        self.assertEqual(result.bytes(), b"blocked\npass\nblocked\n")

    def test_a_blocked_row_and_an_empty_body_do_not_fail_the_query(self):
        rows = self.query("SELECT tool_stream_report('').status AS a, tool_stream_report('x\\ny').status AS b")
        self.assertEqual(rows, [{"a": "blocked", "b": "blocked"}])


if __name__ == "__main__":
    unittest.main()
