"""Capacity search: the highest offered rate at which every objective passes (a bracket).

The search probes rising offered rates (doubling from the low end of ``rates``), then
bisects (geometrically) between the highest passing and the lowest failing rate until
the bracket is at most ``target_ratio`` wide, the budget runs out, or the probes stop
deciding. Each probe is run by a caller-supplied function (a live run with warm-up and
drain, or the sim in virtual time) that looks at its data at pre-planned fractions of
the probe and may stop early once decided.

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
from scipy.stats import norm

from pytest_latency.records import RequestRecord
from pytest_latency.spec_phase import MIN_SATURATION_GROWTH

MONOTONICITY = (
    "every objective that passes at an offered rate passes at every lower rate"
    " (latency and errors do not improve with more load)"
)
DEFAULT_LOOKS: tuple[float, ...] = (0.5, 1.0)  # fractions of the probe at which to decide


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe: the offered rate, what was offered, each objective's verdict."""

    rate: float
    offered: int
    verdicts: dict[str, str]  # objective label -> pass / fail / inconclusive / invalid
    stopped_early: bool
    cost_s: float  # time spent, warm-up and drain included

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
    def inconclusive_rps(self) -> list[float]:
        """Rates inside the bracket at which a probe decided nothing (the band between)."""
        low = self.passed_rps or 0.0
        high = math.inf if self.failed_rps is None else self.failed_rps
        return sorted(
            p.rate for p in self.probes if p.outcome == "inconclusive" and low < p.rate < high
        )

    def to_json(self) -> dict[str, object]:
        return {
            "passed_rps": self.passed_rps,
            "failed_rps": self.failed_rps,
            "probes": [probe.to_json() for probe in self.probes],
            "inconclusive_rps": self.inconclusive_rps,
            "budget_s": self.budget_s,
            "spent_s": self.spent_s,
            "stopped": self.stopped,
            "assumption": MONOTONICITY,
            "contradictions": list(self.contradictions),
        }


SATURATION_SHARE = 0.1  # in flight growing at 10% of the offered rate: the queue runs away
SATURATION_LABEL = "not over-saturated"


def saturated(records: Sequence[RequestRecord], rate: float) -> bool:
    """The queue grew without bound during the probe (so every latency limit fails in time).

    In flight at each send (sent, not yet ended; never-ended counts as in flight) is
    fitted against time by least squares: saturated when it grows at least
    ``SATURATION_SHARE`` of the offered rate and by ``MIN_SATURATION_GROWTH`` requests.
    A finite probe of a runaway queue can hold too little independent evidence for a
    percentile bound (one long transient); this is the direct evidence that it ran away.
    """
    sent = sorted((r.sent_s, r.end_s) for r in records if r.sent_s is not None)
    if len(sent) < 3:
        return False
    starts = np.array([start for start, _ in sent])
    ends = np.sort(np.array([math.inf if end is None else end for _, end in sent]))
    in_flight = np.arange(1, starts.size + 1) - np.searchsorted(ends, starts, side="right")
    span = float(starts[-1] - starts[0])
    if span <= 0:
        return False
    slope = float(np.polyfit(starts, in_flight, 1)[0])
    return slope >= SATURATION_SHARE * rate and slope * span >= MIN_SATURATION_GROWTH


def look_confidences(alpha: float, looks: Sequence[float]) -> list[float]:
    """Per-look confidence spending ``alpha`` by O'Brien-Fleming (Lan-DeMets) over ``looks``."""
    z = float(norm.isf(alpha / 2.0))
    spent = [2.0 - 2.0 * float(norm.cdf(z / math.sqrt(t))) for t in looks]
    spent[-1] = alpha  # the last look spends what is left
    shares = [later - earlier for earlier, later in zip([0.0, *spent[:-1]], spent, strict=True)]
    return [1.0 - max(share, 1e-300) for share in shares]


def _bisect(low: float, high: float) -> float:
    return math.sqrt(low * high) if low > 0 else high / 2.0


def search_capacity(
    probe: Probe,
    rates: tuple[float, float],
    *,
    probe_cost_s: float,
    budget_s: float,
    confidence: float = 0.99,
    target_ratio: float = 1.25,
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
    rate: float | None = low
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
    tried = {probe.rate for probe in result.probes}
    passed, failed = result.passed_rps, result.failed_rps
    if result.contradictions or (failed is not None and failed <= low):
        return None  # failed at the bottom of the range, or the bracket is not trusted
    if failed is None:  # still rising: an undecided low rate (too few samples) goes on
        highest = max(tried)
        return None if highest >= high else min(high, highest * 2.0)
    undecided = [p.rate for p in result.probes if p.outcome == "inconclusive" and p.rate < failed]
    if passed is None:  # only undecided rates under the fail: approach the fail from them
        lower = max(undecided, default=low)
        candidate = _bisect(lower, failed)
        return None if candidate in tried or failed / lower <= target_ratio else candidate
    band = [rate for rate in undecided if rate > passed]
    upper = min(band, default=failed)  # bisect under an undecided rate first
    if upper / passed <= target_ratio:
        return None
    candidate = _bisect(passed, upper)
    return None if candidate in tried else candidate


def _why_done(result: CapacityResult, low: float, high: float, target_ratio: float) -> str:
    if result.contradictions:
        return "a probe contradicted monotonicity: " + "; ".join(result.contradictions)
    if result.failed_rps is None:
        return f"every probe up to {high:g}/s passed" if result.passed_rps else "undecided"
    if result.passed_rps is None:
        return f"failed at the lowest rate {low:g}/s"
    if result.inconclusive_rps:
        return "probes inside the bracket decided nothing (the band between)"
    return f"bracket within {target_ratio:g}x"


def decide_capacity(result: CapacityResult | None, least: float) -> tuple[str, float, str]:
    """(verdict, estimate, reason) of ``{metric: capacity, min: least}`` on a search result."""
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
