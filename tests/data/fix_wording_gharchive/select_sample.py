"""Draw the GH Archive sample that tests P2's fix-wording readings out of sample.

Usage (from the repo root, ``src`` on ``PYTHONPATH``)::

    python tests/data/fix_wording_gharchive/select_sample.py [ARCHIVE] [--raters DIR]

ARCHIVE defaults to ``../shared/data/github/gharchive-2015-01-01-12/2015-01-01-12.json.gz``.
The population: the commits of the hour's PushEvents, one per distinct message (the first in
file order: forks and mirrors push the same commit under several repositories), without
subjects that start with ``Merge `` (P2 never reads a merge as a fix), whose message is
fix-like under the "word" reading (``derive_signals(subject, body, "word")``). Each is put in
the stratum ``kept`` (fix-like under "verb" too) or ``dropped`` (fix-like only under "word").
The sample: every ``dropped`` commit and ``random.Random(SEED).sample`` of ``KEPT_SAMPLE``
``kept`` commits (sorted by sha first). Printed as CSV (``row,stratum,repo,sha,subject``), in
an order shuffled with the same seed; ``row`` numbers that order.

``--raters DIR`` also writes ``DIR/messages.csv`` (``row,message``): what the raters read, the
whole message without repository, sha or stratum.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import sys
from pathlib import Path

from agent_reflection.load.git.signals import derive_signals

SEED = 20261129
KEPT_SAMPLE = 125
ROOT = Path(__file__).resolve().parents[3]
ARCHIVE = ROOT.parent / "shared/data/github/gharchive-2015-01-01-12/2015-01-01-12.json.gz"


def population(archive: Path) -> list[dict[str, str]]:
    """The word-fix-like commits of the archive, one per distinct message, with their stratum."""
    seen: set[str] = set()
    out: list[dict[str, str]] = []
    with gzip.open(archive, "rt", encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event["type"] != "PushEvent":
                continue
            for commit in event["payload"].get("commits", []):
                message = commit["message"]
                if message in seen:
                    continue
                seen.add(message)
                subject, _, body = message.partition("\n")
                if subject.startswith("Merge "):
                    continue
                if not derive_signals(subject, body.strip(), "word").is_fix_like:
                    continue
                verb = derive_signals(subject, body.strip(), "verb").is_fix_like
                out.append(
                    {
                        "stratum": "kept" if verb else "dropped",
                        "repo": event["repo"]["name"],
                        "sha": commit["sha"],
                        "subject": subject,
                        "message": message,
                    }
                )
    return out


def sample(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Every dropped commit and a seeded sample of the kept ones, in a seeded shuffled order."""
    rng = random.Random(SEED)
    kept = sorted((r for r in rows if r["stratum"] == "kept"), key=lambda r: r["sha"])
    dropped = sorted((r for r in rows if r["stratum"] == "dropped"), key=lambda r: r["sha"])
    drawn = dropped + rng.sample(kept, min(KEPT_SAMPLE, len(kept)))
    rng.shuffle(drawn)
    return drawn


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", nargs="?", type=Path, default=ARCHIVE)
    parser.add_argument("--raters", type=Path, help="also write DIR/messages.csv for the raters")
    args = parser.parse_args(argv)
    rows = population(args.archive)
    drawn = sample(rows)
    counts = {s: sum(r["stratum"] == s for r in rows) for s in ("kept", "dropped")}
    print(f"# population {len(rows)}: {counts}; sample {len(drawn)}, seed {SEED}", file=sys.stderr)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["row", "stratum", "repo", "sha", "subject"])
    for i, r in enumerate(drawn, 1):
        out.writerow([i, r["stratum"], r["repo"], r["sha"], r["subject"]])
    if args.raters:
        args.raters.mkdir(parents=True, exist_ok=True)
        with open(args.raters / "messages.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["row", "message"])
            for i, r in enumerate(drawn, 1):
                w.writerow([i, r["message"]])


if __name__ == "__main__":
    main()
