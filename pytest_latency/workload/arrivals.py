"""Arrival schedules: planned send times for one phase, pure and seeded.

Gamma gaps follow vLLM's ``bench serve`` convention (shape = burstiness, mean gap =
1/rate), so ``burstiness=1`` is exactly Poisson. The whole schedule is drawn up front:
what the server does can never change when a request is offered (open loop).
"""

from __future__ import annotations

import numpy as np

from pytest_latency.spec.model import Phase


def ramp_times(
    start_rate: float, end_rate: float, duration_s: float, events: np.ndarray
) -> np.ndarray:
    """Times at which the ramp's cumulative rate reaches each of ``events`` (sorted).

    The rate is ``a + (b - a) t / D``, so the expected count by ``t`` is
    ``L(t) = a t + (b - a) t^2 / (2 D)``; ``t = 2 E / (a + sqrt(a^2 + 2 (b - a) E / D))``
    inverts it without cancellation, for rising and falling ramps alike.
    """
    slope = (end_rate - start_rate) / duration_s
    root = np.sqrt(np.maximum(start_rate**2 + 2.0 * slope * events, 0.0))
    denominator = start_rate + root
    with np.errstate(divide="ignore", invalid="ignore"):
        times = np.where(denominator > 0, 2.0 * events / denominator, 0.0)
    return times


def _ramp(phase: Phase, rng: np.random.Generator) -> np.ndarray:
    """An inhomogeneous Poisson process, exactly: unit-rate events mapped through L^-1."""
    assert phase.rate_to is not None  # validated by Phase
    total = phase.mean_rate * phase.duration_s  # L(D): expected count over the phase
    count = int(rng.poisson(total))
    events = np.sort(rng.uniform(0.0, total, size=count))
    times = ramp_times(phase.rate, phase.rate_to, phase.duration_s, events)
    return times[times < phase.duration_s]


def arrival_times(phase: Phase, rng: np.random.Generator) -> np.ndarray:
    """Send times in seconds from the phase start, sorted, all in ``[0, duration)``.

    A trace phase's times are its trace's own (``rng`` unused).
    """
    if phase.closed_loop:
        raise ValueError(f"phase {phase.name!r} is closed loop: it has no planned send times")
    if phase.trace is not None:
        return np.array([line.offset_s for line in phase.trace.requests], dtype=np.float64)
    if phase.arrival == "ramp":
        return _ramp(phase, rng)
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
