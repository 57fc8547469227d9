"""The figures of README.md, "Results", from the label files beside this script.

Usage (from the repo root, ``src`` on ``PYTHONPATH``)::

    python tests/data/fix_wording_gharchive/summarise.py

Reads ``sample.csv`` (strata), ``rater1.csv``, ``rater2.csv`` and ``adjudicated.csv`` (the third
judge's decision where the raters disagree on ``repair``), and prints, for each rater and for
the consensus, the figures the README states before the labels: p_kept and p_dropped with
Wilson intervals, the precision of each reading and the share of repair claims the verb reading
loses (all repairs, then behaviour repairs only) with stratified bootstrap intervals, and Cohen's
kappa between the raters. Needs no ``../shared``.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agent_reflection.experiments.p2.raters import cohens_kappa
from agent_reflection.stats.wilson import wilson_ci

HERE = Path(__file__).resolve().parent
#: The strata's sizes in the population (select_sample.py: 559 word-fix-like messages).
POPULATION = {"kept": 434, "dropped": 125}
SEED = 20261129
RESAMPLES = 10_000
REPAIR = ("yes", "no")
KINDS = ("behaviour", "cosmetic", "unknown", "none")


@dataclass(frozen=True)
class Judgement:
    repair: str
    kind: str


@dataclass(frozen=True)
class Figure:
    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.value:.3f} ({self.low:.3f}–{self.high:.3f})"


@dataclass(frozen=True)
class Figures:
    labeller: str
    kept: tuple[int, int]  # (yes, n)
    dropped: tuple[int, int]
    p_kept: Figure
    p_dropped: Figure
    precision_word: Figure
    precision_verb: Figure
    lost_by_verb: Figure
    behaviour_kept: tuple[int, int]
    behaviour_dropped: tuple[int, int]
    behaviour_precision_word: Figure
    behaviour_precision_verb: Figure
    behaviour_lost_by_verb: Figure


def read_strata(path: Path = HERE / "sample.csv") -> dict[int, str]:
    with open(path, newline="", encoding="utf-8") as f:
        return {int(r["row"]): r["stratum"] for r in csv.DictReader(f)}


def read_judgements(path: Path) -> dict[int, Judgement]:
    """A rater's (or the third judge's) file; a bad value names the file, row and field."""
    out: dict[int, Judgement] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            where = f"{path.name} line {line} (row {r.get('row')})"
            if r["repair"] not in REPAIR:
                raise ValueError(f"{where}: repair must be one of {REPAIR}, got {r['repair']!r}")
            if r["kind"] not in KINDS or (r["kind"] == "none") != (r["repair"] == "no"):
                raise ValueError(f"{where}: kind {r['kind']!r} does not fit repair {r['repair']!r}")
            out[int(r["row"])] = Judgement(r["repair"], r["kind"])
    return out


def consensus(
    first: Mapping[int, Judgement],
    second: Mapping[int, Judgement],
    adjudicated: Mapping[int, Judgement],
) -> dict[int, Judgement]:
    """The raters' label where they agree on ``repair`` (the first rater's kind when they
    differ on it only), else the third judge's."""
    out: dict[int, Judgement] = {}
    for row, a in first.items():
        b = second[row]
        if a.repair == b.repair:
            out[row] = a
        elif row in adjudicated:
            out[row] = adjudicated[row]
        else:
            raise ValueError(f"row {row}: the raters disagree and adjudicated.csv has no decision")
    return out


def _shares(yes_kept: np.ndarray, yes_dropped: np.ndarray) -> tuple[np.ndarray, ...]:
    """(precision of word, precision of verb, share lost by verb) from the strata's shares."""
    n_kept, n_dropped = POPULATION["kept"], POPULATION["dropped"]
    found_kept, found_dropped = n_kept * yes_kept, n_dropped * yes_dropped
    found = found_kept + found_dropped
    lost = np.divide(found_dropped, found, out=np.full_like(found, np.nan), where=found > 0)
    return found / (n_kept + n_dropped), yes_kept, lost


def _derived(kept: Sequence[bool], dropped: Sequence[bool]) -> tuple[Figure, Figure, Figure]:
    k, d = np.asarray(kept, dtype=float), np.asarray(dropped, dtype=float)
    point = [float(x[0]) for x in _shares(np.array([k.mean()]), np.array([d.mean()]))]
    rng = np.random.default_rng(SEED)
    # a resample of a 0/1 stratum with replacement: its count of ones is Binomial(n, share)
    boot_k = rng.binomial(len(k), k.mean(), RESAMPLES) / len(k)
    boot_d = rng.binomial(len(d), d.mean(), RESAMPLES) / len(d)
    out = []
    for value, draws in zip(point, _shares(boot_k, boot_d), strict=True):
        low, high = np.nanquantile(draws, [0.025, 0.975])
        out.append(Figure(value, float(low), float(high)))
    return out[0], out[1], out[2]


def figures(labeller: str, labels: Mapping[int, Judgement], strata: Mapping[int, str]) -> Figures:
    by = {s: [labels[row] for row, st in strata.items() if st == s] for s in POPULATION}
    repair = {s: [j.repair == "yes" for j in by[s]] for s in by}
    behaviour = {s: [j.kind == "behaviour" for j in by[s]] for s in by}

    def wilson(flags: Sequence[bool]) -> Figure:
        w = wilson_ci(sum(flags), len(flags))
        return Figure(w.proportion, w.ci_low, w.ci_high)

    word, verb, lost = _derived(repair["kept"], repair["dropped"])
    b_word, b_verb, b_lost = _derived(behaviour["kept"], behaviour["dropped"])
    return Figures(
        labeller=labeller,
        kept=(sum(repair["kept"]), len(repair["kept"])),
        dropped=(sum(repair["dropped"]), len(repair["dropped"])),
        p_kept=wilson(repair["kept"]),
        p_dropped=wilson(repair["dropped"]),
        precision_word=word,
        precision_verb=verb,
        lost_by_verb=lost,
        behaviour_kept=(sum(behaviour["kept"]), len(behaviour["kept"])),
        behaviour_dropped=(sum(behaviour["dropped"]), len(behaviour["dropped"])),
        behaviour_precision_word=b_word,
        behaviour_precision_verb=b_verb,
        behaviour_lost_by_verb=b_lost,
    )


def main() -> None:
    strata = read_strata()
    first = read_judgements(HERE / "rater1.csv")
    second = read_judgements(HERE / "rater2.csv")
    adjudicated = read_judgements(HERE / "adjudicated.csv")
    agreed = [(first[r].repair, second[r].repair) for r in sorted(first)]
    kappa = cohens_kappa(agreed)
    print(
        f"raters agree on repair for {sum(a == b for a, b in agreed)} of {len(agreed)} rows;",
        end=" ",
    )
    print(
        f"Cohen's kappa {kappa.value:.3f} ({kappa.ci_low:.3f}–{kappa.ci_high:.3f})" if kappa else ""
    )
    sets = {"rater 1": first, "rater 2": second, "consensus": consensus(first, second, adjudicated)}
    for name, labels in sets.items():
        f = figures(name, labels, strata)
        kept, dropped = f"{f.kept[0]}/{f.kept[1]}", f"{f.dropped[0]}/{f.dropped[1]}"
        print(f"\n{name}: kept {kept} = {f.p_kept}; dropped {dropped} = {f.p_dropped}")
        print(f"  repair claims: precision word {f.precision_word}, verb {f.precision_verb}")
        print(f"    lost by verb {f.lost_by_verb}")
        b_kept = f"{f.behaviour_kept[0]}/{f.behaviour_kept[1]}"
        b_dropped = f"{f.behaviour_dropped[0]}/{f.behaviour_dropped[1]}"
        print(f"  behaviour repairs: kept {b_kept}, dropped {b_dropped}")
        print(f"    precision word {f.behaviour_precision_word}, verb {f.behaviour_precision_verb}")
        print(f"    lost by verb {f.behaviour_lost_by_verb}")


if __name__ == "__main__":
    main()
