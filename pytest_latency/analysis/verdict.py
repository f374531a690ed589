"""Deciding objectives: pass, fail or inconclusive, from confidence bounds.

A percentile objective passes when the upper confidence bound of the percentile is at
or under the limit, fails when the lower bound is over it, and is inconclusive otherwise
(the bound straddles the limit, or there are too few samples for a bound to exist).
Error rates use the exact (Clopper-Pearson) binomial bounds. The confidence is shared
across a test's objectives (Bonferroni), so more objectives do not mean more false fails.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy.stats import beta

from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE, percentile, quantile_bounds
from pytest_latency.analysis.samples import error_counts, metric_samples, record_value
from pytest_latency.records import RequestRecord
from pytest_latency.spec import Objective


class Verdict(StrEnum):
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

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS


def objective_confidence(count: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Per-objective confidence so that ``count`` objectives together keep ``confidence``."""
    return 1.0 - (1.0 - confidence) / max(count, 1)


def decide(
    objective: Objective, records: Sequence[RequestRecord], confidence: float
) -> ObjectiveResult:
    """Decide one objective on ``records`` (already restricted to its phase)."""
    if objective.metric == "error_rate":
        return _decide_error_rate(objective, records, confidence)
    assert objective.p is not None  # validated by Objective
    samples = metric_samples(records, objective.metric)
    n = int(samples.size)
    if n == 0:
        return ObjectiveResult(
            objective,
            Verdict.INCONCLUSIVE,
            math.nan,
            -math.inf,
            math.inf,
            0,
            confidence,
            f"no {objective.metric} samples (the server reported none, or nothing completed)",
        )
    estimate = percentile(samples, objective.p)
    lower, upper = quantile_bounds(samples, objective.p / 100.0, confidence)
    assert objective.max_s is not None  # relative objectives are decided against a baseline
    verdict, reason = _classify(lower, upper, objective.max_s, n, objective)
    return ObjectiveResult(objective, verdict, estimate, lower, upper, n, confidence, reason)


def _classify(
    lower: float, upper: float, limit: float, n: int, objective: Objective
) -> tuple[Verdict, str]:
    if upper <= limit:
        return Verdict.PASS, "upper bound within the limit"
    if lower > limit:
        return Verdict.FAIL, "lower bound over the limit"
    if math.isinf(upper) and objective.p is not None:
        needed = samples_needed(objective.p / 100.0)
        return Verdict.INCONCLUSIVE, (
            f"too few samples for a p{objective.p:g} bound: n={n}, roughly {needed}+ needed"
        )
    return Verdict.INCONCLUSIVE, "the confidence interval straddles the limit"


def samples_needed(q: float, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """Smallest n for which a two-sided upper bound on the q-quantile exists."""
    tail = (1.0 - confidence) / 2.0
    return math.ceil(math.log(tail) / math.log(q))


def _decide_error_rate(
    objective: Objective, records: Sequence[RequestRecord], confidence: float
) -> ObjectiveResult:
    failed, offered = error_counts(records)
    if offered == 0:
        return ObjectiveResult(
            objective, Verdict.INCONCLUSIVE, math.nan, 0.0, 1.0, 0, confidence, "nothing offered"
        )
    lower, upper = clopper_pearson(failed, offered, confidence)
    estimate = failed / offered
    assert objective.max_s is not None  # validated: error_rate always has a max
    verdict, reason = _classify(lower, upper, objective.max_s, offered, objective)
    if verdict is Verdict.INCONCLUSIVE:
        reason = (
            f"{failed}/{offered} failed: too few requests to bound the rate at {confidence:.3g}"
        )
    return ObjectiveResult(objective, verdict, estimate, lower, upper, offered, confidence, reason)


def clopper_pearson(failed: int, offered: int, confidence: float) -> tuple[float, float]:
    """Exact two-sided binomial bounds on a failure fraction."""
    tail = (1.0 - confidence) / 2.0
    lower = 0.0 if failed == 0 else float(beta.ppf(tail, failed, offered - failed + 1))
    upper = 1.0 if failed == offered else float(beta.ppf(1 - tail, failed + 1, offered - failed))
    return lower, upper


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
