"""Benchmark: the redaction step, alone and inside the transcripts loader.

In the same run, on the real Claude Code transcripts (../shared/data/claude-code/ or FILES):

  redact   ``Redactor.text`` over every line (what the loader calls), in MB/s of input;
  parse    ``parse_transcript`` with redaction on and off (the loader's CPU part);
  load     ``load_transcripts`` into a fresh DuckDB file with redaction on and off;
  commands ``Redactor.findings`` over the real run-log commands (agent-runs/steps.jsonl.gz);
  sidecars ``load_sidecars`` of ``--sidecars`` generated sidecars (bench/load_sidecars.py's
           generator) with redaction on and off.

  cli      ``reflect load transcripts FILES --db NEW --silent`` as a user runs it (whole process,
           start-up included) against the same command with ``--no-redact``: the baseline is
           the same load with the same flags but redaction off.

Each is timed ``--repeat`` times, on and off alternating; the medians are compared, with the load
average. It prints the ratios on/off and a verdict on the goal (load with redaction on: <= 1.10x
the load with it off), for the whole process and in process, and the number of redactions made.

    python bench/redact.py
    python bench/redact.py --repeat 9 --sidecars 20000 my-transcripts/*.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent_reflection.load.sidecars.loader import load_sidecars
from agent_reflection.load.transcripts import load_transcripts, parse_transcript
from agent_reflection.redact import Redactor
from agent_reflection.store.db import connect

SHARED = Path(
    os.environ.get("AGENT_REFLECTION_SHARED", Path(__file__).resolve().parents[1].parent / "shared")
)


GOAL = 1.10


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(
    on: Callable[[], object], off: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Medians of ``on`` and ``off``, run alternately ``repeat`` times each: a load spike hits
    both."""
    times_on, times_off = [], []
    for _ in range(repeat):
        times_on.append(timed(on))
        times_off.append(timed(off))
    return statistics.median(times_on), statistics.median(times_off)


def load_average() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sidecars", type=int, default=5000, help="0: skip that part")
    args = parser.parse_args()
    files = args.files or sorted((SHARED / "data/claude-code").glob("*.jsonl"))
    if not files:
        print("no transcripts (needs ../shared/ or FILES)", file=sys.stderr)
        return 2
    lines = [line for f in files for line in f.read_text("utf-8").splitlines(keepends=True)]
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    on, off = Redactor(os.urandom(32)), Redactor(enabled=False)
    found = sum(len(on.findings(line)) for line in lines)
    print(f"{len(files)} files, {len(lines):,} lines, {megabytes:.3f} MB; {found} redactions")

    redact = statistics.median(
        timed(lambda: [on.text(line) for line in lines]) for _ in range(args.repeat)
    )
    print(f"redact: {redact:.3f}s = {megabytes / redact:.1f} MB/s (median, {load_average()})")

    def parse(redactor: Redactor) -> Callable[[], object]:
        return lambda: [
            parse_transcript(f.read_text("utf-8").splitlines(True), str(f), redactor) for f in files
        ]

    parse_on, parse_off = interleaved(parse(on), parse(off), args.repeat)
    print(
        f"parse: on {parse_on:.3f}s, off {parse_off:.3f}s, ratio {parse_on / parse_off:.2f}x "
        f"({load_average()})"
    )

    with tempfile.TemporaryDirectory() as tmp:
        runs = iter(range(10**6))

        def load(redact_on: bool) -> Callable[[], object]:
            def run() -> object:
                con = connect(Path(tmp) / f"bench{next(runs)}.duckdb")
                try:
                    return load_transcripts(con, files, redact=redact_on)
                finally:
                    con.close()

            return run

        load(True)()  # warm-up: imports, the schema's first creation
        load_on, load_off = interleaved(load(True), load(False), args.repeat)

        def cli(*flags: str) -> Callable[[], object]:
            def run() -> object:
                db = str(Path(tmp) / f"cli{next(runs)}.duckdb")
                command = [sys.executable, "-m", "agent_reflection", "load", "transcripts"]
                command += [*map(str, files), "--db", db, "--silent", *flags]
                return subprocess.run(command, check=True, capture_output=True)

            return run

        cli_on, cli_off = interleaved(cli(), cli("--no-redact"), args.repeat)
    ratio, cli_ratio = load_on / load_off, cli_on / cli_off
    print(f"load in process: on {load_on:.3f}s, off {load_off:.3f}s, ratio {ratio:.2f}x")
    print(
        f"reflect load transcripts: on {cli_on:.3f}s, off (--no-redact) {cli_off:.3f}s, "
        f"ratio {cli_ratio:.2f}x ({load_average()})"
    )
    met = "meets" if cli_ratio <= GOAL else "MISSES"
    print(
        f"verdict: redaction costs the transcripts load {cli_ratio:.2f}x as a whole process "
        f"({ratio:.2f}x in process), medians of {args.repeat}: {met} the goal <= {GOAL:.2f}x"
    )
    steps = SHARED / "data/agent-runs/steps.jsonl.gz"
    if steps.exists():
        with gzip.open(steps, "rt", encoding="utf-8") as fh:
            commands = fh.read().splitlines()
        size = sum(len(c.encode("utf-8")) for c in commands) / 1e6
        found = []
        took = timed(lambda: found.append(sum(len(on.findings(c)) for c in commands)))
        print(
            f"commands: {len(commands):,} lines, {size:.1f} MB, {found[0]} redactions, "
            f"{size / took:.1f} MB/s"
        )
    if args.sidecars:
        sidecar_ratio(args.sidecars, args.repeat)
    return 0


def sidecar_ratio(n: int, repeat: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from load_sidecars import generate

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sidecars"
        generate(folder, n)
        runs = iter(range(10**6))

        def load(redact_on: bool) -> float:
            con = connect(Path(tmp) / f"sidecars{next(runs)}.duckdb")
            try:
                return timed(lambda: load_sidecars(con, [folder], redact=redact_on))
            finally:
                con.close()

        times_on, times_off = [], []
        for _ in range(repeat):  # alternating: a load spike hits both
            times_on.append(load(True))
            times_off.append(load(False))
        on, off = statistics.median(times_on), statistics.median(times_off)
    print(
        f"sidecars: {n:,} files, on {on:.3f}s, off {off:.3f}s (medians), ratio {on / off:.2f}x "
        f"({load_average()})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
