"""Per-phase summaries: offered against completed load, generator health, percentiles.

Boundary of every latency here: client side, from the planned send time (so generator
lag and server stalls are both included), to the first content token / last byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pytest_latency.analysis.columns import Columns
from pytest_latency.analysis.percentiles import percentile, percentiles
from pytest_latency.spec import Phase

SUMMARY_METRICS: tuple[str, ...] = ("ttft", "itl", "e2e")
SUMMARY_PERCENTILES: tuple[float, ...] = (50.0, 95.0, 99.0)
BOUNDARY = "client, loopback-or-network as configured, from the planned send time"


@dataclass(frozen=True, slots=True)
class PhaseSummary:
    """What one phase offered, what came back, and the client-side distributions."""

    name: str
    offered: int
    completed: int
    failed: int
    target_rate: float
    offered_rate: float
    schedule_lag_p99_s: float
    duration_s: float
    statuses: dict[str, int] = field(default_factory=dict)
    percentiles: dict[str, dict[float, float]] = field(default_factory=dict)


def summarise_phase(phase: Phase, start_s: float, columns: Columns) -> PhaseSummary:
    """Summarise one phase (run-relative start ``start_s``) from the run's columns."""
    mask = columns.in_phase(phase.name)
    offered = int(mask.sum())
    completed = int((mask & columns.ok).sum())
    sent = columns.sent[mask]
    sent = sent[~np.isnan(sent)]
    lags = sent - columns.intended[mask][~np.isnan(columns.sent[mask])]
    # Offered rate counts what actually went out inside the phase window: a generator
    # that fell behind pushes sends past the window and shows a shortfall here.
    end_s = start_s + phase.duration_s
    sent_in_window = int(((sent >= start_s) & (sent < end_s)).sum())
    samples = {
        "ttft": columns.interval(columns.first, mask),
        "e2e": columns.interval(columns.end, mask),
        "itl": columns.itl_pool(mask),
    }
    return PhaseSummary(
        name=phase.name,
        offered=offered,
        completed=completed,
        failed=offered - completed,
        target_rate=phase.rate,
        offered_rate=sent_in_window / phase.duration_s,
        schedule_lag_p99_s=percentile(lags, 99.0),
        duration_s=phase.duration_s,
        statuses=columns.status_counts(mask),
        percentiles={
            metric: dict(
                zip(
                    SUMMARY_PERCENTILES,
                    percentiles(samples[metric], SUMMARY_PERCENTILES),
                    strict=True,
                )
            )
            for metric in SUMMARY_METRICS
        },
    )
