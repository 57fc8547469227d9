"""Print the candidate commits of the P2 validation set for one cloned repository.

Usage (from the repo root, ``src`` on ``PYTHONPATH``)::

    python tests/data/p2_validation/select_candidates.py CLONE N_FIXES [SEED]

Candidates are every revert reachable from any ref, plus a seeded random sample of
``N_FIXES`` non-merge, non-revert fix-like commits (the production ``derive_signals`` rule).
Output: one tab-separated line per candidate, ``kind<TAB>sha<TAB>subject``, reverts first,
each group in the order git lists it / the sample drew it.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from agent_reflection.load.git.signals import derive_signals

DEFAULT_SEED = 20261123
_RECORD = "\x1e"
_FIELD = "\x1f"


def commits(clone: Path) -> list[tuple[str, int, str, str]]:
    """(sha, number of parents, subject, body) of every commit reachable from any ref."""
    out = subprocess.run(
        ["git", "log", "--all", f"--format=%H{_FIELD}%P{_FIELD}%s{_FIELD}%b{_RECORD}"],
        cwd=clone,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = []
    for record in out.split(_RECORD):
        record = record.strip("\n")
        if not record:
            continue
        sha, parents, subject, body = record.split(_FIELD, 3)
        rows.append((sha, len(parents.split()), subject, body))
    return rows


def select(
    clone: Path, n_fixes: int, seed: int = DEFAULT_SEED
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(sha, subject) of every revert, in ``git log --all`` order, and of the seeded sample
    of non-merge, non-revert fix-like commits, in the order the sample drew them."""
    reverts: list[tuple[str, str]] = []
    fixes: list[tuple[str, str]] = []
    for sha, n_parents, subject, body in commits(clone):
        signals = derive_signals(subject, body)
        if signals.is_revert:
            reverts.append((sha, subject))
        elif signals.is_fix_like and n_parents == 1:
            fixes.append((sha, subject))
    # Sort before sampling so the draw depends on the seed only, not on git's listing order.
    fixes.sort()
    sample = random.Random(seed).sample(fixes, min(n_fixes, len(fixes)))
    return reverts, sample


def main(clone: Path, n_fixes: int, seed: int) -> None:
    reverts, sample = select(clone, n_fixes, seed)
    for sha, subject in reverts:
        print(f"revert\t{sha}\t{subject}")
    for sha, subject in sample:
        print(f"fix\t{sha}\t{subject}")


if __name__ == "__main__":
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_SEED
    main(Path(sys.argv[1]), int(sys.argv[2]), seed)
