#!/usr/bin/env python3
"""Rows per second per core of README's "Auditing logged traffic" recipes inside each engine, next to the CLI.

    tests/engines/.venv/bin/python tests/bench/engines.py [--copies N] [--engines LIST] [--repeat R]

The rows are every bundled fixture (`fixtures/**/*.json`), N copies of each (default 5: 3,020 rows), written to a
temporary folder, one file per row, and each engine reads them from there as its recipe does. One row is one
`validate_bytes` call and its verdict (status, sorted codes, calls as JSON). Each engine is timed as
it runs the recipe's function over every row (a count of the passing rows, so that no engine skips the work);
loading the table is not timed (DuckDB: a table; Spark: a cached DataFrame; ClickHouse: a Memory table in blocks
of 256 rows). Best of R runs.

- `in-process`: a loop of the verdict function over the bodies in memory, one core (the floor of every engine).
- `cli`: `validate_tool_stream.py FOLDER --quiet` (JSON Lines) in one process, interpreter start included.
- `duckdb`: the recipe's Python UDF, one connection (a Python UDF runs under the interpreter's lock: one core).
- `spark-1`, `spark-2`: the recipe's UDF in local mode with 1 and 2 cores (`local[1]`, `local[2]`), the
  validator shipped by addPyFile; Spark starts before the timing.
- `clickhouse-1`, `clickhouse-2`: the recipe's executable UDF (`executable_pool`, the command line's
  `--jsonl - --jsonl-rows envelope`) in chdb with `max_threads` 1 and 2: that many validator processes work at
  once; the pool's processes start inside the first (discarded) run.

"per core" divides rows/s by the cores the engine was given. CPU seconds are this process's, its waited children's
and (Linux, from /proc) those of every process still running below it: Spark's JVM and its Python workers,
ClickHouse's pool of validators. "rows/CPU s" divides the rows by them: on a shared machine the figure to compare.
Each engine whose package is missing is left out with a message (python3 tests/engines/setup.py installs them).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "validate_tool_stream.py")
FIXTURES = os.path.join(ROOT, "fixtures")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import validate_tool_stream as vts  # noqa: E402  (path set up just above)

ENGINES = ("in-process", "cli", "duckdb", "spark-1", "spark-2", "clickhouse-1", "clickhouse-2")
STRUCT = "STRUCT(status VARCHAR, codes VARCHAR[], calls VARCHAR)"
CLICKHOUSE_CONFIG = """<functions><function><type>executable_pool</type><name>tool_stream_report</name>
<return_type>Tuple(status String, findings Array(Tuple(code String, message String)), calls String)</return_type>
<argument><type>String</type><name>envelope</name></argument><format>JSONEachRow</format>
<command>validate_tool_stream.py --jsonl - --jsonl-rows envelope</command>
<max_command_execution_time>600</max_command_execution_time></function></functions>
"""


def tool_stream_verdict(body):
    """README's verdict function."""
    report = vts.validate_bytes(body)
    return {"status": report["status"], "codes": sorted({f["code"] for f in report["findings"]}),
            "calls": json.dumps(report["calls"])}


def _descendants_cpu():
    """CPU seconds of the living processes below this one (Linux /proc: the JVM, its Python workers, ClickHouse's
    pool), each with its waited children's; 0 where /proc cannot be read."""
    tick, parents, cpu = os.sysconf("SC_CLK_TCK"), {}, {}
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents[pid] = int(fields[1])
        cpu[pid] = sum(int(value) for value in fields[11:15]) / tick
    below, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier and pid not in below}
        below |= frontier
    return sum(cpu[pid] for pid in below)


def cpu_seconds():
    """This process's CPU seconds, its waited children's and those of the processes still running below it."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + _descendants_cpu()


def write_rows(folder, copies):
    """N copies of every bundled fixture, one file per row; the bodies in memory, in file order."""
    bodies = []
    for where, _, names in sorted(os.walk(FIXTURES)):
        for name in sorted(names):
            if name.endswith(".json"):
                with open(os.path.join(where, name), "rb") as handle:
                    bodies.append(handle.read())
    rows = []
    for copy in range(copies):
        for number, body in enumerate(bodies):
            with open(os.path.join(folder, f"{copy:03d}-{number:04d}.json"), "wb") as handle:
                handle.write(body)
            rows.append(body)
    return rows


def timed(run, repeat):
    """(rows counted, best wall seconds, CPU seconds of that run) of `run()`, which returns a row count."""
    best = None
    for _ in range(repeat):
        cpu, start = cpu_seconds(), time.perf_counter()
        count = run()
        wall, used = time.perf_counter() - start, cpu_seconds() - cpu
        if best is None or wall < best[1]:
            best = (count, wall, used)
    return best


def in_process(rows, folder, repeat):
    return 1, timed(lambda: sum(tool_stream_verdict(body)["status"] == "pass" for body in rows), repeat)


def cli(rows, folder, repeat):
    def run():
        done = subprocess.run([sys.executable, SCRIPT, folder, "--quiet"], capture_output=True, check=False,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        summary = json.loads(done.stdout.splitlines()[-1])["summary"]
        return summary["pass"]
    return 1, timed(run, repeat)


def duckdb_engine(rows, folder, repeat):
    import duckdb

    con = duckdb.connect()
    con.create_function("tool_stream_verdict", tool_stream_verdict, ["BLOB"], STRUCT)
    con.sql(f"CREATE TABLE bodies AS SELECT filename AS name, content AS body FROM read_blob('{folder}/*.json')")
    query = "SELECT count(*) FILTER (WHERE tool_stream_verdict(body).status = 'pass') FROM bodies"
    return 1, timed(lambda: con.sql(query).fetchall()[0][0], repeat)


def spark_engine(cores):
    def engine(rows, folder, repeat):
        from pyspark.sql import SparkSession
        from pyspark.sql.functions import udf

        os.environ.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                          SPARK_LOCAL_IP="127.0.0.1")
        spark = (SparkSession.builder.master(f"local[{cores}]").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        try:
            spark.sparkContext.setLogLevel("ERROR")
            spark.sparkContext.addPyFile(SCRIPT)
            verdict = udf(tool_stream_verdict, "struct<status:string,codes:array<string>,calls:string>")
            bodies = spark.read.format("binaryFile").load(folder).repartition(cores * 4).cache()
            bodies.count()
            passing = bodies.select(verdict("content").alias("v")).where("v.status = 'pass'")
            passing.count()     # the Python workers start here, not in the timing
            return cores, timed(passing.count, repeat)
        finally:
            spark.stop()
    return engine


def clickhouse_engine(threads):
    def engine(rows, folder, repeat):
        import chdb

        scripts = tempfile.mkdtemp(prefix="vts-udf-")
        try:
            with open(os.path.join(scripts, "tool_stream_function.xml"), "w", encoding="utf-8") as handle:
                handle.write(CLICKHOUSE_CONFIG)
            shutil.copy(SCRIPT, scripts)
            conn = chdb.connect(f":memory:?udf_path={scripts}")
            # a table of blocks of 256 rows, so that max_threads blocks go to the pool at once
            conn.query(f"CREATE TABLE bodies ENGINE = Memory AS SELECT _path AS name, raw_blob AS body "
                       f"FROM file('{folder}/*.json', RawBLOB) SETTINGS min_insert_block_size_rows = 256, "
                       f"max_block_size = 256")
            query = (f"SELECT countIf(tool_stream_report(body).status = 'pass') FROM bodies "
                     f"SETTINGS max_threads = {threads}")

            def run():
                return int(conn.query(query, "TSV").bytes())
            run()               # the pool's validators start here
            try:
                return threads, timed(run, repeat)
            finally:
                conn.close()
        finally:
            shutil.rmtree(scripts, ignore_errors=True)
    return engine


RUNNERS = {"in-process": in_process, "cli": cli, "duckdb": duckdb_engine, "spark-1": spark_engine(1),
           "spark-2": spark_engine(2), "clickhouse-1": clickhouse_engine(1), "clickhouse-2": clickhouse_engine(2)}
PACKAGES = {"duckdb": "duckdb", "spark": "pyspark", "clickhouse": "chdb"}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tests/bench/engines.py", allow_abbrev=False,
                                     description="Rows per second per core of the engine recipes, next to the CLI.")
    parser.add_argument("--copies", type=int, default=5, help="copies of every bundled fixture (default 5)")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of {', '.join(ENGINES)}")
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine; the best is shown (default 3)")
    args = parser.parse_args(argv)
    engines = [name for name in args.engines.split(",") if name]
    unknown = [name for name in engines if name not in RUNNERS]
    if unknown or args.copies < 1 or args.repeat < 1:
        parser.error(f"unknown engine {unknown[0]}" if unknown else "--copies and --repeat must be at least 1")

    folder = tempfile.mkdtemp(prefix="vts-rows-")
    try:
        rows = write_rows(folder, args.copies)
        want = sum(tool_stream_verdict(body)["status"] == "pass" for body in rows)
        print(f"{len(rows)} rows ({args.copies} copies of {len(rows) // args.copies} fixtures), "
              f"{sum(map(len, rows)) / 2**20:.1f} MiB; load average {os.getloadavg()[0]:.1f} at the start")
        print(f"{'engine':14} {'cores':>5} {'rows':>6} {'wall s':>7} {'rows/s':>7} {'per core':>8} {'CPU s':>6} "
              f"{'rows/CPU s':>10}")
        for name in engines:
            package = PACKAGES.get(name.split("-")[0])
            try:
                if package:
                    __import__(package)
            except ImportError:
                print(f"{name:14} left out: {package} is not installed (python3 tests/engines/setup.py)")
                continue
            cores, (passing, wall, used) = RUNNERS[name](rows, folder, args.repeat)
            if passing != want:
                print(f"{name:14} WRONG: {passing} passing rows, not {want}")
                continue
            print(f"{name:14} {cores:5d} {len(rows):6d} {wall:7.2f} {len(rows) / wall:7.0f} "
                  f"{len(rows) / wall / cores:8.0f} {used:6.2f} {len(rows) / max(used, 1e-9):10.0f}", flush=True)
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
