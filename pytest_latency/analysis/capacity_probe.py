"""One capacity probe decided: its objectives, its queue, and the evidence for each.

A probe's objectives are decided on its probe phase (percentiles as the same hypothesis
on a proportion, :func:`as_proportion`), together with every earlier probe at the same
rate: a repeat at one rate is the next look of one sequential experiment, so its
verdict rests on all the requests offered at that rate (docs/capacity.md). A runaway
queue fails the probe on its own evidence (:func:`queue_evidence`), a trend test
in the probe's share of alpha.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from pytest_latency.analysis.capacity_result import ProbeEvidence
from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.runaway import queue_trend
from pytest_latency.analysis.verdict import ObjectiveResult, objective_confidence
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective

SATURATION_LABEL = "queue kept up"  # a check that fails when the queue ran away
# Between looks a runaway queue fails the probe at once. The queue is checked with the
# trend test of :func:`.runaway.queue_trend` at spans after the warm-up that double from
# FIRST_CHECK_SHARE of the probe, and at each look; each check takes an even share of
# the queue check's alpha, one more test beside the objectives at every look
# (:func:`queue_alpha`).
# Increments of about a second give the test degrees of freedom (the checks' shares of
# alpha are small); their Newey-West error absorbs a long request blocking a slot for
# seconds (docs/capacity.md has the measured false calls and the search's widths).
RUNAWAY_CHECK_S = 1.0  # how often a live probe wakes to see whether a check is due
FIRST_CHECK_SHARE = 0.125  # of the probe: 7.5 s of a 60 s probe
CHECK_INTERVAL_S = 1.0  # increments of about a second: degrees of freedom grow with it


def check_spans(probe_s: float, looks: Sequence[float]) -> list[float]:
    """Seconds after the warm-up at which the queue is checked: doubling from
    ``FIRST_CHECK_SHARE`` of the probe, and at each look."""
    spans = {look * probe_s for look in looks}
    span = FIRST_CHECK_SHARE * probe_s
    while span < probe_s:
        spans.add(span)
        span *= 2
    return sorted(spans)


def queue_alpha(
    criteria: int, confidences: Sequence[float], probe_s: float, looks: Sequence[float]
) -> float:
    """The level of each queue check of a probe whose looks take ``confidences``: at
    every look the check is one of ``criteria + 1`` tests, and its share over the probe
    is split evenly among its checks (:func:`check_spans`)."""
    share = sum(1.0 - confidence for confidence in confidences) / (criteria + 1)
    return share / len(check_spans(probe_s, looks))


def saturated(
    records: Sequence[RequestRecord], since_s: float, until_s: float, alpha: float
) -> bool:
    """The queue grew during the probe from ``since_s`` (the warm-up's end: the climb to
    the steady state is not growth) to ``until_s``: the trend test of
    :func:`.runaway.queue_trend` at ``alpha`` (docs/capacity.md)."""
    trend = queue_trend(
        records, [(since_s, until_s)], alpha, settling=0.0, interval_s=CHECK_INTERVAL_S
    )
    return trend is not None and trend.ran_away(alpha)


def queue_evidence(
    records: Sequence[RequestRecord], since_s: float, until_s: float, alpha: float
) -> ProbeEvidence | None:
    """The queue check as evidence: the growth of in flight (req/s) from ``since_s`` to
    ``until_s`` (no bounds), and as its limit the growth the trend test at ``alpha``
    calls runaway at this run's spread (``fail`` when it did); None with too little."""
    trend = queue_trend(
        records, [(since_s, until_s)], alpha, settling=0.0, interval_s=CHECK_INTERVAL_S
    )
    if trend is None:
        return None
    return ProbeEvidence(
        objective=SATURATION_LABEL,
        decided_as=f"in flight grows under {trend.critical_rps:.3g}/s",
        verdict="fail" if trend.ran_away(alpha) else "pass",
        estimate=trend.growth_rps,
        lower=-math.inf,
        upper=math.inf,
        n=sum(r.sent_s is not None and since_s <= r.sent_s <= until_s for r in records),
        n_effective=None,
        unit="rps",
        limit=trend.critical_rps,
        at_least=False,
    )


def as_proportion(goal: Objective) -> Objective:
    """``metric pP <= L`` as the same hypothesis on a proportion: the share of requests
    with ``metric <= L`` is at least P% (an attainment objective); other objectives as
    they are.

    The two say the same and are bounded the same way (attainment's bound rests on the
    dependence of the latencies, :mod:`.attainment`); the proportion is what a probe's
    evidence shows: the share of good requests (docs/capacity.md).
    """
    if (
        goal.metric in ("ttft", "tpot", "itl", "e2e")
        and goal.p is not None
        and goal.max_s is not None
        and goal.input_tokens is None
        and goal.output_tokens is None
    ):
        return Objective(
            metric="attainment", thresholds=((goal.metric, goal.max_s),), min_value=goal.p / 100
        )
    return goal


def pooled_records(parts: Sequence[Sequence[RequestRecord]]) -> list[RequestRecord]:
    """Probes at one rate as one series: each its own phase (``probe@k``, an independent
    stratum: every probe starts from a drained server) and moved in time past the one
    before, so that send order never interleaves two probes."""
    if len(parts) == 1:
        return list(parts[0])
    pooled: list[RequestRecord] = []
    offset = 0.0
    for number, part in enumerate(parts):
        if not part:
            continue
        start = min(r.intended_s for r in part)
        shift = offset - start
        for record in part:
            pooled.append(
                dataclasses.replace(
                    record,
                    phase=f"probe@{number}",
                    intended_s=record.intended_s + shift,
                    sent_s=_moved(record.sent_s, shift),
                    first_token_s=_moved(record.first_token_s, shift),
                    end_s=_moved(record.end_s, shift),
                )
            )
        offset = max((r.end_s or r.intended_s) for r in pooled) + 1.0
    return pooled


def _moved(instant: float | None, shift: float) -> float | None:
    return None if instant is None else instant + shift


def _evidence(
    goal: Objective, tested: Objective, result: ObjectiveResult, pooled: int
) -> ProbeEvidence:
    proportion = tested.metric in ("attainment", "error_rate")
    at_least = tested.metric == "attainment"
    limit = tested.min_value if at_least else tested.max_s
    return ProbeEvidence(
        objective=goal.label,
        decided_as=tested.label,
        verdict=result.verdict.value,
        estimate=result.estimate_s,
        lower=result.lower_s,
        upper=result.upper_s,
        n=result.n,
        n_effective=result.effective_n,
        unit="fraction" if proportion else "seconds",
        pooled=pooled,
        limit=None if tested.relative else limit,
        at_least=at_least,
    )


def _decide_objectives(
    criteria: Sequence[Objective],
    seen: Sequence[RequestRecord],
    confidence: float,
    earlier: Sequence[Sequence[RequestRecord]],
) -> tuple[dict[str, str], list[ProbeEvidence]]:
    """Each objective's verdict and evidence on ``seen`` pooled with ``earlier``, at
    ``confidence`` shared among the objectives."""
    each = objective_confidence(len(criteria) + 1, confidence)  # + the queue check
    tests = [as_proportion(goal) for goal in criteria]
    records = pooled_records([*earlier, seen])
    results = decide_objectives(tests, records, confidence=each)
    verdicts: dict[str, str] = {}
    evidence: list[ProbeEvidence] = []
    for goal, tested, result in zip(criteria, tests, results, strict=True):
        verdicts[goal.label] = result.verdict.value
        evidence.append(_evidence(goal, tested, result, len(earlier) + 1))
    return verdicts, evidence


def decide_runaway(
    criteria: Sequence[Objective],
    seen: Sequence[RequestRecord],
    queue: ProbeEvidence | None,
    *,
    confidence: float,
    earlier: Sequence[Sequence[RequestRecord]] = (),
) -> tuple[dict[str, str], list[ProbeEvidence]]:
    """A probe its runaway queue stopped between looks: the queue check fails it, and
    each objective shows what the requests it sent before the stop hold (``seen``, once
    ended; pooled with ``earlier``), decided at ``confidence`` (the share of the look it
    did not reach, so the looks' union bound holds).

    A fail stands: a probe gets no better with time. A pass does not: it needs the whole
    probe (an overloaded server looks fine while its queue builds), so a passing
    objective is ``inconclusive``, its estimate and bounds kept (docs/capacity.md).
    """
    verdicts, evidence = held_back(*_decide_objectives(criteria, seen, confidence, earlier))
    if queue is not None:
        evidence.append(queue)
    return {**verdicts, SATURATION_LABEL: "fail"}, evidence


def held_back(
    verdicts: dict[str, str], evidence: Sequence[ProbeEvidence]
) -> tuple[dict[str, str], list[ProbeEvidence]]:
    """A probe stopped before its end (a fail at an early look, a runaway queue): its
    fails stand, its passes become ``inconclusive`` (a pass needs the whole probe), each
    with its estimate and bounds kept."""
    held = {
        label: verdict if verdict in ("fail", "invalid") else "inconclusive"
        for label, verdict in verdicts.items()
    }
    shown = [
        dataclasses.replace(item, verdict=held.get(item.objective, item.verdict))
        for item in evidence
    ]
    return held, shown


def decide_probe(
    criteria: Sequence[Objective],
    seen: Sequence[RequestRecord],
    before: Sequence[RequestRecord],
    rate: float,
    *,
    confidence: float,
    warmup_s: float,
    queue_level: float,
    earlier: Sequence[Sequence[RequestRecord]] = (),
) -> tuple[dict[str, str], list[ProbeEvidence]]:
    """Each objective's verdict on ``seen`` (this probe's phase so far) pooled with
    ``earlier`` (the probe phases of earlier probes at this rate), at ``confidence``
    shared among the objectives; and whether the queue ran away (in flight counted over
    ``before``, warm-up included, tested from ``warmup_s`` on at ``queue_level``,
    :func:`queue_alpha`). Returns the verdicts by
    label (the queue check only when it failed) and the evidence of each."""
    verdicts, evidence = _decide_objectives(criteria, seen, confidence, earlier)
    until = max((r.intended_s for r in before), default=warmup_s)
    queue = queue_evidence(before, warmup_s, until, queue_level)
    if queue is not None:
        evidence.append(queue)
        if queue.verdict == "fail":
            verdicts[SATURATION_LABEL] = "fail"
    return verdicts, evidence
