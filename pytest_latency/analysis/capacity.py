"""Capacity search: the highest offered rate at which every objective passes (a bracket).

The search bisects the range geometrically from the start (its first probe is at
sqrt(low x high), not at the low end: doubling up from the bottom spends most probes at
rates far under the capacity), between the highest passing and the lowest failing rate
(the ends of ``rates`` standing in until probed), until the bracket is at most
``target_ratio`` wide, the budget runs out, or the probes stop deciding. An end of the
range is probed only when the bracket reaches it. Each probe is run by a caller-supplied
function (a live run with warm-up and drain, or the sim in virtual time) that looks at
its data at pre-planned fractions of the probe and may stop early once decided.

Error control: the search plans at most ``max_probes`` probes, each gets an equal share
of ``alpha = 1 - confidence``; inside a probe the share is spent over the looks by the
Lan-DeMets O'Brien-Fleming spending function, look k deciding at
``1 - (f(t_k) - f(t_{k-1}))``. The shares add up to at most alpha (a union bound), so the
chance that any verdict of the whole search is false stays under alpha whatever the
dependence between looks: a probe stops only on a verdict its look's share allows.

Assumption (stated in the result): **monotonicity**, every objective that passes at a
rate also passes at every lower rate. A probe that contradicts it (a pass above a fail)
is listed under ``contradictions`` and the bracket is then not trusted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_latency.analysis.looks import look_confidences as look_confidences  # re-exported
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective
from pytest_latency.spec.phase import MIN_SATURATION_GROWTH

MONOTONICITY = (
    "every objective that passes at an offered rate passes at every lower rate"
    " (latency and errors do not improve with more load)"
)
DEFAULT_LOOKS: tuple[float, ...] = (0.5, 1.0)  # fractions of the probe at which to decide
# The bracket the search aims for; around an undecided rate r it probes r / 1.2 and
# r x 1.2, a bracket of 1.44x.
TARGET_RATIO = 1.2
RETRIES = 2  # probes at one undecided rate at most (each its own arrivals and alpha share)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe: the offered rate, what was offered, each objective's verdict."""

    rate: float
    offered: int
    verdicts: dict[str, str]  # objective label -> pass / fail / inconclusive / invalid
    stopped_early: bool
    cost_s: float  # time spent, warm-up and drain included
    drain: str | None = None  # how a live probe's drain ended

    @property
    def outcome(self) -> str:
        """fail if any objective failed, pass if all passed, else inconclusive."""
        values = set(self.verdicts.values())
        if "fail" in values:
            return "fail"
        return "pass" if values == {"pass"} else "inconclusive"

    def to_json(self) -> dict[str, object]:
        return {
            "rate": self.rate,
            "offered": self.offered,
            "verdicts": dict(self.verdicts),
            "stopped_early": self.stopped_early,
            "outcome": self.outcome,
            "cost_s": self.cost_s,
            "drain": self.drain,
        }


#: probe(rate, look fractions, per-look confidences) -> ProbeResult
Probe = Callable[[float, Sequence[float], Sequence[float]], ProbeResult]


@dataclass(slots=True)
class CapacityResult:
    """The bracket and every probe, in the order run."""

    passed_rps: float | None
    failed_rps: float | None
    probes: list[ProbeResult]
    budget_s: float
    spent_s: float
    stopped: str  # why the search ended
    contradictions: list[str] = field(default_factory=list)

    @property
    def band(self) -> tuple[float, float] | None:
        """Where the capacity lies: (passed_rps, failed_rps); None while either is unknown."""
        if self.passed_rps is None or self.failed_rps is None or self.contradictions:
            return None
        return self.passed_rps, self.failed_rps

    @property
    def inconclusive_rps(self) -> list[float]:
        """Rates inside the bracket at which a probe decided nothing (the band between)."""
        low = self.passed_rps or 0.0
        high = math.inf if self.failed_rps is None else self.failed_rps
        return sorted(
            {p.rate for p in self.probes if p.outcome == "inconclusive" and low < p.rate < high}
        )

    def to_json(self) -> dict[str, object]:
        return {
            "passed_rps": self.passed_rps,
            "failed_rps": self.failed_rps,
            "probes": [probe.to_json() for probe in self.probes],
            "inconclusive_rps": self.inconclusive_rps,
            "band": None if self.band is None else list(self.band),
            "width": None if self.band is None else self.band[1] / self.band[0],
            "budget_s": self.budget_s,
            "spent_s": self.spent_s,
            "stopped": self.stopped,
            "assumption": MONOTONICITY,
            "contradictions": list(self.contradictions),
        }


SATURATION_SHARE = 0.1  # in flight growing at 10% of the offered rate: the queue runs away
SATURATION_LABEL = "not over-saturated"
SATURATION_Z = 6.0  # see saturated()


def saturated(
    records: Sequence[RequestRecord],
    rate: float,
    since_s: float | None = None,
    z: float = SATURATION_Z,
) -> bool:
    """The queue grew without bound during the probe (so every latency limit fails in time).

    In flight at each send (sent, not yet ended; never-ended counts as in flight) is
    fitted against time by least squares: saturated when it grows at least
    ``SATURATION_SHARE`` of the offered rate, and over the window by at least
    ``MIN_SATURATION_GROWTH`` requests and ``z`` times the square root of the mean in
    flight (a steady queue's wander): at z = 6 a steady queue near capacity is not called
    saturated (0 of 100 seeded sim probes at 90% of the capacity, tests).
    A finite probe of a runaway queue can hold too little independent evidence for a
    percentile bound (one long transient); this is the direct evidence that it ran away.
    ``since_s``: fit only sends from then on (in flight still counts every record), so
    that the climb to the steady state during a warm-up is not taken for growth.
    """
    sent = sorted((r.sent_s, r.end_s) for r in records if r.sent_s is not None)
    if len(sent) < 3:
        return False
    starts = np.array([start for start, _ in sent])
    ends = np.sort(np.array([math.inf if end is None else end for _, end in sent]))
    in_flight = np.arange(1, starts.size + 1) - np.searchsorted(ends, starts, side="right")
    if since_s is not None:
        keep = starts >= since_s
        starts, in_flight = starts[keep], in_flight[keep]
        if starts.size < 3:
            return False
    span = float(starts[-1] - starts[0])
    if span <= 0:
        return False
    slope = float(np.polyfit(starts, in_flight, 1)[0])
    least = max(MIN_SATURATION_GROWTH, z * math.sqrt(max(float(in_flight.mean()), 1.0)))
    return slope >= SATURATION_SHARE * rate and slope * span >= least


def as_proportion(goal: Objective) -> Objective:
    """``metric pP <= L`` as the same hypothesis on a proportion: the share of requests
    with ``metric <= L`` is at least P% (an attainment objective); other objectives as
    they are.

    The two say the same; their bounds differ in the correlation they pay for. A
    percentile bound pays for the latencies' own correlation, which near capacity is
    strong (a queue moves every TTFT together) even when all of them lie far under the
    limit; the proportion pays for the correlation of being under the limit, which is
    what the verdict is about (docs/capacity.md).
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


def _bisect(low: float, high: float) -> float:
    return math.sqrt(low * high) if low > 0 else high / 2.0


def search_capacity(
    probe: Probe,
    rates: tuple[float, float],
    *,
    probe_cost_s: float,
    budget_s: float,
    confidence: float = 0.99,
    target_ratio: float = TARGET_RATIO,
    looks: Sequence[float] = DEFAULT_LOOKS,
) -> CapacityResult:
    """Bracket the capacity in ``rates`` (low, high req/s) within ``budget_s``.

    ``probe_cost_s`` is one probe's longest time (warm-up, probe and drain), used to
    plan the probes and to never start one the budget cannot finish.
    """
    low, high = rates
    max_probes = max(1, int(budget_s // probe_cost_s))
    confidences = look_confidences((1.0 - confidence) / max_probes, looks)
    result = CapacityResult(None, None, [], budget_s, 0.0, "")
    rate = _next_rate(result, low, high, target_ratio)
    while rate is not None:
        if len(result.probes) >= max_probes or result.spent_s + probe_cost_s > budget_s:
            result.stopped = "budget: no time left for another probe"
            break
        outcome = probe(rate, looks, confidences)
        result.probes.append(outcome)
        result.spent_s += outcome.cost_s
        _update(result, outcome)
        rate = _next_rate(result, low, high, target_ratio)
    else:
        _confirm(result, probe, looks, confidences, probe_cost_s, max_probes)
        result.stopped = _why_done(result, low, high, target_ratio)
    return result


def _confirm(
    result: CapacityResult,
    probe: Probe,
    looks: Sequence[float],
    confidences: Sequence[float],
    probe_cost_s: float,
    max_probes: int,
) -> None:
    """Probe the highest passing rate again when the budget allows: a fail there now
    contradicts monotonicity (or the first pass was luck) and is reported."""
    passed = result.passed_rps
    if passed is None or len(result.probes) >= max_probes:
        return
    if result.spent_s + probe_cost_s > result.budget_s:
        return
    again = probe(passed, looks, confidences)
    result.probes.append(again)
    result.spent_s += again.cost_s
    if again.outcome == "fail":
        result.contradictions.append(f"failed at {passed:g}/s on a repeat after passing there")


def _update(result: CapacityResult, outcome: ProbeResult) -> None:
    if outcome.outcome == "pass":
        if result.failed_rps is not None and outcome.rate >= result.failed_rps:
            result.contradictions.append(
                f"passed at {outcome.rate:g}/s above a fail at {result.failed_rps:g}/s"
            )
        result.passed_rps = max(result.passed_rps or 0.0, outcome.rate)
    elif outcome.outcome == "fail":
        if result.passed_rps is not None and outcome.rate <= result.passed_rps:
            result.contradictions.append(
                f"failed at {outcome.rate:g}/s below a pass at {result.passed_rps:g}/s"
            )
        if result.failed_rps is None or outcome.rate < result.failed_rps:
            result.failed_rps = outcome.rate


def _next_rate(
    result: CapacityResult, low: float, high: float, target_ratio: float
) -> float | None:
    """The next rate to probe, None when the search is done.

    Between ``lower`` (the highest pass, else ``low``) and ``upper`` (the lowest fail,
    else ``high``): bisect geometrically; rates that decided nothing form the band and
    are probed around (under them first, then over them), one target ratio away. A range
    end that stood in for a probe is probed last, once the bracket reaches it.
    """
    tried = {probe.rate for probe in result.probes}
    passed, failed = result.passed_rps, result.failed_rps
    if result.contradictions:
        return None  # the bracket is not trusted
    if (failed is not None and failed <= low) or (passed is not None and passed >= high):
        return None  # failed at the bottom or passed at the top of the range
    lower = low if passed is None else passed
    upper = high if failed is None else failed
    band = sorted(
        p.rate for p in result.probes if p.outcome == "inconclusive" and lower < p.rate < upper
    )
    wide = target_ratio * (1.0 + 1e-9)  # float slack: a step of exactly the ratio is done
    candidate: float | None = None
    # Around undecided rates, step by the target ratio rather than bisect to the range's
    # ends: a probe that decides nothing is evidence the capacity is near it.
    if band and band[0] / lower > wide:
        candidate = max(_bisect(lower, band[0]), band[0] / target_ratio)
    elif band and upper / band[-1] > wide:
        candidate = min(_bisect(band[-1], upper), band[-1] * target_ratio)
    elif not band and upper / lower > wide:
        candidate = _bisect(lower, upper)
    elif passed is None and low not in tried:
        candidate = low  # the bracket reached the bottom: does the lowest rate pass?
    elif failed is None and high not in tried:
        candidate = high  # the bracket reached the top: does the highest rate pass?
    elif band:  # the band is hemmed in: a fresh sample at its ends may decide
        ends = (band[0], band[-1])
        again = [r for r in ends if sum(p.rate == r for p in result.probes) < RETRIES]
        return again[0] if again else None
    return None if candidate is None or candidate in tried else candidate


def _why_done(result: CapacityResult, low: float, high: float, target_ratio: float) -> str:
    passed, failed = result.passed_rps, result.failed_rps
    if result.contradictions:
        return "a probe contradicted monotonicity: " + "; ".join(result.contradictions)
    if failed is not None and failed <= low:
        return f"failed at the lowest rate {low:g}/s"
    if passed is not None and passed >= high:
        return f"passed at the highest rate {high:g}/s"
    if result.inconclusive_rps:
        return "probes inside the bracket decided nothing (the band between)"
    if passed is not None and failed is not None and failed / passed <= target_ratio:
        return f"bracket within {target_ratio:g}x"
    return "undecided: the probes decided too little to narrow the bracket further"


def decide_capacity(result: CapacityResult | None, least: float) -> tuple[str, float, str]:
    """(verdict, estimate, reason) of ``{metric: capacity, min: least}`` on a search result.

    PASS when every objective passed at a rate >= ``least`` (by monotonicity they pass at
    ``least`` too), FAIL when one failed at a rate <= ``least`` (so it fails at ``least``
    too), INCONCLUSIVE otherwise: ``least`` lies in the band between, or above every
    pass with no fail probed (the search did not reach it), or monotonicity was
    contradicted (then neither end of the bracket can be trusted). Both come from probe
    verdicts whose error shares add up to at most the search's alpha.
    """
    if result is None:
        return "inconclusive", math.nan, "no capacity search ran in this test"
    passed, failed = result.passed_rps, result.failed_rps
    if result.contradictions:
        return "inconclusive", math.nan, result.stopped
    if passed is not None and passed >= least:
        return "pass", passed, f"every objective passed at {passed:g}/s >= {least:g}/s"
    if failed is not None and failed <= least:
        return "fail", failed, f"an objective failed at {failed:g}/s <= {least:g}/s"
    return "inconclusive", passed or math.nan, f"the search did not decide {least:g}/s"


def capacity_objective_result(
    objective: Objective, result: CapacityResult | None, confidence: float
) -> ObjectiveResult:
    """``{metric: capacity, min: R}`` as an objective result: the estimate is the highest
    passing rate, the bounds the bracket (req/s; null ends are unknown)."""
    verdict, estimate, reason = decide_capacity(result, objective.min_value or 0.0)
    passed = None if result is None else result.passed_rps
    failed = None if result is None else result.failed_rps
    return ObjectiveResult(
        objective,
        Verdict(verdict),
        estimate,
        math.nan if passed is None else passed,
        math.inf if failed is None else failed,
        0 if result is None else len(result.probes),
        confidence,
        reason,
    )
