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
