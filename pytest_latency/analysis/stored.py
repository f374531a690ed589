"""A new run against a stored baseline: one or more earlier runs of the same test.

The question is "is the candidate's q-quantile more than ``1 + max_regression`` times the
baseline's, and more than ``min_change_s`` above it?" (``H: Q_c <= (1 + r) Q_b + m``).

**Log ratio with order-statistic standard errors** (the default once each side has
enough effective samples). Each run's log quantile gets a standard error from its own
order statistics: the 95% distribution-free interval, at the run's effective n (so
correlation is paid for), spans about 2 x 1.96 standard errors. The log ratio's error
adds the two sides' variances, plus the **between-run** variance when the baseline
holds several runs of the same build: their log quantiles scatter by more than their
own sampling error when job-to-job noise (another machine, another neighbour) exists,
and that excess is estimated and charged to the candidate too. Its degrees of freedom
(Satterthwaite) widen the interval when it rests on few runs. A baseline with one run
cannot see that noise; the verdict then says that it assumes none.

**Exact union bounds** where either side has too few effective samples for a standard
error: the Bonferroni pair of distribution-free intervals of
:func:`pytest_latency.analysis.compare.compare_quantiles`, at the effective n.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.compare import (
    RatioResult,
    _ratio_result,
    classify_ratio,
    compare_quantiles,
)
from pytest_latency.analysis.dependence import Dependence
from pytest_latency.analysis.percentiles import (
    dependent_ranks,
    order_statistics,
    percentile,
    quantile_dependence,
)
from pytest_latency.analysis.samples import Series

# Effective samples each side needs *in the quantile's smaller tail* before the normal
# log-ratio test is used (n_eff * min(q, 1 - q), the usual np >= 10 of a normal
# approximation to the binomial: 20 for a p50, 200 for a p95); below it, the exact
# union bounds decide (the standard error itself would be unreliable).
MIN_TAIL_FOR_LOG_RATIO = 10.0
_SE_LEVEL = 0.95  # the interval whose width gives a standard error
_SE_Z = 1.959963984540054


@dataclass(frozen=True, slots=True)
class LogQuantile:
    """One run's log q-quantile, its standard error and its effective n."""

    log_estimate: float
    standard_error: float
    n: int
    dependence: Dependence


def series_dependence(series: Series, q: float) -> Dependence:
    """The design effect of the count under the run's sample q-quantile."""
    return quantile_dependence(series.values, q, series.episodes, series.phases)


def log_quantile(series: Series, q: float, dependence: Dependence) -> LogQuantile | None:
    """The run's log quantile with an order-statistic standard error; None if not usable."""
    values = series.values
    n = series.n
    if n == 0 or dependence.n_effective * min(q, 1.0 - q) < MIN_TAIL_FOR_LOG_RATIO:
        return None
    lower_rank, upper_rank = dependent_ranks(n, q, _SE_LEVEL, dependence)
    if lower_rank is None or upper_rank is None:
        return None
    ordered = order_statistics(values, [lower_rank - 1, upper_rank - 1])
    lower, upper = ordered[lower_rank - 1], ordered[upper_rank - 1]
    estimate = percentile(values, q * 100.0)
    if not (0.0 < lower <= estimate <= upper < math.inf):
        return None  # failures (inf) or zero latencies reach the interval
    spread = math.log(upper) - math.log(lower)
    return LogQuantile(math.log(estimate), spread / (2.0 * _SE_Z), n, dependence)


def compare_to_baseline(
    history: Sequence[Series],
    candidate: Series,
    q: float,
    max_regression: float,
    *,
    min_change_s: float,
    confidence: float,
) -> tuple[RatioResult, float]:
    """Decide ``H: Q_c <= (1 + r) Q_b + m``; returns the result and the candidate's n_eff.

    ``history`` holds the baseline runs of the same test (oldest first), ``candidate``
    the new run; both as per-request series in send order.
    """
    candidate_dependence = series_dependence(candidate, q)
    candidate_quantile = log_quantile(candidate, q, candidate_dependence)
    baseline_quantiles = [log_quantile(run, q, series_dependence(run, q)) for run in history]
    pooled = np.concatenate([run.values for run in history]) if history else np.empty(0)
    baseline_estimate = percentile(pooled, q * 100.0)
    limit = 1.0 + max_regression
    if min_change_s and math.isfinite(baseline_estimate) and baseline_estimate > 0:
        limit += min_change_s / baseline_estimate
    usable = [quantile for quantile in baseline_quantiles if quantile is not None]
    if candidate_quantile is None or len(usable) != len(history) or not history:
        # Too few effective samples, or failures reach the interval: exact union bounds.
        result = compare_quantiles(pooled, candidate.values, q, limit - 1.0, confidence=confidence)
    else:
        result = _log_ratio_test(usable, candidate_quantile, limit, confidence, q)
    return result, candidate_dependence.n_effective


def _log_ratio_test(
    history: Sequence[LogQuantile],
    candidate: LogQuantile,
    limit: float,
    confidence: float,
    q: float,
) -> RatioResult:
    from scipy.stats import t

    runs = len(history)
    logs = np.array([run.log_estimate for run in history])
    within = np.array([run.standard_error**2 for run in history])
    baseline_log = float(logs.mean())
    if runs >= 2:
        scatter = float(logs.var(ddof=1))  # within + between, as seen across the runs
        between = max(0.0, scatter - float(within.mean()))
        baseline_part = between + scatter / runs
        degrees = _satterthwaite(candidate.standard_error**2, baseline_part, runs - 1)
        noise = f"between-run noise {math.sqrt(between):.1%} estimated from {runs} baseline runs"
    else:
        baseline_part = float(within[0])
        degrees = math.inf
        noise = "assumes no between-run noise (the baseline holds one run; save more for it)"
    variance = candidate.standard_error**2 + baseline_part
    difference = candidate.log_estimate - baseline_log
    tail = (1.0 - confidence) / 2.0
    critical = float(t.ppf(1.0 - tail, degrees)) if math.isfinite(degrees) else _normal(tail)
    margin = critical * math.sqrt(variance)
    lower, upper = math.exp(difference - margin), math.exp(difference + margin)
    baseline_n = sum(run.n for run in history)
    build = _ratio_result(math.exp(difference), lower, upper, baseline_n, candidate.n)
    return classify_ratio(build, lower, upper, limit, f"p{q * 100.0:g}", f"; {noise}")


def _normal(tail: float) -> float:
    from scipy.stats import norm

    return float(norm.isf(tail))


def _satterthwaite(candidate_variance: float, baseline_variance: float, df: int) -> float:
    """Degrees of freedom of a sum of a (nearly) known and an estimated variance."""
    if baseline_variance <= 0.0:
        return math.inf
    total = candidate_variance + baseline_variance
    return float(total**2 / (baseline_variance**2 / df))
