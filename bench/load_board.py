"""Time ``load_board`` on a board export against DuckDB's own CSV reader over the same file.

Usage: python bench/load_board.py [FILE] [--format jira] [--repeat 5]   (default: the Kafka Jira
export in ../shared/data/jira/ or $AGENT_REFLECTION_SHARED/data/jira/). Times, interleaved and
``--repeat`` times each, into a fresh database each time: ``reflect load board FILE --format F
--silent`` as a user runs it (whole process) against ``python -c`` running the baseline below
(whole process), and ``load_board`` in process against the baseline in process. Prints the
medians, their ratios, tasks/second and the load average. The baseline,
``CREATE TABLE AS SELECT * FROM read_csv(FILE)``, parses the same bytes but validates nothing,
derives no events or links and is not idempotent: it is the floor, not a target. There is no
goal for this load, so the last line reports the ratio without a verdict.
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

from agent_reflection.load.board import load_board
from agent_reflection.store.db import connect

SHARED = Path(
    os.environ.get("AGENT_REFLECTION_SHARED", Path(__file__).resolve().parents[1].parent / "shared")
)
DEFAULT = SHARED / "data/jira/kafka-jira-bug-fix-dataset.csv.gz"
#: The floor: DuckDB reads the same bytes into a table, all columns as text.
BASELINE = (
    "CREATE TABLE baseline AS SELECT * FROM read_csv(?, delim = ?, header = true,"
    " all_varchar = true)"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--format", default="jira")
    parser.add_argument("--delimiter", default=";", help="for the read_csv baseline")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved runs of each")
    args = parser.parse_args()
    if not args.file.exists():
        print(f"{args.file} not found (needs ../shared/ or a FILE argument)", file=sys.stderr)
        return 2
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
            summaries.append(load_board(con, args.file, args.format))
            con.close()

        def base() -> None:
            con = duckdb.connect(str(next(fresh)))
            con.execute(BASELINE, [str(args.file), args.delimiter])
            con.close()

        def cli() -> None:
            command = [sys.executable, "-m", "agent_reflection", "load", "board", str(args.file)]
            command += ["--format", args.format, "--silent", "--db", str(next(fresh))]
            subprocess.run(command, check=True, capture_output=True)

        def cli_base() -> None:
            code = (
                "import sys, duckdb; duckdb.connect(sys.argv[1]).execute(sys.argv[2], sys.argv[3:])"
            )
            command = [sys.executable, "-c", code, str(next(fresh)), BASELINE]
            subprocess.run([*command, str(args.file), args.delimiter], check=True)

        times: dict[str, list[float]] = {"ours": [], "base": [], "cli": [], "cli_base": []}
        for _ in range(args.repeat):
            for name, fn in (("cli", cli), ("cli_base", cli_base), ("ours", ours), ("base", base)):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    summary = summaries[0]
    print(summary.line())
    print(f"medians of {args.repeat} interleaved runs (load {os.getloadavg()[0]:.1f})")
    print(
        f"reflect load board: {med['cli']:.3f}s; python -c read_csv: {med['cli_base']:.3f}s; "
        f"ratio {med['cli'] / med['cli_base']:.1f}x (whole processes)"
    )
    print(
        f"load_board: {med['ours']:.3f}s ({summary.read / med['ours']:,.0f} tasks/s); "
        f"read_csv: {med['base']:.3f}s; ratio {med['ours'] / med['base']:.1f}x (in process)"
    )
    print(
        f"verdict: no goal set for this load; reflect load board costs "
        f"{med['cli'] / med['cli_base']:.1f}x DuckDB's read_csv of the same file"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
