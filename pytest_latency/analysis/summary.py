"""Per-phase summaries: offered against completed load, generator health, percentiles.

Boundary of every latency here: client side, from the planned send time (so generator
lag and server stalls are both included), to the first content token / last byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_latency.analysis.percentiles import percentile
from pytest_latency.analysis.samples import metric_samples
from pytest_latency.driver.records import RequestRecord
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


def summarise_phase(phase: Phase, start_s: float, records: Sequence[RequestRecord]) -> PhaseSummary:
    """Summarise the records of one phase that started at ``start_s`` (run-relative)."""
    completed = sum(1 for record in records if record.ok)
    statuses: dict[str, int] = {}
    for record in records:
        statuses[record.status.value] = statuses.get(record.status.value, 0) + 1
    lags = np.asarray(
        [record.sent_s - record.intended_s for record in records if record.sent_s is not None],
        dtype=np.float64,
    )
    # Offered rate counts what actually went out inside the phase window: a generator
    # that fell behind pushes sends past the window and shows a shortfall here.
    end_s = start_s + phase.duration_s
    sent_in_window = sum(
        1 for record in records if record.sent_s is not None and start_s <= record.sent_s < end_s
    )
    ok_records = [record for record in records if record.ok]
    return PhaseSummary(
        name=phase.name,
        offered=len(records),
        completed=completed,
        failed=len(records) - completed,
        target_rate=phase.rate,
        offered_rate=sent_in_window / phase.duration_s,
        schedule_lag_p99_s=percentile(lags, 99.0) if lags.size else float("nan"),
        duration_s=phase.duration_s,
        statuses=statuses,
        percentiles={
            metric: {
                p: percentile(metric_samples(ok_records, metric), p) for p in SUMMARY_PERCENTILES
            }
            for metric in SUMMARY_METRICS
        },
    )
