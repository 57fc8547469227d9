"""Print the held-out sample of P2's counted signals from a database loaded with ``--szz``.

Usage (from the repo root, ``src`` on ``PYTHONPATH``)::

    python tests/data/p2_holdout/select_holdout.py DB N [SEED]

P2 runs with the pre-registration in the working tree; the candidates are its counted signals
(reverts and fix-after-feature) whose ``fixing_sha`` none of the other label files
(``labels_paths`` minus ``holdout_labels_paths``) labels, sorted by (repo, fixing_sha); the
sample is ``random.Random(SEED).sample(candidates, min(N, len(candidates)))``, printed in the
order drawn as ``repo<TAB>kind<TAB>fixing_sha<TAB>introducing_sha<TAB>bucket<TAB>subject``.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import duckdb

from agent_reflection.experiments.p2.analysis import run_p2
from agent_reflection.experiments.p2.precision import label_files, read_labels
from agent_reflection.experiments.registration import load_preregistration

DEFAULT_SEED = 20261123
ROOT = Path(__file__).resolve().parents[3]


def main(db: str, n: int, seed: int = DEFAULT_SEED) -> None:
    prereg = load_preregistration(ROOT / "preregistration.toml")
    p = prereg.p2
    others = [path for path in p.labels_paths if path not in p.holdout_labels_paths]
    known = {lab.fixing_sha for lab in read_labels(label_files(ROOT, others))}
    con = duckdb.connect(db, read_only=True)
    signals = run_p2(con, prereg, labels=[]).details["signals"]
    candidates = sorted(
        (s for s in signals if s["bucket"] is not None and s["fixing_sha"] not in known),
        key=lambda s: (s["repo"], s["fixing_sha"]),
    )
    print(f"# {len(candidates)} candidates, seed {seed}", file=sys.stderr)
    for s in random.Random(seed).sample(candidates, min(n, len(candidates))):
        fields = (s["repo"], s["kind"], s["fixing_sha"], s["introducing_sha"], s["bucket"])
        print("\t".join([*fields, s["subject"]]))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *(int(a) for a in sys.argv[3:4]))
