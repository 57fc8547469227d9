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

The two loads (in process and cli) run at several sizes (``--scales``): the files themselves,
then 5 and 20 copies of each with every UUID replaced (new sessions and messages, so nothing is
already present).

Each is timed ``--repeat`` times, on and off alternating; the medians are compared, with the load
average. It prints the ratios on/off and a verdict on the goal (load with redaction on: <= 1.10x
the load with it off, at every size, judged on the whole process; the in-process ratio beside),
and the number of redactions made.

    python bench/redact.py
    python bench/redact.py --repeat 9 --sidecars 20000 my-transcripts/*.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
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
    """Medians of ``on`` and ``off``, run alternately ``repeat`` times each, the order reversed
    every other turn: a load spike or a warm cache weighs on both."""
    times_on, times_off = [], []
    for turn in range(repeat):
        if turn % 2 == 0:
            times_on.append(timed(on))
            times_off.append(timed(off))
        else:
            times_off.append(timed(off))
            times_on.append(timed(on))
    return statistics.median(times_on), statistics.median(times_off)


def load_average() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sidecars", type=int, default=5000, help="0: skip that part")
    parser.add_argument(
        "--scales",
        default="1,5,20",
        help="sizes of the loads: copies of each transcript, with new UUIDs (default 1,5,20)",
    )
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

    verdicts: list[tuple[float, float, int]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for scale in (int(k) for k in args.scales.split(",")):
            scaled = scaled_copies(files, scale, Path(tmp) / f"x{scale}")
            size = sum(f.stat().st_size for f in scaled)
            print(f"x{scale}: {len(scaled)} transcripts, {size / 1e6:.2f} MB", flush=True)
            verdicts.append((*load_ratios(scaled, args.repeat, Path(tmp)), size))
    worst = max(cli_ratio for _, cli_ratio, _ in verdicts)
    met = "meets" if worst <= GOAL else "MISSES"
    print(
        "verdict: redaction costs the transcripts load "
        + ", ".join(
            f"{cli_ratio:.2f}x at {size / 1e6:.2f} MB ({ratio:.2f}x in process)"
            for ratio, cli_ratio, size in verdicts
        )
        + f" as a whole process, medians of {args.repeat}: {met} the goal <= {GOAL:.2f}x at "
        "every size"
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


#: a UUID anywhere in a line: session ids, message uuids and parent uuids, which key the rows
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def renamed(text: str, copy: int) -> str:
    """``text`` with every UUID replaced by one derived from it and ``copy``."""
    return _UUID.sub(lambda m: str(uuid.uuid5(uuid.NAMESPACE_OID, f"{copy}:{m[0]}")), text)


def scaled_copies(files: list[Path], scale: int, folder: Path) -> list[Path]:
    """``files`` themselves at scale 1; else ``scale`` copies of each with every UUID replaced
    by one derived from it and the copy's number, so each copy is new sessions and messages to
    the loader (not rows already present)."""
    if scale == 1:
        return files
    folder.mkdir(parents=True)
    out = []
    for k in range(scale):
        for f in files:
            text = renamed(f.read_text("utf-8"), k)
            copy = folder / f"{k:04d}-{f.name}"
            copy.write_text(text, "utf-8")
            out.append(copy)
    return out


def load_ratios(files: list[Path], repeat: int, tmp: Path) -> tuple[float, float]:
    """(in-process ratio, whole-process ratio) of the transcripts load with redaction on/off."""
    runs = iter(range(10**6))

    def load(redact_on: bool) -> Callable[[], object]:
        def run() -> object:
            con = connect(tmp / f"bench{next(runs)}.duckdb")
            try:
                return load_transcripts(con, files, redact=redact_on)
            finally:
                con.close()

        return run

    load(True)()  # warm-up: imports, the schema's first creation
    load_on, load_off = interleaved(load(True), load(False), repeat)

    def cli(*flags: str) -> Callable[[], object]:
        def run() -> object:
            db = str(tmp / f"cli{next(runs)}.duckdb")
            command = [sys.executable, "-m", "agent_reflection", "load", "transcripts"]
            command += [*map(str, files), "--db", db, "--silent", *flags]
            return subprocess.run(command, check=True, capture_output=True)

        return run

    cli_on, cli_off = interleaved(cli(), cli("--no-redact"), repeat)
    for stale in tmp.glob("*.duckdb*"):
        stale.unlink()
    ratio, cli_ratio = load_on / load_off, cli_on / cli_off
    print(f"  load in process: on {load_on:.3f}s, off {load_off:.3f}s, ratio {ratio:.2f}x")
    print(
        f"  reflect load transcripts: on {cli_on:.3f}s, off (--no-redact) {cli_off:.3f}s, "
        f"ratio {cli_ratio:.2f}x ({load_average()})",
        flush=True,
    )
    return ratio, cli_ratio


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
