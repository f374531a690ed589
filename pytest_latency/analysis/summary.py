"""Per-phase summaries: offered against completed load, generator health, percentiles.

Boundary of every latency here: client side, from the planned send time (so generator
lag and server stalls are both included), to the first content token / last byte.
Failed requests count as unbounded and ITL is each request's median gap, exactly as
the verdicts count them, so a printed p95 is the verdict's estimate. Requests never sent
(kept back by a stop rule) are ``unsent``: planned, neither failed nor a sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_latency.analysis.columns import Columns
from pytest_latency.analysis.percentiles import percentile, percentiles
from pytest_latency.analysis.samples import LATENCY_METRICS
from pytest_latency.analysis.throughput import Throughput
from pytest_latency.spec.model import Phase

SUMMARY_METRICS: tuple[str, ...] = ("ttft", "itl", "e2e")
SUMMARY_PERCENTILES: tuple[float, ...] = (50.0, 95.0, 99.0)
BOUNDARY = "client, loopback-or-network as configured, from the planned send time"
# Said under every closed-loop phase (docs/workloads.md "Fixed concurrency").
CLOSED_LOOP_NOTE = (
    "closed loop: each user sends when its previous request ended, so latency counts from"
    " that instant and a slow server slows the senders instead of queueing requests: queueing"
    " is hidden from the client (coordinated omission); use an open-loop phase for latency"
    " objectives, this one for saturation throughput"
)


def shown_metrics(objective_metrics: Iterable[str]) -> tuple[str, ...]:
    """The summary's metrics, then each latency objective's own metric beyond them (a
    ``tpot`` objective gets a ``tpot`` row), in the order first named."""
    beyond = (
        metric
        for metric in dict.fromkeys(objective_metrics)
        if metric in LATENCY_METRICS and metric not in SUMMARY_METRICS
    )
    return (*SUMMARY_METRICS, *beyond)


@dataclass(frozen=True, slots=True)
class PhaseSummary:
    """What one phase offered, what came back, and the client-side distributions.

    ``offered`` counts every planned request: ``completed + failed + unsent``, where
    ``unsent`` were never sent (kept back by a stop rule, a decided probe or the run's
    end) and so are neither failed nor latency samples.
    """

    name: str
    offered: int
    completed: int
    failed: int
    target_rate: float
    offered_rate: float
    schedule_lag_p99_s: float
    duration_s: float
    statuses: dict[str, int] = field(default_factory=dict)
    unsent: int = 0
    percentiles: dict[str, dict[float, float]] = field(default_factory=dict)
    # Completed work per second of the phase's window (analysis/throughput.py).
    throughput: Throughput | None = None

    @property
    def planned_rate(self) -> float:
        """The rate this run's plan drew for the phase: its requests over its duration.

        Poisson arrivals scatter around ``target_rate``; ``offered_rate`` (sent within
        the phase) is compared with this, not with the target, to see a generator fall
        behind.
        """
        return self.offered / self.duration_s if self.duration_s > 0 else 0.0


def summarise_phase(
    phase: Phase,
    windows: Sequence[tuple[float, float]],
    columns: Columns,
    throughput: Throughput | None = None,
    ps: Sequence[float] = SUMMARY_PERCENTILES,
    more_samples: Mapping[str, np.ndarray] | None = None,
) -> PhaseSummary:
    """Summarise one phase from the run's columns; ``windows`` are its (start, end) spans.

    A phase repeated over several episodes has one window per episode. ``ps``: the
    percentiles of each metric (``--latency-percentiles``, and the objectives' own).
    ``more_samples``: the phase's values of metrics beyond :data:`SUMMARY_METRICS` (an
    objective's own metric, counted as verdicts count it), shown after them.
    """
    mask = columns.in_phase(phase.name)
    offered = int(mask.sum())
    completed = int((mask & columns.ok).sum())
    unsent = int((mask & columns.never_sent).sum())
    sent = columns.sent[mask]
    sent = sent[~np.isnan(sent)]
    lags = sent - columns.intended[mask][~np.isnan(columns.sent[mask])]
    # Offered rate counts what actually went out inside the phase windows: a generator
    # that fell behind pushes sends past a window and shows a shortfall here.
    sent_in_window = sum(int(((sent >= start) & (sent < end)).sum()) for start, end in windows)
    samples = {
        "ttft": columns.interval(columns.first, mask),
        "e2e": columns.interval(columns.end, mask),
        "itl": columns.itl_per_request(mask),
        **(more_samples or {}),
    }
    return PhaseSummary(
        name=phase.name,
        offered=offered,
        completed=completed,
        failed=offered - completed - unsent,
        target_rate=phase.mean_rate,  # a ramp's mid-point rate
        offered_rate=sent_in_window / (phase.duration_s * len(windows)),
        schedule_lag_p99_s=percentile(lags, 99.0),
        duration_s=phase.duration_s * len(windows),
        statuses=columns.status_counts(mask),
        unsent=unsent,
        percentiles={
            metric: dict(zip(ps, percentiles(samples[metric], ps), strict=True))
            for metric in dict.fromkeys((*SUMMARY_METRICS, *samples))
        },
        throughput=throughput,
    )
