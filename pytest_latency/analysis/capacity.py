"""Capacity search: the highest offered rate at which every objective passes (a bracket).

The search bisects the range geometrically from the start (its first probe is at
sqrt(low x high), not at the low end: doubling up from the bottom spends most probes at
rates far under the capacity), between the highest passing and the lowest failing rate
(the ends of ``rates`` standing in until probed), until the bracket is at most
``target_ratio`` wide, the budget runs out, or the probes stop deciding. An end of the
range is probed only when the bracket reaches it. Every rate lies on a lattice, the first
probe's rate times whole powers of ``target_ratio``, so brackets are whole steps
(:mod:`.capacity_steps` chooses the rates; :mod:`.capacity_result` holds the results).
Each probe is run by a caller-supplied function (a live run with warm-up and drain, or
the sim in virtual time) that looks at its data at pre-planned fractions of the probe
and may stop early once decided.

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

from collections.abc import Callable, Sequence

from pytest_latency.analysis.capacity_plan import repeat_shares, search_plan
from pytest_latency.analysis.capacity_result import CapacityResult, ProbeResult
from pytest_latency.analysis.capacity_steps import count_at, next_rate
from pytest_latency.analysis.looks import look_confidences

DEFAULT_LOOKS: tuple[float, ...] = (0.5, 1.0)  # fractions of the probe at which to decide
# The bracket the search aims for by bisection; around an undecided rate r it probes
# r x 1.2^2 over it and r / 1.2 under it, so a pass at r makes a bracket of 1.44x.
TARGET_RATIO = 1.2


#: probe(rate, look fractions, per-look confidences) -> ProbeResult
Probe = Callable[[float, Sequence[float], Sequence[float]], ProbeResult]


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
    rate = next_rate(result, low, high, target_ratio, int(budget_s // probe_cost_s))
    while rate is not None:
        if len(result.probes) >= max_probes or result.spent_s + probe_cost_s > budget_s:
            result.stopped = "budget: no time left for another probe"
            break
        if count_at(result, rate) == 0 and len({p.rate for p in result.probes}) >= max_rates:
            result.stopped = f"budget: its error share holds {max_rates} rates, all probed"
            break
        outcome = probe(rate, looks, confidences[count_at(result, rate)])
        result.probes.append(outcome)
        result.spent_s += outcome.cost_s
        _update(result, outcome)
        fits = int((budget_s - result.spent_s) // probe_cost_s)
        rate = next_rate(result, low, high, target_ratio, fits)
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
        or count_at(result, passed) >= result.retries
    ):
        return
    if result.spent_s + probe_cost_s > result.budget_s:
        return
    again = probe(passed, looks, confidences[count_at(result, passed)])
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
