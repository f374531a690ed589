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
  first request from which every later window is within, for the rest of the episode.
  0 when the first window after the burst is already within (no lasting effect).
* **Never recovered**: the last window is not within. The time is ``inf`` (JSON
  ``null``); a ``max`` objective then FAILs when the run watched at least ``max``
  after the burst (it was not back by the limit), and is INCONCLUSIVE when the run
  ended sooner (lengthen the recovery phase).

With ``repeat: k`` each episode has its own recovery; the objective is decided on the
slowest episode (estimate = the worst, bounds = the fastest..slowest episode). The
time is measured, not bounded: it is one event per episode, so repeat the episode to
see its spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
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
    ttft_limit, queue_limit = levels
    ttft = np.array([_ttft(r) for r in ordered])
    queue = np.array([_queue(r) for r in ordered])
    count = len(ordered) - window + 1
    within = np.empty(count, dtype=bool)
    for start in range(count):
        ok = float(np.median(ttft[start : start + window])) <= ttft_limit
        if ok and queue_limit is not None:
            waits = queue[start : start + window]
            waits = waits[~np.isnan(waits)]
            ok = waits.size == 0 or float(np.median(waits)) <= queue_limit
        within[start] = ok
    watched = ordered[count - 1].intended_s - burst_end_s
    if not within[-1]:
        return Recovery(episode, burst_end_s, math.inf, watched)
    outside = np.flatnonzero(~within)
    if outside.size == 0:
        return Recovery(episode, burst_end_s, 0.0, watched)
    first = int(outside[-1]) + 1
    return Recovery(
        episode, burst_end_s, max(0.0, ordered[first].intended_s - burst_end_s), watched
    )


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


def _known_late(recovery: Recovery, limit: float) -> bool:
    """Recovered after ``limit``, or still not back when the run had watched ``limit``."""
    return math.isfinite(recovery.recovery_s) or recovery.watched_s >= limit


def decide_recovery(
    objective: Objective,
    records: Sequence[RequestRecord],
    confidence: float,
    workload: Workload | None = None,
) -> ObjectiveResult:
    """PASS when every episode recovered within ``max``; FAIL when one took longer."""
    assert objective.after is not None and objective.max_s is not None  # spec_gates
    found, problem = recoveries(records, objective.after, workload)
    if problem is not None:
        return ObjectiveResult(
            objective, Verdict.INCONCLUSIVE, math.nan, 0.0, math.inf, len(records), confidence,
            f"recovery undefined: {problem}", n_effective=0.0,
        )  # fmt: skip
    times = [found_one.recovery_s for found_one in found]
    worst = max(found, key=lambda one: one.recovery_s)
    limit = objective.max_s
    shown = ", ".join("never" if math.isinf(t) else f"{t:.2f}s" for t in times)
    if all(t <= limit for t in times):
        verdict, why = Verdict.PASS, "every episode recovered within the limit"
    elif any(
        t > limit and (math.isfinite(t) or one.watched_s >= limit)
        for t, one in zip(times, found, strict=True)
    ):
        verdict, why = Verdict.FAIL, "an episode took longer than the limit to recover"
    else:
        verdict, why = (
            Verdict.INCONCLUSIVE,
            (
                f"not recovered when the run ended {worst.watched_s:.1f}s after the burst,"
                " sooner than the limit: lengthen the recovery phase"
            ),
        )
    reason = f"recovery per episode: {shown}; {why} (window {ROLLING_WINDOW} requests)"
    return ObjectiveResult(
        objective, verdict, worst.recovery_s, min(times), max(times), len(found), confidence,
        reason, n_effective=float(len(found)),
    )  # fmt: skip
