"""Recovery after a burst: how long until users stop waiting (docs/specs.md "Recovery").

Definition (pinned; the docs state the same):

* **Reference**: the phase right before the burst phase (the steady phase), its p95
  TTFT and, where the server reported it, its p95 queue wait, over all episodes.
  Failed requests count as unbounded, as everywhere.
* **After the burst**: the requests of the same episode planned at or after the end of
  the burst phase, in send order (the recovery phase and any later phases).
* **Rolling window**: ``ROLLING_WINDOW`` consecutive requests. A window is *within*
  when its median TTFT is at or under the reference TTFT p95 and its median queue wait
  (when reported) at or under the reference queue-wait p95.
* **Recovery time**: from the end of the burst phase to the planned send time of the
  first request whose window is within (the first window back at the steady level).
  0 when the first window after the burst is already within (no lasting effect). It is
  the *first* return, not the last excursion: with correlated noise a steady server's
  windows stray over its own p95 now and then, and the last such stray grows with the
  length of the phase watched, burst or no burst (a `max: 2s` gate then false-failed
  two runs in three).
* **Never recovered**: no window is within. The time is ``inf`` (JSON ``null``).

**The verdict is a bound over episodes.** One burst is one event, so its recovery time
is one observation whatever the number of requests. With ``repeat: k`` the episodes
are independent (the cool-down between them), and the objective is about the median
episode: the distribution-free order-statistic interval for the median of the k
recovery times (the sign test's, as for paired blocks) at the objective's confidence.
PASS when its upper end is within ``max``, FAIL when its lower end is over it. At 99%
the interval exists from 8 episodes; with fewer the verdict is INCONCLUSIVE, and the
measured times are printed as what they are: descriptive, outside the gate's error
guarantee. An episode that never recovered but was watched for less than ``max``
counts as "later than it was watched" on the fail side and as unbounded on the pass side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.verdict import ObjectiveResult, Verdict, samples_needed
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective, Workload

ROLLING_WINDOW = 10  # requests: a median over 10 ignores 4 unlucky ones
REFERENCE_PERCENTILE = 95.0


@dataclass(frozen=True, slots=True)
class Recovery:
    """One episode's recovery after the burst."""

    episode: int
    burst_end_s: float
    recovery_s: float  # inf: never recovered within the run
    watched_s: float  # from the burst's end to the start of the last full window


def _ttft(record: RequestRecord) -> float:
    value = record.ttft_s
    return math.inf if not record.ok or value is None else value


def _queue(record: RequestRecord) -> float:
    if not record.ok:
        return math.inf
    return math.nan if record.queue_wait_s is None else record.queue_wait_s


def _phase_order(records: Sequence[RequestRecord], workload: Workload | None) -> list[str]:
    if workload is not None:
        return [phase.name for phase in workload.phases]
    first: dict[str, float] = {}
    for record in records:
        if record.episode == 0:
            first[record.phase] = min(first.get(record.phase, math.inf), record.intended_s)
    return sorted(first, key=first.__getitem__)


def _burst_end(
    records: Sequence[RequestRecord], after: str, episode: int, workload: Workload | None
) -> float | None:
    if workload is not None:
        return workload.phase_windows(after)[episode][1]
    burst = [r.intended_s for r in records if r.episode == episode and r.phase == after]
    later = [r.intended_s for r in records if r.episode == episode and r.intended_s > max(burst)]
    if not burst or not later:
        return None
    return (max(burst) + min(later)) / 2.0  # without the workload: between the two sends


def reference_levels(steady: Sequence[RequestRecord]) -> tuple[float, float | None]:
    """(TTFT p95, queue-wait p95 or None when the server reported none) of the steady phase."""
    ttft = np.percentile([_ttft(r) for r in steady], REFERENCE_PERCENTILE, method="higher")
    queues = np.array([_queue(r) for r in steady])
    queues = queues[~np.isnan(queues)]
    if not np.isfinite(queues).any():
        return float(ttft), None
    return float(ttft), float(np.percentile(queues, REFERENCE_PERCENTILE, method="higher"))


def windows_within(
    ttft: np.ndarray,
    queue: np.ndarray,
    levels: tuple[float, float | None],
    window: int = ROLLING_WINDOW,
) -> np.ndarray:
    """For each window of ``window`` consecutive requests: is it back at the steady level?"""
    from numpy.lib.stride_tricks import sliding_window_view

    ttft_limit, queue_limit = levels
    within: np.ndarray = np.median(sliding_window_view(ttft, window), axis=1) <= ttft_limit
    if queue_limit is not None:
        waits = sliding_window_view(queue, window)
        reported = ~np.isnan(waits)
        with np.errstate(all="ignore"):
            medians = np.nanmedian(np.where(reported, waits, np.nan), axis=1)
        within &= ~reported.any(axis=1) | (medians <= queue_limit)
    return within


def episode_recovery(
    after_burst: Sequence[RequestRecord],
    burst_end_s: float,
    levels: tuple[float, float | None],
    episode: int = 0,
    window: int = ROLLING_WINDOW,
) -> Recovery | None:
    """Recovery of one episode from its requests after the burst; None if under a window."""
    ordered = sorted(after_burst, key=lambda record: (record.intended_s, record.id))
    if len(ordered) < window:
        return None
    ttft = np.array([_ttft(r) for r in ordered])
    queue = np.array([_queue(r) for r in ordered])
    within = windows_within(ttft, queue, levels, window)
    watched = ordered[within.size - 1].intended_s - burst_end_s
    back = np.flatnonzero(within)
    if back.size == 0:
        return Recovery(episode, burst_end_s, math.inf, watched)
    first = int(back[0])
    recovery = 0.0 if first == 0 else max(0.0, ordered[first].intended_s - burst_end_s)
    return Recovery(episode, burst_end_s, recovery, watched)


def recoveries(
    records: Sequence[RequestRecord], after: str, workload: Workload | None = None
) -> tuple[list[Recovery], str | None]:
    """Each episode's recovery after phase ``after``, or ([], why not) when undefined."""
    order = _phase_order(records, workload)
    if after not in order:
        return [], f"no phase {after!r} in the run"
    position = order.index(after)
    if position == 0:
        return [], f"no steady phase before {after!r} to compare with"
    if position == len(order) - 1:
        return [], f"no phase after {after!r}: end the phases with a recovery phase"
    steady = [r for r in records if r.phase == order[position - 1]]
    if not steady:
        return [], f"no requests in the steady phase {order[position - 1]!r}"
    levels = reference_levels(steady)
    found = []
    for episode in sorted({r.episode for r in records}):
        end = _burst_end(records, after, episode, workload)
        if end is None:
            continue
        tail = [r for r in records if r.episode == episode and r.intended_s >= end]
        if (recovery := episode_recovery(tail, end, levels, episode)) is not None:
            found.append(recovery)
    if not found:
        return [], f"fewer than {ROLLING_WINDOW} requests after {after!r}"
    return found, None


@dataclass(frozen=True, slots=True)
class MedianBounds:
    """Order-statistic bounds on the median episode's recovery time (None: too few)."""

    lower: float | None
    upper: float | None
    estimate: float


def median_recovery_bounds(found: Sequence[Recovery], confidence: float) -> MedianBounds:
    """The sign test's interval for the median recovery time over independent episodes.

    An episode never back within the part of it that was watched is censored: on the
    lower side it counts as the time watched, on the upper side as unbounded.
    """
    from pytest_latency.analysis.percentiles import bound_ranks

    times = np.array([one.recovery_s for one in found])
    low = np.sort(np.where(np.isinf(times), [one.watched_s for one in found], times))
    high = np.sort(times)
    lower_rank, upper_rank = bound_ranks(times.size, 0.5, confidence)
    return MedianBounds(
        None if lower_rank is None else float(low[lower_rank - 1]),
        None if upper_rank is None else float(high[upper_rank - 1]),
        float(np.percentile(high, 50.0, method="lower")),
    )


def decide_recovery(
    objective: Objective,
    records: Sequence[RequestRecord],
    confidence: float,
    workload: Workload | None = None,
) -> ObjectiveResult:
    """PASS when the median episode is back within ``max`` with confidence; FAIL when later."""
    assert objective.after is not None and objective.max_s is not None  # spec_gates
    found, problem = recoveries(records, objective.after, workload)
    if problem is not None:
        return ObjectiveResult(
            objective, Verdict.INCONCLUSIVE, math.nan, 0.0, math.inf, len(records), confidence,
            f"recovery undefined: {problem}", n_effective=0.0,
        )  # fmt: skip
    bounds = median_recovery_bounds(found, confidence)
    limit = objective.max_s
    shown = ", ".join(_seconds(one.recovery_s) for one in found)
    measured = f"recovery per episode: {shown} (window {ROLLING_WINDOW} requests)"
    lower = 0.0 if bounds.lower is None else bounds.lower
    upper = math.inf if bounds.upper is None else bounds.upper
    if bounds.lower is None or bounds.upper is None:
        needed = samples_needed(0.5, confidence)
        verdict, why = (
            Verdict.INCONCLUSIVE,
            (
                f"one burst is one event: a bound on the median episode needs {needed}+ episodes"
                f" at {confidence:.3g} (repeat: {needed}); the times are descriptive, outside"
                " the gate's error guarantee"
            ),
        )
    elif upper <= limit:
        verdict, why = Verdict.PASS, "the median episode's upper bound is within the limit"
    elif lower > limit:
        verdict, why = Verdict.FAIL, "the median episode's lower bound is over the limit"
    else:
        verdict, why = Verdict.INCONCLUSIVE, "the median episode's bounds straddle the limit"
        if all(math.isinf(one.recovery_s) and one.watched_s < limit for one in found):
            why += "; no episode was watched for the limit: lengthen the recovery phase"
    return ObjectiveResult(
        objective, verdict, bounds.estimate, lower, upper, len(found), confidence,
        f"{measured}; {why}", n_effective=float(len(found)),
    )  # fmt: skip


def _seconds(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.2f}s"
