"""A queue that ran away: the server did not keep up with a phase's offered load.

When the offered rate is over what the server serves, requests in flight grow through
the phase and every latency that includes the wait (TTFT, end to end) grows without
bound: at that load every latency limit fails in time. Such a phase is one long
transient, and the send-order bounds of :mod:`.dependence` assume load that holds still,
so they hold almost no evidence for it (a steady phase at 2.3x its server's capacity
gave a TTFT p95 of 23 s against 1 s with bounds 0..inf, effective n 4, and passed).
The growth of in flight is the direct evidence. It is fitted here, once per phase
window, after a settling quarter; a phase counts as runaway when it grew in every
window by at least :data:`RUNAWAY_VERDICT_SHARE` of the offered rate and by more than
:data:`RUNAWAY_VERDICT_Z` square roots of the mean in flight. Bursts (a rate well above
the phase before) are transients by design and are decided over episodes, not here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Workload
from pytest_latency.spec.phase import MIN_SATURATION_GROWTH

SATURATION_SHARE = 0.1  # in flight growing at 10% of the offered rate: the queue runs away
# A verdict asks more than the capacity search's check, whose probes follow a warm-up:
# a phase starts from whatever queue the one before left, and a queue near capacity
# relaxes slowly (about a minute with 4 slots at 90%). With 10% of the rate, 2 of 100
# seeded 60 s phases of a 4-slot server at 90% of its capacity were called runaway;
# with 20% (a server over 1.25x its capacity), none of 300 at 90% or 95%.
RUNAWAY_VERDICT_SHARE = 0.2
RUNAWAY_VERDICT_Z = 6.0
SETTLING_SHARE = 0.25  # of each phase window, left out of the fit: the climb to steady state
# Metrics whose values include the wait in the queue: they grow without bound with it.
WAITING_METRICS = frozenset({"ttft", "ttfo", "e2e"})
RUNAWAY_REASON = "the queue ran away"  # how a verdict's reason starts when this decided it


def queue_growth(
    records: Sequence[RequestRecord], since_s: float | None = None
) -> tuple[float, float, float] | None:
    """(slope req/s, span s, mean in flight) of in flight at each send fitted against
    time; None with too few sends. In flight counts every record sent and not ended
    (never-ended ones stay in flight); ``since_s`` fits only sends from then on."""
    sent = sorted((r.sent_s, r.end_s) for r in records if r.sent_s is not None)
    if len(sent) < 3:
        return None
    starts = np.array([start for start, _ in sent])
    ends = np.sort(np.array([math.inf if end is None else end for _, end in sent]))
    in_flight = np.arange(1, starts.size + 1) - np.searchsorted(ends, starts, side="right")
    if since_s is not None:
        keep = starts >= since_s
        starts, in_flight = starts[keep], in_flight[keep]
        if starts.size < 3:
            return None
    span = float(starts[-1] - starts[0])
    if span <= 0:
        return None
    slope = float(np.polyfit(starts, in_flight, 1)[0])
    return slope, span, float(in_flight.mean())


def runaway_slope(
    rate: float, span_s: float, mean_in_flight: float, z: float, share: float = SATURATION_SHARE
) -> float:
    """The least growth of in flight (req/s) that counts as a runaway queue: at least
    ``share`` of the offered rate, and over the window at least ``MIN_SATURATION_GROWTH``
    requests and ``z`` square roots of the mean in flight."""
    least = max(MIN_SATURATION_GROWTH, z * math.sqrt(max(mean_in_flight, 1.0)))
    return max(share * rate, least / span_s)


@dataclass(frozen=True, slots=True)
class RunawayQueue:
    """A phase whose queue grew in every window: the slowest growth seen, and its floor."""

    phase: str
    growth_rps: float  # in flight gained per second (the least over the phase's windows)
    least_rps: float  # the growth that counts as runaway there
    rate: float  # the phase's offered rate

    def describe(self) -> str:
        return (
            f"{RUNAWAY_REASON} in phase {self.phase}: requests in flight grew"
            f" {self.growth_rps:.1f}/s at {self.rate:g} req/s offered (runaway from"
            f" {self.least_rps:.2g}/s), so the server fell further behind with every request"
            " and every latency limit that includes the wait fails in time"
        )


def runaway_phases(
    records: Sequence[RequestRecord], workload: Workload, bursts: set[str]
) -> dict[str, RunawayQueue]:
    """The phases (not ``bursts``) whose queue ran away in every one of their windows."""
    sent = [record for record in records if record.sent_s is not None]
    found = {}
    for phase in workload.phases:
        if phase.name in bursts or phase.closed_loop:
            continue
        slowest: RunawayQueue | None = None
        for start, end in workload.phase_windows(phase.name):
            until = [record for record in sent if record.sent_s < end]  # type: ignore[operator]
            growth = queue_growth(until, since_s=start + SETTLING_SHARE * (end - start))
            if growth is None:
                break
            least = runaway_slope(
                phase.mean_rate, growth[1], growth[2], RUNAWAY_VERDICT_Z, RUNAWAY_VERDICT_SHARE
            )
            if growth[0] < least:
                break
            if slowest is None or growth[0] < slowest.growth_rps:
                slowest = RunawayQueue(phase.name, growth[0], least, phase.mean_rate)
        else:
            if slowest is not None:
                found[phase.name] = slowest
    return found
