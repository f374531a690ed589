"""Deciding objectives: pass, fail or inconclusive, from confidence bounds.

A percentile objective passes when the upper confidence bound of the percentile is at
or under the limit, fails when the lower bound is over it, and is inconclusive otherwise
(the bound straddles the limit, or there are too few samples for a bound to exist).
Every bound pays for the correlation of requests sent close together (see
:mod:`.dependence`): the order-statistic bound for percentiles and the Clopper-Pearson
bound for error rates are taken at the effective n, which each result reports beside n.
The confidence is shared across a test's objectives (Bonferroni), so more objectives do
not mean more false fails.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from pytest_latency.analysis.dependence import Dependence, independent
from pytest_latency.analysis.outages import (
    OutageBounds,
    error_rate_assumption,
    outage_bounds,
    outage_requests,
    requests_to_pass,
)
from pytest_latency.analysis.outages import clopper_pearson as clopper_pearson
from pytest_latency.analysis.percentiles import (
    DEFAULT_CONFIDENCE,
    adjusted_confidence,
    percentile,
)
from pytest_latency.analysis.samples import (
    Series,
    failure_series,
    metric_series,
    record_value,
    sent_times,
)
from pytest_latency.analysis.sectioning import SectionBounds, margin_quantile_bounds
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective


class Verdict(StrEnum):
    """An objective's outcome: decided (pass, fail), undecided, or not decidable (invalid)."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    INVALID = "invalid"  # the run itself cannot be trusted (the generator fell behind)


@dataclass(frozen=True, slots=True)
class ObjectiveResult:
    """One objective decided on one set of records."""

    objective: Objective
    verdict: Verdict
    estimate_s: float
    lower_s: float
    upper_s: float
    n: int
    confidence: float
    reason: str
    # Caveats about the comparison itself (e.g. the cohort mix changed), shown whatever
    # the verdict.
    warnings: tuple[str, ...] = ()
    # n after paying for correlation (n / design effect); n when the data look independent.
    n_effective: float | None = None
    # The correlation the bound paid for, with its estimate's degrees of freedom (a
    # percentile's own; None where the verdict rests on no such estimate).
    dependence: Dependence | None = None

    @property
    def effective_n(self) -> float:
        """The sample size the bound rested on: ``n_effective``, or ``n`` when independent."""
        return float(self.n) if self.n_effective is None else self.n_effective

    @property
    def passed(self) -> bool:
        """The verdict is PASS."""
        return self.verdict is Verdict.PASS


def objective_confidence(count: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Per-objective confidence so that ``count`` objectives together keep ``confidence``."""
    return 1.0 - (1.0 - confidence) / max(count, 1)


def decide(
    objective: Objective, records: Sequence[RequestRecord], confidence: float
) -> ObjectiveResult:
    """Decide one absolute objective on ``records`` (already restricted to its scope)."""
    if objective.metric == "error_rate":
        return _decide_error_rate(objective, records, confidence)
    assert objective.p is not None and objective.max_s is not None  # validated by Objective
    series = metric_series(records, objective.metric)
    if series.n == 0:
        return ObjectiveResult(
            objective,
            Verdict.INCONCLUSIVE,
            math.nan,
            -math.inf,
            math.inf,
            0,
            confidence,
            f"no {objective.metric} samples (the server reported none, or nothing completed)",
            n_effective=0.0,
        )
    estimate = percentile(series.values, objective.p)
    bounds = margin_quantile_bounds(
        series.values, objective.p / 100.0, confidence, series.episodes, series.phases
    )
    # A latency is never negative: where no order statistic is low enough to bound the
    # quantile, the bound the data give is 0 s, not -inf (docs/statistics.md).
    lower = max(bounds.lower, 0.0)
    verdict, reason = _classify(
        lower, bounds.upper, objective.max_s, objective, confidence, bounds.dependence
    )
    if verdict is Verdict.INCONCLUSIVE and math.isinf(estimate):
        failed_reason = _failures_over_the_tail(series, objective.p, confidence)
        if failed_reason is not None:
            verdict, lower, reason = Verdict.FAIL, math.inf, failed_reason
    note = sections_note(bounds.sections, verdict) or dependence_note(bounds.dependence)
    return ObjectiveResult(
        objective, verdict, estimate, lower, bounds.upper, series.n, confidence,
        reason + note, n_effective=bounds.n_effective, dependence=bounds.dependence,
    )  # fmt: skip


def _failures_over_the_tail(series: Series, p: float, confidence: float) -> str | None:
    """Why the failed requests alone fail a p-th percentile, or None.

    Failed requests are unbounded values: where their share alone is surely over the
    tail (the error rate's own bound, clustering paid for), nothing lower is. And where
    the scope ended in failures covering half of it (the server went away: 0 of 2,307
    answered after a queue filled and the server turned to 429s), its own share decides,
    as for an error rate: one outage that long is one event to the bounds, yet a server
    that stopped answering must never be left undecided."""
    bounds = outage_bounds(np.isinf(series.values) * 1.0, confidence, series.episodes)
    tail = 1.0 - p / 100.0
    if bounds.lower > tail:
        return (
            f"lower bound over the limit: at least {bounds.lower:.1%} of requests failed,"
            f" more than a p{p:g} leaves room for"
        )
    if _went_away(bounds, tail):
        return (
            f"{bounds.failed}/{bounds.offered} failed, more than a p{p:g} leaves room for,"
            f" and the last {bounds.failing_at_end} all failed: the server went away"
        )
    return None


def sections_note(sections: SectionBounds, verdict: Verdict) -> str:
    """How sectioning entered the bounds, for the reason text ("" when it did not)."""
    if verdict is Verdict.PASS and sections.upper_batches:
        return f"; sectioning: {sections.upper_batches} batches in send order"
    if verdict is Verdict.FAIL and sections.lower_batches:
        return f"; sectioning: {sections.lower_batches} batches in send order"
    return ""


def dependence_note(dependence: Dependence) -> str:
    """What the bound paid for correlation, for the reason text ("" when nothing)."""
    if dependence.method == "unestimated":
        return (
            f"; {dependence.n} requests in scope are too few to estimate their correlation,"
            " so they count as one: repeat the episode (repeat: k) or run longer"
        )
    if dependence.method == "short":
        return (
            f"; only {dependence.n} requests in scope: their correlation is estimated with"
            f" {dependence.degrees_of_freedom:.0f} degrees of freedom and paid for"
            f" (effective n {dependence.n_effective:.0f}); 64+ requests, or repeat: k, decide more"
        )
    if dependence.independent:
        return ""
    if dependence.method == "episodes":
        how = f"across {dependence.episodes} episodes"
    else:
        how = f"in send order over {dependence.window} requests"
    return (
        f"; correlated requests: effective n {dependence.n_effective:.0f} of {dependence.n}"
        f" (design effect {dependence.design_effect:.1f}, {how})"
    )


def _classify(
    lower: float,
    upper: float,
    limit: float,
    objective: Objective,
    confidence: float = DEFAULT_CONFIDENCE,
    dependence: Dependence | None = None,
) -> tuple[Verdict, str]:
    if upper <= limit:
        return Verdict.PASS, "upper bound within the limit"
    if lower > limit:
        return Verdict.FAIL, "lower bound over the limit"
    if math.isinf(upper) and objective.p is not None:
        return Verdict.INCONCLUSIVE, _no_upper_bound(objective.p, confidence, dependence)
    return Verdict.INCONCLUSIVE, "the confidence interval straddles the limit"


def few_degrees_of_freedom(p: float, confidence: float, dependence: Dependence) -> bool:
    """Whether a missing upper bound on the p-th percentile wants episodes, not requests:
    its effective n would give one were the correlation known (a few episodes' spread is
    a poor estimate of it), or no count would at the episodes' degrees of freedom. (In
    one episode more requests are more degrees of freedom too: the count is the limit.)"""
    if dependence.method != "episodes":
        return False
    enough = math.floor(dependence.n_effective) >= samples_needed(p / 100.0, confidence)
    return enough or adjusted_confidence(confidence, dependence) >= 1.0


def _no_upper_bound(p: float, confidence: float, dependence: Dependence | None) -> str:
    """Why there is no upper bound: too few effective requests, or too few episodes."""
    dependence = dependence or independent(0)
    effective, needed = dependence.n_effective, samples_needed(p / 100.0, confidence)
    if _serial_degrees_bind(p, confidence, dependence):
        return _few_serial_degrees(p, confidence, dependence)
    if not few_degrees_of_freedom(p, confidence, dependence):
        return (
            f"too few samples for a p{p:g} bound: effective n={effective:.0f},"
            f" roughly {needed}+ independent requests needed"
        )
    degrees = dependence.degrees_of_freedom
    head = (
        f"too few episodes for a p{p:g} bound: {dependence.episodes} episodes give the"
        f" correlation estimate {degrees:.3g} degrees of freedom"
    )
    adjusted = adjusted_confidence(confidence, dependence)
    if adjusted >= 1.0:
        return (
            f"{head}, too few for any bound at {confidence * 100:.4g}% confidence: more requests"
            f" per episode cannot give one (effective n {effective:.0f})"
        )
    return (
        f"{head}, at which a bound needs effective n {samples_needed(p / 100.0, adjusted)}+"
        f" (effective n {effective:.0f}; {needed}+ with the correlation known)"
    )


def _serial_degrees_bind(p: float, confidence: float, dependence: Dependence) -> bool:
    """Whether the send-order estimate's few degrees of freedom, not the requests, keep a
    p-th percentile bound from existing: the effective n would give one were the
    correlation known. (A longer run adds both requests and degrees of freedom.)"""
    if dependence.method not in ("serial", "short"):
        return False
    if math.isinf(dependence.degrees_of_freedom):
        return False
    return math.floor(dependence.n_effective) >= samples_needed(p / 100.0, confidence)


def _few_serial_degrees(p: float, confidence: float, dependence: Dependence) -> str:
    """The reason when the send-order estimate's degrees of freedom bind (see above)."""
    degrees, effective = dependence.degrees_of_freedom, dependence.n_effective
    head = (
        f"too few degrees of freedom for a p{p:g} bound: the correlation in send order"
        f" (over {max(dependence.window, 1)} of {dependence.n} requests) is estimated with"
        f" {degrees:.0f} degrees of freedom"
    )
    adjusted = adjusted_confidence(confidence, dependence)
    needed = samples_needed(p / 100.0, confidence)
    if adjusted >= 1.0:
        return f"{head}, too few for any bound at {confidence * 100:.4g}% confidence"
    return (
        f"{head}, at which a bound needs effective n {samples_needed(p / 100.0, adjusted)}+"
        f" (effective n {effective:.0f}; {needed}+ with the correlation known)"
    )


def samples_needed(q: float, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """Smallest n for which a two-sided upper bound on the q-quantile exists."""
    tail = (1.0 - confidence) / 2.0
    return math.ceil(math.log(tail) / math.log(q))


def _decide_error_rate(
    objective: Objective, records: Sequence[RequestRecord], confidence: float
) -> ObjectiveResult:
    failures = failure_series(records)
    offered = failures.n
    if offered == 0:
        return ObjectiveResult(
            objective, Verdict.INCONCLUSIVE, math.nan, 0.0, 1.0, 0, confidence,
            "nothing offered", n_effective=0.0,
        )  # fmt: skip
    assert objective.max_s is not None  # validated: error_rate always has a max
    # Failures count as independent unless the run shows them clustered; an outage the
    # run did not see is the user's stated assumption, in requests at the scope's rate.
    unseen = None
    if objective.outage_s is not None:
        unseen = outage_requests(sent_times(records), objective.outage_s, failures.episodes)
    bounds = outage_bounds(failures.values, confidence, failures.episodes, unseen)
    verdict, _ = _classify(bounds.lower, bounds.upper, objective.max_s, objective)
    lower, upper = bounds.lower, bounds.upper
    if verdict is not Verdict.FAIL and _went_away(bounds, objective.max_s):
        verdict = Verdict.FAIL
        lower, upper = clopper_pearson(bounds.failed, offered, confidence)
    return ObjectiveResult(
        objective, verdict, bounds.failed / offered, lower, upper, offered, confidence,
        error_rate_reason(verdict, bounds, objective, confidence),
        n_effective=bounds.n_effective,
    )  # fmt: skip


def _went_away(bounds: OutageBounds, limit: float) -> bool:
    """The run ended in failures covering half of it: the server went away.

    Not a statistical verdict: a run of failures as long as the run is one outage to
    the bounds, so they can say little about it (20 of 20 failed is one event), yet a
    server that stopped answering must never pass. The run's own rate decides, with
    its binomial bounds.
    """
    return 2 * bounds.failing_at_end >= bounds.offered and bounds.failed > limit * bounds.offered


def error_rate_reason(
    verdict: Verdict, bounds: OutageBounds, objective: Objective, confidence: float
) -> str:
    """What an error-rate verdict rests on: the failures seen, and what is assumed."""
    assert objective.max_s is not None  # validated: error_rate always has a max
    seen = f"{bounds.failed}/{bounds.offered} failed"
    if bounds.outages and bounds.method != "binomial":
        seen += f" in {bounds.outages} outage(s) (runs of failures; the longest {bounds.longest})"
    if bounds.counted > bounds.outages:
        seen += f", counted as {bounds.counted} of at most {bounds.outage_requests:.0f} requests"
    if 2 * bounds.failing_at_end >= bounds.offered:
        seen += f"; the last {bounds.failing_at_end} requests all failed (the server went away?)"
    assumption = error_rate_assumption(bounds, objective.outage_s)
    if verdict is Verdict.PASS:
        return f"upper bound within the limit: {seen}; {assumption}"
    if verdict is Verdict.FAIL and bounds.lower <= objective.max_s:
        return (
            f"{seen}: the run ended in failures covering half of it, so its own rate"
            " decides (one outage this long is one event to the bounds)"
        )
    if verdict is Verdict.FAIL:
        return f"lower bound over the limit: {seen}; {assumption}"
    if bounds.method == "clustered":
        return (
            f"{seen}: too few outages to bound the rate at {confidence:.3g} (a longer run"
            f" sees more, or repeat: k); {assumption}"
        )
    if bounds.failed == 0:
        needed = requests_to_pass(objective.max_s, confidence, bounds.outage_requests)
        return f"{seen}: a pass needs {needed}+ requests without a failure; {assumption}"
    return f"{seen}: the confidence interval straddles the limit; {assumption}"


def proportion_bounds(
    hits: int, n: int, confidence: float, dependence: Dependence | None = None
) -> tuple[float, float]:
    """Clopper-Pearson bounds on ``hits / n`` at the effective n of correlated trials."""
    dependence = dependence or independent(n)
    if dependence.independent:
        return clopper_pearson(hits, n, confidence)
    effective = max(dependence.n_effective, 1.0)
    adjusted = adjusted_confidence(confidence, dependence)
    if adjusted >= 1.0:
        return 0.0, 1.0
    return clopper_pearson(hits * effective / n, effective, adjusted)


def slowest(records: Sequence[RequestRecord], metric: str, count: int = 5) -> list[RequestRecord]:
    """The ``count`` requests with the largest value of ``metric``, failed ones first."""
    if metric == "error_rate":
        return [record for record in records if not record.ok][:count]
    valued = [(record_value(record, metric), record) for record in records]
    ranked = sorted(
        ((value, record) for value, record in valued if value is not None),
        key=lambda pair: pair[0],
        reverse=True,
    )
    return [record for _, record in ranked[:count]]
