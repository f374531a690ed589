"""Capacity search: the highest offered rate at which every objective passes (a bracket).

The search bisects the range geometrically from the start (its first probe is at
sqrt(low x high), not at the low end: doubling up from the bottom spends most probes at
rates far under the capacity), between the highest passing and the lowest failing rate
(the ends of ``rates`` standing in until probed), until the bracket is at most
``target_ratio`` wide, the budget runs out, or the probes stop deciding. An end of the
range is probed only when the bracket reaches it. Each probe is run by a caller-supplied
function (a live run with warm-up and drain, or the sim in virtual time) that looks at
its data at pre-planned fractions of the probe and may stop early once decided.

Error control: every rate probed is one sequential experiment of at most ``retries``
probes, each decided on all the probes at that rate so far (pooled,
:mod:`.capacity_probe`). A rate's first probe reserves ``alpha / max_rates`` of
``alpha = 1 - confidence`` for all of them (:func:`repeat_shares`), and at most
``max_rates`` rates are probed (:func:`search_plan`); inside a probe its share is spent
over the looks by the Lan-DeMets O'Brien-Fleming function. Whether a rate is probed
again depends on its first probe's data, so a repeat's pooled test is not within its
share given that; but given everything before the rate's first probe, its pooled tests
err with chance at most the sum of their shares (a union bound over tests fixed in
advance, run or not). Summed over the rates, any false verdict in the search has chance
under alpha, whatever the dependence between looks and probes.

Assumption (stated in the result): **monotonicity**, every objective that passes at a
rate also passes at every lower rate. A probe that contradicts it (a pass above a fail)
is listed under ``contradictions`` and the bracket is then not trusted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_latency.analysis.capacity_plan import RETRIES, repeat_shares, search_plan
from pytest_latency.analysis.looks import look_confidences

MONOTONICITY = (
    "every objective that passes at an offered rate passes at every lower rate"
    " (latency and errors do not improve with more load)"
)
DEFAULT_LOOKS: tuple[float, ...] = (0.5, 1.0)  # fractions of the probe at which to decide
# The bracket the search aims for by bisection; around an undecided rate r it probes
# r x 1.2^2 over it and r / 1.2 under it, so a pass at r makes a bracket of 1.44x.
TARGET_RATIO = 1.2
# A band end hemmed in by a fail is probed again when its lean (half-widths of its
# interval on the passing side) projected to its last probe reaches this. Pooled leans
# grew about in proportion to the probes (0.2, 0.9, 1.2, pass at 82% of a slot server's
# capacity); 0.7 bracketed the most seeded searches within 1.5x (docs/capacity.md).
LEAN_TO_REPEAT = 0.7
# Probes the budget must still hold for the step over the band to come first; with
# fewer it steps the way the band leans (a short search finds a pass sooner under).
ROOM_TO_POOL = 4


@dataclass(frozen=True, slots=True)
class ProbeEvidence:
    """What one probe verdict rests on: the estimate, its bounds, n and effective n.

    ``decided_as`` is the hypothesis tested (a percentile as a proportion); ``pooled``
    how many probes at this rate the verdict's requests came from (this one included).
    For the queue check the estimate is the growth of in flight (req/s), without
    bounds, and the limit the least growth that counts as runaway.
    """

    objective: str
    decided_as: str
    verdict: str
    estimate: float
    lower: float
    upper: float
    n: int
    n_effective: float | None  # None for the queue check
    unit: str  # fraction, seconds, or rps (the queue's growth)
    pooled: int = 1
    limit: float | None = None  # the hypothesis' limit, in unit
    at_least: bool = True  # the estimate passes at or over the limit (else at or under)

    @property
    def lean(self) -> float:
        """How far the estimate lies on the passing side of the limit, in half-widths of
        its interval (negative on the failing side; 0 without a finite interval or limit)."""
        half = (self.upper - self.lower) / 2.0
        if self.limit is None or not math.isfinite(half) or half <= 0:
            return 0.0
        distance = self.estimate - self.limit if self.at_least else self.limit - self.estimate
        return distance / half if math.isfinite(distance) else 0.0

    def to_json(self) -> dict[str, object]:
        def finite(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {
            "objective": self.objective,
            "decided_as": self.decided_as,
            "verdict": self.verdict,
            "estimate": finite(self.estimate),
            "lower": finite(self.lower),
            "upper": finite(self.upper),
            "n": self.n,
            "n_effective": None if self.n_effective is None else finite(self.n_effective),
            "unit": self.unit,
            "pooled": self.pooled,
            "limit": None if self.limit is None else finite(self.limit),
        }


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe: the offered rate, what was offered, each objective's verdict."""

    rate: float
    offered: int
    verdicts: dict[str, str]  # objective label -> pass / fail / inconclusive / invalid
    stopped_early: bool
    cost_s: float  # time spent, warm-up and drain included
    drain: str | None = None  # how a live probe's drain ended
    evidence: tuple[ProbeEvidence, ...] = ()  # what each verdict rests on

    @property
    def lean(self) -> float:
        """The weakest objective's :attr:`ProbeEvidence.lean` (the queue check aside):
        how far this probe is from deciding, and which way it tends."""
        leans = [item.lean for item in self.evidence if item.unit != "rps"]
        return min(leans) if leans else 0.0

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
            "objectives": [item.to_json() for item in self.evidence],
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
    retries: int = RETRIES  # probes at one rate at most (search_plan)

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
    shortest_probe_s: float | None = None,
) -> CapacityResult:
    """Bracket the capacity in ``rates`` (low, high req/s) within ``budget_s``.

    ``probe_cost_s`` is one probe's longest time (warm-up, probe and drain): the search
    never starts a probe the budget cannot finish. Error control: every rate probed is
    one sequential experiment of at most ``retries`` pooled probes and holds
    ``alpha / max_rates`` of the error budget, spent or not (:func:`search_plan`,
    :func:`repeat_shares`), and at most ``max_rates`` rates are probed.
    ``shortest_probe_s`` (default ``probe_cost_s``), the least time a probe that
    decides anything takes, caps the number of probes.
    """
    low, high = rates
    max_probes = max(1, int(budget_s // (shortest_probe_s or probe_cost_s)))
    max_rates, retries = search_plan(rates, int(budget_s // probe_cost_s), target_ratio)
    per_rate = (1.0 - confidence) / max_rates
    confidences = [  # the k-th probe at a rate (0-based): its share of the rate's alpha
        look_confidences(per_rate * share, looks) for share in repeat_shares(retries)
    ]
    result = CapacityResult(None, None, [], budget_s, 0.0, "", retries=retries)
    rate = _next_rate(result, low, high, target_ratio, int(budget_s // probe_cost_s))
    while rate is not None:
        if len(result.probes) >= max_probes or result.spent_s + probe_cost_s > budget_s:
            result.stopped = "budget: no time left for another probe"
            break
        if _count(result, rate) == 0 and len({p.rate for p in result.probes}) >= max_rates:
            result.stopped = f"budget: its error share holds {max_rates} rates, all probed"
            break
        outcome = probe(rate, looks, confidences[_count(result, rate)])
        result.probes.append(outcome)
        result.spent_s += outcome.cost_s
        _update(result, outcome)
        fits = int((budget_s - result.spent_s) // probe_cost_s)
        rate = _next_rate(result, low, high, target_ratio, fits)
    else:
        _confirm(result, probe, looks, confidences, probe_cost_s, max_probes)
        result.stopped = _why_done(result, low, high, target_ratio)
    return result


def _confirm(
    result: CapacityResult,
    probe: Probe,
    looks: Sequence[float],
    confidences: Sequence[Sequence[float]],
    probe_cost_s: float,
    max_probes: int,
) -> None:
    """Probe the highest passing rate again when the budget allows: a fail there now
    contradicts monotonicity (or the first pass was luck) and is reported."""
    passed = result.passed_rps
    if (
        passed is None
        or len(result.probes) >= max_probes
        or _count(result, passed) >= result.retries
    ):
        return
    if result.spent_s + probe_cost_s > result.budget_s:
        return
    again = probe(passed, looks, confidences[_count(result, passed)])
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
    result: CapacityResult, low: float, high: float, target_ratio: float, fits: int
) -> float | None:
    """The next rate to probe, None when the search is done.

    Between ``lower`` (the highest pass, else ``low``) and ``upper`` (the lowest fail,
    else ``high``): bisect geometrically while no probe in between decided nothing; around
    such probes (the band) see :func:`_around_band`. A range end that stood in for a
    probe is probed last, once the bracket reaches it.
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
    if band:
        return _around_band(result, band, (lower, upper), target_ratio, fits)
    candidate: float | None = None
    if upper / lower > wide:
        candidate = _bisect(lower, upper)
    elif passed is None and low not in tried:
        candidate = low  # the bracket reached the bottom: does the lowest rate pass?
    elif failed is None and high not in tried:
        candidate = high  # the bracket reached the top: does the highest rate pass?
    return None if candidate is None or candidate in tried else candidate


def _around_band(
    result: CapacityResult,
    band: Sequence[float],
    bracket: tuple[float, float],
    ratio: float,
    fits: int,
) -> float | None:
    """The next probe around rates that decided nothing (the band), in this order:

    1. Over the band by two ratios (1.44x) while no fail lies that close above it, if
       the budget holds ``ROOM_TO_POOL`` probes or the band leans to fail: over the
       capacity a runaway queue fails a probe in seconds, and a fail 1.44x over a band
       rate that then passes is a bracket within 1.5x.
    2. Once hemmed in so, a band end again (pooled) when its lean, projected over the
       probes left to it (l * (k + left) / k after k), reaches ``LEAN_TO_REPEAT``.
    3. Under the band by one ratio. 4. A band end again, to ``RETRIES`` probes.
    """
    tried = {probe.rate for probe in result.probes}
    lower, upper = bracket
    top, bottom = band[-1], band[0]
    slack = 1.0 + 1e-9
    hemmed = upper / top <= ratio * ratio * slack  # a fail (or the range's end) close over
    if not hemmed and (fits >= ROOM_TO_POOL or _latest(result, top).lean < 0):
        over = min(_bisect(top, upper), top * ratio * ratio)
        if over not in tried:
            return over
    ends = [r for r in sorted({bottom, top}) if _count(result, r) < result.retries]
    leaning = max(ends, key=lambda rate: abs(_projected(result, rate, fits)), default=None)
    if hemmed and leaning and abs(_projected(result, leaning, fits)) >= LEAN_TO_REPEAT:
        return leaning
    if bottom / lower > ratio * slack:
        under = max(_bisect(lower, bottom), bottom / ratio)
        if under not in tried:
            return under
    # Nothing else left: a band end again, up to RETRIES probes; more only on its lean
    # (a rate at the flip leans nowhere, and each repeat risks a runaway trip there).
    return leaning if leaning is not None and _count(result, leaning) < RETRIES else None


def _count(result: CapacityResult, rate: float) -> int:
    return sum(p.rate == rate for p in result.probes)


def _projected(result: CapacityResult, rate: float, fits: int) -> float:
    """The lean at ``rate`` projected to its last probe (its retries, and ``fits``: the
    probes the budget still holds)."""
    count = _count(result, rate)
    return _latest(result, rate).lean * min(result.retries, count + fits) / count


def _latest(result: CapacityResult, rate: float) -> ProbeResult:
    """The last probe at ``rate`` (a repeat's evidence pools the earlier ones)."""
    return next(p for p in reversed(result.probes) if p.rate == rate)


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
