"""Known-truth queue latencies for the statistics tests (simulation, no server)."""

from __future__ import annotations

import math

import numpy as np


def mm1_sojourns(seed: int, reps: int, n: int, utilisation: float, warm: int = 2000) -> np.ndarray:
    """Time in system of n consecutive customers of an M/M/1 queue (service rate 1).

    Lindley's recursion, vectorised over replicates; ``warm`` customers are discarded
    so each run starts in the stationary regime. True p-quantile: -ln(1-p)/(1-rho).
    """
    rng = np.random.default_rng(seed)
    total = n + warm
    gaps = rng.exponential(1.0 / utilisation, size=(reps, total))
    services = rng.exponential(1.0, size=(reps, total))
    wait = np.zeros(reps)
    sojourns = np.empty((reps, n))
    for index in range(total):
        if index >= warm:
            sojourns[:, index - warm] = wait + services[:, index]
        if index + 1 < total:
            wait = np.maximum(0.0, wait + services[:, index] - gaps[:, index + 1])
    return sojourns


def mm1_truth(q: float, utilisation: float) -> float:
    return -math.log(1.0 - q) / (1.0 - utilisation)


def drifting_lognormal(
    seed: int,
    reps: int,
    n: int,
    median: float = 0.060,
    sigma: float = 0.3,
    drift_sd: float = 0.15,
    drift_rho: float = 0.9,
) -> np.ndarray:
    """A lightly loaded server: lognormal TTFT around ``median`` whose level drifts with
    the machine (an AR(1) in send order, correlation ``drift_rho`` per request, stationary
    sd ``drift_sd`` in log), each request's own noise ``sigma`` on top."""
    rng = np.random.default_rng(seed)
    level = rng.normal(0.0, drift_sd, reps)
    shocks = rng.normal(0.0, drift_sd * math.sqrt(1.0 - drift_rho**2), (reps, n))
    drift = np.empty((reps, n))
    for index in range(n):
        level = drift_rho * level + shocks[:, index]
        drift[:, index] = level
    return median * np.exp(drift + rng.normal(0.0, sigma, (reps, n)))


def drifting_lognormal_truth(
    q: float, median: float = 0.060, sigma: float = 0.3, drift_sd: float = 0.15
) -> float:
    """The true q-quantile of :func:`drifting_lognormal` (the drift is stationary)."""
    from scipy.stats import norm

    return median * math.exp(float(norm.ppf(q)) * math.hypot(sigma, drift_sd))
