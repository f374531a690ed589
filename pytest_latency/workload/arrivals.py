"""Arrival schedules: planned send times for one phase, pure and seeded.

Gamma gaps follow vLLM's ``bench serve`` convention (shape = burstiness, mean gap =
1/rate), so ``burstiness=1`` is exactly Poisson. The whole schedule is drawn up front:
what the server does can never change when a request is offered (open loop).
"""

from __future__ import annotations

import numpy as np

from pytest_latency.spec import Phase


def arrival_times(phase: Phase, rng: np.random.Generator) -> np.ndarray:
    """Send times in seconds from the phase start, sorted, all in ``[0, duration)``."""
    if phase.arrival == "constant":
        count = int(np.floor(phase.rate * phase.duration_s + 1e-9))
        return np.arange(count, dtype=np.float64) / phase.rate
    shape = 1.0 if phase.arrival == "poisson" else phase.burstiness
    # Draw in blocks sized for the expected count plus slack, so one draw nearly always suffices.
    expected = phase.rate * phase.duration_s
    block = int(expected + 6.0 * np.sqrt(expected + 1.0) + 16)
    gaps = np.empty(0, dtype=np.float64)
    total = 0.0
    while total < phase.duration_s:
        more = rng.gamma(shape, 1.0 / (phase.rate * shape), size=block)
        gaps = np.concatenate([gaps, more])
        total = float(gaps.sum())
    # The first arrival comes one gap after the phase start, as in a Poisson process.
    times = np.cumsum(gaps)
    return times[times < phase.duration_s]
