"""Verdicts over a phase that was overloaded: a queue that ran away, a saturation stop.

A waiting-latency or attainment objective (:func:`.runaway.waits`) over such a phase
FAILs: every limit on a latency that includes the wait fails in time. The evidence is
the phase's queue trend (:mod:`.runaway`, at the runaway check's share of the run's
error budget) with the run's own estimate past the limit, or the user's own saturation
stop rule (whose kept-back requests are never a way out). An inconclusive one whose
queue grew without deciding gets no "run longer" advice: a growing queue's bounds do not
tighten with a longer run, and the advice says what would show the trend instead.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from scipy import stats

from pytest_latency.analysis.planning import burst_phases
from pytest_latency.analysis.runaway import (
    TREND_INTERVALS,
    RunawayQueue,
    phase_trends,
    saturation_stops,
    waits,
)
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective, Workload

MAX_TREND_FACTOR = 100.0  # beyond this many times the phase, no length is advised
# The design effect "grows with n" when the whole run's is this many times its first
# half's: a queue that holds still keeps it (short memory), a random walk doubles it.
GROWING_DEPENDENCE = 1.5
# A queue "grew" for the advice when its trend's t is at least this (one-sided p about
# 0.17 at 9 degrees of freedom): advice only, no verdict rests on it.
GREW_T = 1.0

#: decide one objective on these records (no overload rule): the first half's verdict
Redecide = Callable[[Objective, Sequence[RequestRecord]], ObjectiveResult]


def _over_limit(result: ObjectiveResult) -> bool:
    goal = result.objective
    if goal.metric == "attainment":
        return goal.min_value is not None and result.estimate_s < goal.min_value
    return goal.max_s is not None and result.estimate_s > goal.max_s


def _in_phase(found: dict[str, RunawayQueue], phase: str | None) -> RunawayQueue | None:
    if phase is not None:
        return found.get(phase)
    return max(found.values(), key=lambda queue: queue.trend.t, default=None)


def _stopped(stops: dict[str, str], phase: str | None) -> str | None:
    return stops.get(phase) if phase is not None else next(iter(stops.values()), None)


def trend_advice(queue: RunawayQueue, phase_s: float) -> str:
    """What would decide an objective over a phase whose queue grew without the trend
    test calling it runaway: not a longer run for the bounds, but one long enough for
    the trend (whose t grows as the root of the span if the growth holds)."""
    trend = queue.trend
    head = (
        f"the queue grew {trend.growth_rps:.2f}/s in phase {queue.phase} (trend t ="
        f" {trend.t:.1f}, runaway from t = {stats.t.isf(queue.alpha, TREND_INTERVALS - 1):.1f}):"
        " the bounds of a growing queue do not tighten with a longer run (its correlation"
        " grows with it), so none is advised for them"
    )
    factor = (stats.t.isf(queue.alpha, TREND_INTERVALS - 1) / trend.t) ** 2
    if not math.isfinite(factor) or factor > MAX_TREND_FACTOR:
        return head
    return (
        f"{head}; if it keeps growing at this rate, a phase about {math.ceil(phase_s * factor):d}s"
        " long shows it, and then the objective fails; a lower rate or more capacity is the fix"
    )


def design_effect_grows(
    result: ObjectiveResult, records: Sequence[RequestRecord], redecide: Redecide
) -> bool:
    """Whether ``result``'s design effect grew with n: the whole run's at least
    ``GROWING_DEPENDENCE`` times the one its first half (by send time) gives."""
    sent = sorted(r.sent_s for r in records if r.sent_s is not None)
    if result.dependence is None or len(sent) < 4:
        return False
    middle = sent[len(sent) // 2]
    half = redecide(result.objective, [r for r in records if r.intended_s < middle])
    if half.dependence is None:
        return False
    return result.dependence.design_effect >= GROWING_DEPENDENCE * half.dependence.design_effect


def overload_verdicts(
    results: list[ObjectiveResult],
    records: Sequence[RequestRecord],
    workload: Workload,
    confidence: float,
    redecide: Redecide,
) -> tuple[list[ObjectiveResult], set[int]]:
    """``results`` with those over an overloaded phase FAILed, and the positions of the
    inconclusive ones already advised by their queue's trend (no other advice: their
    queue grew and their design effect grew with n, so a longer run would not decide
    them through the bounds)."""
    stops = saturation_stops(records)
    candidates = [
        waits(r.objective) and r.verdict is Verdict.INCONCLUSIVE and _over_limit(r) for r in results
    ]
    trends: dict[str, RunawayQueue] = {}
    if any(candidates):
        trends = phase_trends(records, workload, burst_phases(workload), 1.0 - confidence)
    grown = {name: queue for name, queue in trends.items() if queue.trend.t >= GREW_T}
    ran_away = {name: queue for name, queue in grown.items() if queue.ran_away}
    decided, advised = [], set()
    for index, (result, candidate) in enumerate(zip(results, candidates, strict=True)):
        phase = result.objective.phase
        stop = _stopped(stops, phase) if waits(result.objective) else None
        if stop is not None and result.verdict in (Verdict.INCONCLUSIVE, Verdict.PASS):
            result = dataclasses.replace(
                result, verdict=Verdict.FAIL,
                reason=f"{stop}; the requests it kept back would have waited longer still,"
                f" so a stop for saturation is overload, not a way out ({result.reason})",
            )  # fmt: skip
        elif candidate and (queue := _in_phase(ran_away, phase)) is not None:
            result = dataclasses.replace(
                result, verdict=Verdict.FAIL,
                reason=f"{queue.describe()}; this run's estimate is past the limit, and the"
                f" bounds alone cannot decide a run that is one long transient"
                f" ({result.reason})",
            )  # fmt: skip
        elif (
            candidate
            and (queue := _in_phase(grown, phase)) is not None
            and design_effect_grows(result, records, redecide)
        ):
            phase_s = next(p.duration_s for p in workload.phases if p.name == queue.phase)
            advice = trend_advice(queue, phase_s)
            result = dataclasses.replace(result, reason=f"{result.reason}; {advice}")
            advised.add(index)
        decided.append(result)
    return decided, advised
