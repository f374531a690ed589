"""Known-truth failure series (0/1 in send order, one row per replicate) for error-rate
verdicts: independent failures, memoryless outages, and outages of fixed length range."""

from __future__ import annotations

import numpy as np

from pytest_latency.analysis.outages import outage_bounds


def independent_failures(seed: int, reps: int, n: int, rate: float) -> np.ndarray:
    return np.random.default_rng(seed).random((reps, n)) < rate


def outage_series(seed: int, reps: int, n: int, rate: float, mean_run: float) -> np.ndarray:
    """Outages start at random and last a geometric number of requests (mean
    ``mean_run``, memoryless), so the long-run failure rate is ``rate``."""
    rng = np.random.default_rng(seed)
    start = rate / (mean_run * (1.0 - rate) + rate)  # P(outage begins) per healthy request
    stop = 1.0 / mean_run
    series = np.zeros((reps, n), dtype=bool)
    down = rng.random(reps) < rate
    for index in range(n):
        series[:, index] = down
        draw = rng.random(reps)
        down = np.where(down, draw >= stop, draw < start)
    return series


def long_outages(
    seed: int, reps: int, n: int, rate: float, shortest: int, longest: int
) -> np.ndarray:
    """Outages of a uniform length in [shortest, longest] requests (a 1-3 s blip at 100
    req/s is 100-300), beginning at random, so that the failure rate is ``rate``. Runs
    start in the outage process's steady state (a run may begin mid-outage)."""
    rng = np.random.default_rng(seed)
    mean = (shortest + longest) / 2.0
    start = rate / (mean * (1.0 - rate))  # outages per healthy request
    series = np.zeros((reps, n), dtype=bool)
    for row in series:
        position = -int(rng.integers(0, int(mean / rate)))  # a random phase of the cycle
        while position < n:
            position += int(rng.geometric(start))
            length = int(rng.integers(shortest, longest + 1))
            row[max(position, 0) : max(position + length, 0)] = True
            position += length
    return series


def verdict_shares(
    series: np.ndarray, limit: float, confidence: float, outage: float | None = None
) -> tuple[float, float]:
    """(FAIL, PASS) shares of the plugin's error-rate bounds over the rows."""
    fails = passes = 0
    for row in series:
        bounds = outage_bounds(row, confidence, outage=outage)
        fails += bounds.lower > limit
        passes += bounds.upper <= limit
    return fails / len(series), passes / len(series)
