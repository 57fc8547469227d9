"""Time ``load_board`` on a board export against DuckDB's own CSV reader over the same file.

Usage: python bench/load_board.py [FILE] [--format jira]   (default: the Kafka Jira export in
../shared/data/jira/ or $AGENT_REFLECTION_SHARED/data/jira/). Prints both wall times, their
ratio and tasks/second. The baseline,
``CREATE TABLE AS SELECT * FROM read_csv(FILE)``, parses the same bytes but validates nothing,
derives no events or links and is not idempotent: it is the floor, not a target.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from agent_reflection.load.board import load_board
from agent_reflection.store.db import connect

SHARED = Path(
    os.environ.get("AGENT_REFLECTION_SHARED", Path(__file__).resolve().parents[1].parent / "shared")
)
DEFAULT = SHARED / "data/jira/kafka-jira-bug-fix-dataset.csv.gz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--format", default="jira")
    parser.add_argument("--delimiter", default=";", help="for the read_csv baseline")
    args = parser.parse_args()
    if not args.file.exists():
        print(f"{args.file} not found (needs ../shared/ or a FILE argument)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        con = connect(Path(tmp) / "bench.duckdb")
        # warm-up on a one-row export: lazy imports are not what is measured
        tiny = Path(tmp) / "tiny.jsonl"
        tiny.write_text('{"task_ref": "WARM-1"}\n')
        load_board(con, tiny, "jsonl")
        start = time.perf_counter()
        summary = load_board(con, args.file, args.format)
        ours = time.perf_counter() - start
        again_start = time.perf_counter()
        load_board(con, args.file, args.format)
        reload = time.perf_counter() - again_start
        start = time.perf_counter()
        con.execute(
            "CREATE TABLE baseline AS SELECT * FROM read_csv(?, delim = ?, header = true,"
            " all_varchar = true)",
            [str(args.file), args.delimiter],
        )
        base = time.perf_counter() - start
        con.close()
    print(summary.line())
    print(f"load_board: {ours:.3f}s ({summary.read / ours:,.0f} tasks/s); re-load {reload:.3f}s")
    print(f"duckdb read_csv baseline: {base:.3f}s")
    print(f"ratio load_board / read_csv: {ours / base:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
