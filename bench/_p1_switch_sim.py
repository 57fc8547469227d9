"""Simulation behind P1's bootstrap budget (issue 17): coverage and agreement at the switch.

Not a bench (the leading underscore: no timing goal). Above ``[p1]
bootstrap_budget`` the clustered stratified DeLong interval replaces the cluster
bootstrap as P1's primary interval. This script measures, on simulated data of known truth at
sizes around that switch point, how often each interval holds the true stratified AUC
(coverage, with a Wilson interval) and how far the two intervals' bounds are apart.

Shapes (as ``bench/p1.py``'s, without the clipping to [0.8, 1]):

  questions  8 models (strata) answer each question (cluster); a question's difficulty moves
             both its correctness and its confidence in every model, so rows of a question are
             correlated (the design effect the cluster resampling is for);
  untied     4 models, every row its own cluster, continuous confidences: every row is a
             cluster type of its own (the shape that reaches the budget first).

The truth is the stratified AUC of one very large sample of the same model (``--truth-rows``).

    python bench/_p1_switch_sim.py --rows 100000 --replicates 200
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.stats.cluster_bootstrap import (
    bootstrap_size,
    cluster_bootstrap_stratified_auc,
)
from agent_reflection.stats.stratified import encode_design, stratified_auc
from agent_reflection.stats.wilson import wilson_ci

ROOT = Path(__file__).resolve().parents[1]
Sample = tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.int64], object]


def sample(shape: str, n: int, rng: np.random.Generator) -> Sample:
    """(scores, correct, strata, clusters) of ``n`` rows."""
    if shape == "questions":
        models = 8
        q = n // models
        difficulty = np.repeat(rng.normal(0.0, 1.0, q), models)
        model = np.tile(np.arange(models), q)
        skill = np.linspace(-1.2, -0.2, models)[model]
        correct = skill - difficulty + rng.normal(0.0, 1.0, q * models) > 0
        bias = np.linspace(0.0, 0.3, models)[model]
        scores = bias + 0.25 * correct - 0.2 * difficulty + rng.normal(0.0, 0.5, q * models)
        return scores, correct, model, np.repeat(np.arange(q), models)
    model = rng.integers(0, 4, n)
    correct = rng.random(n) < np.array([0.15, 0.3, 0.45, 0.6])[model]
    scores = np.array([0.0, 0.1, 0.2, 0.3])[model] + 0.3 * correct + rng.normal(0.0, 1.0, n)
    return scores, correct, model, None


def truth(shape: str, rows: int) -> float:
    scores, correct, strata, clusters = sample(shape, rows, np.random.default_rng(1))
    return float(stratified_auc(scores, correct, strata, clusters).value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["untied", "questions"])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--truth-rows", type=int, default=8_000_000)
    args = parser.parse_args()
    p = load_preregistration(ROOT / "preregistration.toml").p1
    print(
        f"P1 switch simulation: {p.bootstrap_resamples} resamples, seed {p.seed}, level "
        f"{p.confidence_level}, budget {p.bootstrap_budget:,} resamples x (types + keys); "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    for shape in args.shapes:
        true_auc = truth(shape, args.truth_rows)
        print(f"{shape}: true stratified AUC {true_auc:.5f} ({args.truth_rows:,} rows)", flush=True)
        for n in args.rows:
            rng = np.random.default_rng([n, 17])
            hits = {"bootstrap": 0, "delong": 0}
            low_gap: list[float] = []
            high_gap: list[float] = []
            width_ratio: list[float] = []
            types: list[int] = []
            ses: list[float] = []
            started = time.perf_counter()
            for _ in range(args.replicates):
                scores, correct, strata, clusters = sample(shape, n, rng)
                encoded = encode_design(strata, clusters, scores.size)
                size = bootstrap_size(scores, correct, encoded.strata, encoded.clusters)
                types.append(size.cluster_types + size.keys)
                d = stratified_auc(
                    scores, correct, strata, clusters, confidence_level=p.confidence_level
                )
                b = cluster_bootstrap_stratified_auc(
                    scores,
                    correct,
                    strata,
                    clusters,
                    confidence_level=p.confidence_level,
                    n_resamples=p.bootstrap_resamples,
                    seed=p.seed,
                    draws=p.bootstrap_draws,
                    encoded=encoded,
                )
                ses.append(d.se)
                hits["bootstrap"] += b.ci_low <= true_auc <= b.ci_high
                hits["delong"] += d.ci_low <= true_auc <= d.ci_high
                low_gap.append(b.ci_low - d.ci_low)
                high_gap.append(b.ci_high - d.ci_high)
                width_ratio.append((b.ci_high - b.ci_low) / (d.ci_high - d.ci_low))
            r = args.replicates
            cover = {}
            for k, v in hits.items():
                w = wilson_ci(v, r)
                cover[k] = f"{v / r:.3f} (Wilson {w.ci_low:.3f}-{w.ci_high:.3f})"
            gaps = np.abs(np.r_[low_gap, high_gap])
            print(
                f"  {shape} n={n:,} ({statistics.median(types):,.0f} cluster types + keys, "
                f"{p.bootstrap_resamples * statistics.median(types):,.0f} resamples x them), "
                f"{r} replicates, {time.perf_counter() - started:.0f}s, load average "
                f"{os.getloadavg()[0]:.2f}\n"
                f"    coverage: bootstrap {cover['bootstrap']}, "
                f"clustered DeLong {cover['delong']}\n"
                f"    bootstrap - DeLong bound: lower mean {np.mean(low_gap):+.5f} "
                f"(max |.| {np.max(np.abs(low_gap)):.5f}), upper mean {np.mean(high_gap):+.5f} "
                f"(max |.| {np.max(np.abs(high_gap)):.5f}); |gap| median {np.median(gaps):.5f}, "
                f"95th pct {np.quantile(gaps, 0.95):.5f}; width ratio median "
                f"{statistics.median(width_ratio):.4f} "
                f"(range {min(width_ratio):.4f}-{max(width_ratio):.4f}); DeLong SE median "
                f"{statistics.median(ses):.5f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
