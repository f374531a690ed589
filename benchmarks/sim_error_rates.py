"""Known-truth shares of wrong verdicts and power for error rates and stored baselines.

    python benchmarks/sim_error_rates.py [SCALE]   # SCALE 1 (default): the docs' counts

Prints every row of docs/statistics.md's error-rate and stored-baseline tables: the
share of FAIL and PASS verdicts over seeded replicates (1,000 for the error rates,
300 for baselines, times SCALE), beside the exact binomial test where it applies and
the rule before (an unseen outage of 20 requests always assumed; one stored run taken
as noiseless). The same seeds as tests/unit/analysis/test_error_rate_verdicts.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_latency.analysis import stored  # noqa: E402
from tests.helpers.failure_series import (  # noqa: E402
    independent_failures,
    long_outages,
    outage_series,
    verdict_shares,
)
from tests.unit.analysis.test_baseline import stored_rates  # noqa: E402
from tests.unit.analysis.test_error_rate_verdicts import exact_binomial_shares  # noqa: E402

CONFIDENCE = 0.99
OLD_OUTAGE = 20.0  # the rule before: every run assumed to have missed 20 failed requests


def error_rows(scale: int) -> None:
    reps = 1000 * scale
    rows = [
        ("0 of 240 failed, limit 5%", np.zeros((10, 240), dtype=bool), 0.05, None, None),
        (
            "independent 1%, n=240, limit 5%",
            independent_failures(1, reps, 240, 0.01),
            0.05,
            None,
            0.01,
        ),
        (
            "independent 10%, n=240, limit 5%",
            independent_failures(2, reps, 240, 0.10),
            0.05,
            None,
            0.10,
        ),
        (
            "independent 15%, n=240, limit 5%",
            independent_failures(3, reps, 240, 0.15),
            0.05,
            None,
            0.15,
        ),
        (
            "at the truth: independent 5%, n=240",
            independent_failures(4, reps, 240, 0.05),
            0.05,
            None,
            0.05,
        ),
        (
            "at the truth: independent 1%, n=2000",
            independent_failures(5, reps, 2000, 0.01),
            0.01,
            None,
            None,
        ),
        (
            "at the truth: 5% in outages of ~20 (5 seen), n=2000",
            outage_series(6, reps, 2000, 0.05, 20.0),
            0.05,
            None,
            None,
        ),
        (
            "at the truth: 1% in outages of ~20 (5 seen), n=10000",
            outage_series(7, reps // 2, 10_000, 0.01, 20.0),
            0.01,
            None,
            None,
        ),
        (
            "at the truth: 1% in outages of ~5, n=10000",
            outage_series(8, reps // 2, 10_000, 0.01, 5.0),
            0.01,
            None,
            None,
        ),
        (
            "at the truth: 5% in outages of ~3, n=240, nothing stated",
            outage_series(30, reps, 240, 0.05, 3.0),
            0.05,
            None,
            None,
        ),
        (
            "  same, outage stated as 6 requests",
            outage_series(30, reps, 240, 0.05, 3.0),
            0.05,
            6.0,
            None,
        ),
        (
            "at the truth: 5% in outages of ~5, n=240, nothing stated",
            outage_series(31, reps, 240, 0.05, 5.0),
            0.05,
            None,
            None,
        ),
        (
            "  same, outage stated as 10 requests",
            outage_series(31, reps, 240, 0.05, 5.0),
            0.05,
            10.0,
            None,
        ),
        (
            "at the truth: 1% in outages of ~20 (1 expected), n=2000, nothing stated",
            outage_series(10, reps, 2000, 0.01, 20.0),
            0.01,
            None,
            None,
        ),
        (
            "  same, outage stated as 40 requests (2 s at 20/s)",
            outage_series(10, reps, 2000, 0.01, 20.0),
            0.01,
            40.0,
            None,
        ),
        (
            "at the truth: 1% in outages of 100-300, n=30000, outage: 3s at 100/s",
            long_outages(11, 300 * scale, 30_000, 0.01, 100, 300),
            0.01,
            300.0,
            None,
        ),
    ]
    print(f"{'error rate':72s} {'FAIL':>6s} {'PASS':>6s}   exact binomial / rule before")
    for name, series, limit, outage, rate in rows:
        fails, passes = verdict_shares(series, limit, CONFIDENCE, outage)
        old_fails, old_passes = verdict_shares(series[:300], limit, CONFIDENCE, OLD_OUTAGE)
        extra = f"old {old_fails:5.1%} / {old_passes:5.1%}"
        if rate is not None:
            exact = exact_binomial_shares(series.shape[1], rate, limit)
            extra = f"exact {exact[0]:5.1%} / {exact[1]:5.1%}; " + extra
        print(f"{name:72s} {fails:6.1%} {passes:6.1%}   {extra}", flush=True)


def baseline_rows(scale: int) -> None:
    reps = 300 * scale
    print(f"\n{'stored p95 (p50 for power), 2,000 requests a run':72s} {'FAIL':>6s} {'PASS':>6s}")
    for runs in (1, 3, 5, 10):
        fails, passes = stored_rates(40 + runs, runs, 1.1, 0.10, reps=reps)
        print(
            f"{f'5% job noise, +10% at max_regression 10%, {runs} stored run(s)':72s}"
            f" {fails:6.1%} {passes:6.1%}",
            flush=True,
        )
    noise, stored.JOB_NOISE = stored.JOB_NOISE, 0.0  # the rule before: no noise assumed
    fails, passes = stored_rates(41, 1, 1.1, 0.10, reps=reps)
    stored.JOB_NOISE = noise
    print(
        f"{'  same, 1 stored run, the rule before (no noise assumed)':72s}"
        f" {fails:6.1%} {passes:6.1%}"
    )
    for runs in (1, 3, 10):
        for q, label in ((0.5, "p50"), (0.95, "p95")):
            fails, _ = stored_rates(60 + runs, runs, 1.3, 0.10, reps=reps // 2, q=q, noise=0.0)
            print(
                f"{f'no job noise, +30% at 10%, {label}, {runs} stored run(s): power':72s}"
                f" {fails:6.1%}",
                flush=True,
            )
        fails, _ = stored_rates(70 + runs, runs, 1.3, 0.10, reps=reps // 2, q=0.5)
        print(f"{f'5% job noise, +30% at 10%, p50, {runs} stored run(s): power':72s} {fails:6.1%}")


if __name__ == "__main__":
    started = time.perf_counter()
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    error_rows(scale)
    baseline_rows(scale)
    print(f"\n{time.perf_counter() - started:.0f} s")
