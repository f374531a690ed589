"""A queue that ran away: the server did not keep up with a phase's offered load.

When the offered rate is over what the server serves, requests in flight grow through
the phase and every latency that includes the wait (TTFT, time to first output, end to
end, queue wait) grows without bound: at that load every such limit fails in time. Such
a phase is one long transient, and the send-order bounds of :mod:`.dependence` assume
load that holds still, so they hold almost no evidence for it. The growth of in flight
is the direct evidence, and it is tested here as a trend with a stated error rate.

The test (:func:`queue_trend`): in each window of the phase, after a settling quarter,
in flight is read at ``TREND_INTERVALS + 1`` evenly spaced instants; the ``k``
increments between them are the data. A queue that runs away is a random walk with
positive drift, whose increments are independent: their mean over their standard error
is Student's t with ``k - 1`` degrees of freedom. A queue that holds still reverts to
its mean, so its increments are negatively correlated and that standard error
overstates the mean's: the test is conservative there. One-sided at ``alpha`` (the
share of the run's error budget the runaway check takes, :func:`counted_tests`), it
calls at most about ``alpha`` of steady phases runaway, including near capacity with
variable service times (docs/statistics.md "A queue that ran away").

Its power is bounded by the queue's own noise: a random walk's drift is known to about
``sqrt(variance rate / span)``. A server 1.5x over its capacity is found in nearly every
60 s phase; one 1.1x over with exponential service times and 2 req/s needs minutes,
and that case rests on the bounds (docs/statistics.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pytest_latency.records import STOPPED_EARLY, RequestRecord
from pytest_latency.spec.model import Objective, Workload

TREND_INTERVALS = 10  # increments per window: enough degrees of freedom, each still long
SETTLING_SHARE = 0.25  # of each phase window, left out: the climb to steady state
# Metrics whose values include the wait in the queue: they grow without bound with it.
WAITING_METRICS = frozenset({"ttft", "ttfo", "e2e", "queue_wait"})
RUNAWAY_REASON = "the queue ran away"  # how a verdict's reason starts when this decided it


def in_flight_at(records: Sequence[RequestRecord], instants: np.ndarray) -> np.ndarray:
    """Requests sent at or before each instant and not yet ended (never-ended ones stay
    in flight; never-sent ones were never in flight)."""
    sent = np.sort([r.sent_s for r in records if r.sent_s is not None])
    ends = np.sort(
        [math.inf if r.end_s is None else r.end_s for r in records if r.sent_s is not None]
    )
    return np.searchsorted(sent, instants, side="right") - np.searchsorted(
        ends, instants, side="right"
    )


@dataclass(frozen=True, slots=True)
class QueueTrend:
    """The growth of in flight over a phase's windows and how sure it is."""

    growth_rps: float  # mean in flight gained per second
    critical_rps: float  # the growth that would have been called runaway at this spread
    t: float
    p_value: float  # one-sided: the chance of this growth or more from a queue that holds
    intervals: int

    def ran_away(self, alpha: float) -> bool:
        return self.p_value <= alpha


def queue_trend(
    records: Sequence[RequestRecord],
    windows: Sequence[tuple[float, float]],
    alpha: float,
    settling: float = SETTLING_SHARE,
    interval_s: float | None = None,
) -> QueueTrend | None:
    """The trend of in flight over ``windows`` (run seconds), each read from its settling
    share on in ``TREND_INTERVALS`` increments (with ``interval_s``, as many of about
    that length as fit, if more); ``alpha`` sets :attr:`QueueTrend.critical_rps`. None
    when a window is empty of time."""
    rates: list[np.ndarray] = []
    for start, end in windows:
        since = start + settling * (end - start)
        if end <= since:
            return None
        count = TREND_INTERVALS
        if interval_s is not None:
            count = max(count, int((end - since) / interval_s))
        instants = np.linspace(since, end, count + 1)
        rates.append(np.diff(in_flight_at(records, instants)) / (instants[1] - instants[0]))
    gained = np.concatenate(rates) if rates else np.empty(0)
    if gained.size < 3:
        return None
    mean, spread = float(gained.mean()), _standard_error(gained)
    critical = float(stats.t.isf(alpha, gained.size - 1)) * spread
    if spread == 0.0:
        t = math.inf if mean > 0 else (-math.inf if mean < 0 else 0.0)
    else:
        t = mean / spread
    p_value = float(stats.t.sf(t, gained.size - 1))
    return QueueTrend(mean, critical, t, p_value, int(gained.size))


def _standard_error(gained: np.ndarray) -> float:
    """The mean increment's standard error, dependence-aware: Newey-West (Bartlett
    weights over ``n^(1/3)`` lags) where the increments are positively correlated (a
    long request blocking a slot raises several in a row), never under the plain one
    (a queue that holds still has negatively correlated increments: conservative)."""
    n = gained.size
    centred = gained - gained.mean()
    variance = float(centred @ centred) / (n - 1)
    long_run = float(centred @ centred) / n
    for lag in range(1, math.ceil(n ** (1 / 3)) + 1):
        weight = 1.0 - lag / (math.ceil(n ** (1 / 3)) + 1)
        long_run += 2.0 * weight * float(centred[lag:] @ centred[:-lag]) / n
    return math.sqrt(max(variance, long_run) / n)


def waits(objective: Objective) -> bool:
    """An absolute objective on a latency that includes the wait in the queue."""
    if objective.relative:
        return False
    if objective.metric == "attainment":
        return any(metric in WAITING_METRICS for metric, _ in objective.thresholds)
    return objective.metric in WAITING_METRICS


def counted_tests(objectives: Sequence[Objective]) -> int:
    """How many tests share the run's error budget: one per objective, and one for the
    runaway check when an objective waits in the queue (its false calls are counted
    there, so a runaway FAIL keeps the run's confidence)."""
    return len(objectives) + any(waits(objective) for objective in objectives)


@dataclass(frozen=True, slots=True)
class RunawayQueue:
    """A phase's queue trend, tested at ``alpha``: runaway when its p-value is at most it."""

    phase: str
    trend: QueueTrend
    rate: float  # the phase's offered rate
    alpha: float  # the level it was tested at

    @property
    def growth_rps(self) -> float:
        return self.trend.growth_rps

    @property
    def ran_away(self) -> bool:
        return self.trend.ran_away(self.alpha)

    def describe(self) -> str:
        trend = self.trend
        return (
            f"{RUNAWAY_REASON} in phase {self.phase}: requests in flight grew"
            f" {trend.growth_rps:.2f}/s at {self.rate:g} req/s offered (trend t ="
            f" {trend.t:.1f} over {trend.intervals} intervals, p = {trend.p_value:.2g} <="
            f" {self.alpha:.2g}), so the server fell further behind and every latency"
            " limit that includes the wait fails in time"
        )


def tested_phases(workload: Workload, bursts: set[str]) -> list[str]:
    """The phases the runaway check tests: open loop, not bursts (a burst is a transient
    by design, decided over episodes)."""
    return [
        phase.name
        for phase in workload.phases
        if phase.name not in bursts and not phase.closed_loop
    ]


def phase_trends(
    records: Sequence[RequestRecord], workload: Workload, bursts: set[str], alpha: float
) -> dict[str, RunawayQueue]:
    """Each tested phase's queue trend, at ``alpha`` for them all (split evenly)."""
    sent = [record for record in records if record.sent_s is not None]
    names = tested_phases(workload, bursts)
    each = alpha / max(len(names), 1)
    found = {}
    for phase in workload.phases:
        if phase.name not in names:
            continue
        trend = queue_trend(sent, workload.phase_windows(phase.name), each)
        if trend is not None:
            found[phase.name] = RunawayQueue(phase.name, trend, phase.mean_rate, each)
    return found


def runaway_phases(
    records: Sequence[RequestRecord], workload: Workload, bursts: set[str], alpha: float
) -> dict[str, RunawayQueue]:
    """The tested phases whose queue ran away, at ``alpha`` for them all."""
    trends = phase_trends(records, workload, bursts, alpha)
    return {name: queue for name, queue in trends.items() if queue.ran_away}


SATURATION_STOP = "over-saturated"  # how driver/stops.py words a saturation stop


def saturation_stops(records: Sequence[RequestRecord]) -> dict[str, str]:
    """Each phase a saturation stop rule stopped, with why, as a verdict's reason: the
    rule saw in flight grow at the share of the rate the user called overload."""
    found: dict[str, str] = {}
    for record in records:
        error = record.error or ""
        if record.never_sent and error.startswith(STOPPED_EARLY) and SATURATION_STOP in error:
            found.setdefault(
                record.phase,
                f"{RUNAWAY_REASON} in phase {record.phase}: its saturation stop rule"
                f" stopped it ({error.removeprefix(STOPPED_EARLY)})",
            )
    return found
