"""Time ``load_board`` on a board export against DuckDB's own CSV reader over the same file.

Usage: python bench/load_board.py [FILE ...] [--format jira] [--repeat 5]   (default: the two
Jira exports in ../shared/data/jira/ or $AGENT_REFLECTION_SHARED/data/jira/, Commons Math and
Kafka, two sizes). For each file it times, interleaved and
``--repeat`` times each, into a fresh database each time: ``reflect load board FILE --format F
--silent`` as a user runs it (whole process) against ``python -c`` running the baseline below
(whole process), and ``load_board`` in process against the baseline in process. Prints the
medians, their ratios, tasks/second and the load average. The baseline,
``CREATE TABLE AS SELECT * FROM read_csv(FILE)``, parses the same bytes but validates nothing,
derives no events or links and is not idempotent: it is the floor, not a target. Goal: none is
set for this load in any issue, so the verdict line reports the ratios without a pass/fail.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from agent_reflection.load.board.loader import load_board
from agent_reflection.store.db import connect

SHARED = Path(
    os.environ.get("AGENT_REFLECTION_SHARED", Path(__file__).resolve().parents[1].parent / "shared")
)
DEFAULTS = [
    SHARED / "data/jira/math-jira-bug-fix-dataset.csv.gz",
    SHARED / "data/jira/kafka-jira-bug-fix-dataset.csv.gz",
]
#: The floor: DuckDB reads the same bytes into a table, all columns as text. The path and the
#: delimiter are written into the SQL, not bound: a bound parameter makes DuckDB's Python client
#: import pandas, a cost the baseline process would pay and ``reflect`` avoids.
BASELINE = (
    "CREATE TABLE baseline AS SELECT * FROM read_csv('{path}', delim = '{delim}', header = true,"
    " all_varchar = true)"
)


def baseline_sql(file: Path, delimiter: str) -> str:
    def quote(text: str) -> str:
        return text.replace("'", "''")

    return BASELINE.format(path=quote(str(file)), delim=quote(delimiter))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULTS)
    parser.add_argument("--format", default="jira")
    parser.add_argument("--delimiter", default=";", help="for the read_csv baseline")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved runs of each")
    args = parser.parse_args()
    for file in args.files:
        if not file.exists():
            print(f"{file} not found (needs ../shared/ or a FILE argument)", file=sys.stderr)
            return 2
    ratios = [bench_file(file, args.format, args.delimiter, args.repeat) for file in args.files]
    print(
        "verdict: no goal set for this load; reflect load board costs "
        + ", ".join(f"{ratio:.1f}x on {tasks:,} tasks" for tasks, ratio in ratios)
        + " DuckDB's read_csv of the same file (whole processes, medians)"
    )
    return 0


def bench_file(file: Path, board_format: str, delimiter: str, repeat: int) -> tuple[int, float]:
    """Time one file; print its figures; return (tasks read, whole-process ratio)."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = (Path(tmp) / f"bench{i}.duckdb" for i in range(10**6))
        con = connect(next(fresh))
        # warm-up on a one-row export: lazy imports are not what is measured
        tiny = Path(tmp) / "tiny.jsonl"
        tiny.write_text('{"task_ref": "WARM-1"}\n')
        load_board(con, tiny, "jsonl")
        con.close()
        summaries = []

        def ours() -> None:
            con = connect(next(fresh))
            summaries.append(load_board(con, file, board_format))
            con.close()

        def base() -> None:
            con = duckdb.connect(str(next(fresh)))
            con.execute(baseline_sql(file, delimiter))
            con.close()

        def cli() -> None:
            command = [sys.executable, "-m", "agent_reflection", "load", "board", str(file)]
            command += ["--format", board_format, "--silent", "--db", str(next(fresh))]
            subprocess.run(command, check=True, capture_output=True)

        def cli_base() -> None:
            code = "import sys, duckdb; duckdb.connect(sys.argv[1]).execute(sys.argv[2])"
            command = [sys.executable, "-c", code, str(next(fresh)), baseline_sql(file, delimiter)]
            subprocess.run(command, check=True)

        times: dict[str, list[float]] = {"ours": [], "base": [], "cli": [], "cli_base": []}
        loads: list[float] = []
        steps = [("cli", cli), ("cli_base", cli_base), ("ours", ours), ("base", base)]
        for turn in range(repeat):
            # the order reverses every other turn, so a load spike weighs on all alike
            for name, fn in steps if turn % 2 == 0 else steps[::-1]:
                loads.append(os.getloadavg()[0])
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    summary = summaries[0]
    print(f"{file.name}: {summary.line()}")
    print(
        f"  medians of {repeat} interleaved runs (load average {statistics.median(loads):.1f}, "
        f"{min(loads):.1f}-{max(loads):.1f})"
    )
    print(
        f"  reflect load board: {med['cli']:.3f}s; python -c read_csv: {med['cli_base']:.3f}s; "
        f"ratio {med['cli'] / med['cli_base']:.1f}x (whole processes)"
    )
    print(
        f"  load_board: {med['ours']:.3f}s ({summary.read / med['ours']:,.0f} tasks/s); "
        f"read_csv: {med['base']:.3f}s; ratio {med['ours'] / med['base']:.1f}x (in process)"
    )
    return summary.read, med["cli"] / med["cli_base"]


if __name__ == "__main__":
    sys.exit(main())
