"""A new run against a stored baseline: one or more earlier runs of the same test.

The question is "is the candidate's q-quantile more than ``1 + max_regression`` times the
baseline's, and more than ``min_change_s`` above it?" (``H: Q_c <= (1 + r) Q_b + m``).

**Several stored runs (k >= 2): the candidate is one more run.** Runs of one build in
different jobs differ by more than their sampling error (another machine, another
neighbour), and the candidate's own job is one more such draw. The k stored log
quantiles have a sample variance S² that holds both kinds of noise; the candidate's log
quantile minus their mean then varies by S²(1 + 1/k), and Student's t at k - 1 degrees
of freedom gives the interval (a prediction interval: exact for normal log quantiles,
whatever the share of job noise). S² is never taken below the runs' own sampling
variance, and a candidate with more sampling error than the stored runs adds the
excess. With few runs t is wide (9.9 at k = 3 and 99%): the verdict is honest about
how little three runs say about job noise. Failed requests reaching the quantile use
exact order-statistic bounds whose baseline side spans every stored run's interval.

**One stored run: between-run noise is assumed to be** :data:`JOB_NOISE` **a run**, and
every verdict says so: one run cannot show it, and assuming none made a candidate at
the allowance FAIL 13-16% and PASS 11-12% wrongly with 5% job noise. The log ratio
gets each run's standard error from its own order statistics (the 95%
distribution-free interval, at the run's effective n, spans about 2 x 1.96 standard
errors) plus the assumed noise of both runs, and a normal interval. **Exact union
bounds** replace it where either side has too few effective samples for a standard
error: the Bonferroni pair of distribution-free intervals of
:func:`pytest_latency.analysis.compare.compare_quantiles`, widened by the same noise.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.compare import (
    RatioResult,
    _ratio,
    _ratio_result,
    classify_ratio,
    compare_quantiles,
    per_sample_confidence,
)
from pytest_latency.analysis.dependence import Dependence
from pytest_latency.analysis.percentiles import (
    correlated_quantile_bounds,
    dependent_ranks,
    order_statistics,
    percentile,
    quantile_dependence,
)
from pytest_latency.analysis.samples import Series
from pytest_latency.analysis.verdict import Verdict

# Effective samples each side needs *in the quantile's smaller tail* before the normal
# log-ratio test is used (n_eff * min(q, 1 - q), the usual np >= 10 of a normal
# approximation to the binomial: 20 for a p50, 200 for a p95); below it, the exact
# union bounds decide (the standard error itself would be unreliable).
MIN_TAIL_FOR_LOG_RATIO = 10.0
_SE_LEVEL = 0.95  # the interval whose width gives a standard error
_SE_Z = 1.959963984540054
# Between-run noise assumed against one stored run (the log-sd of a run's quantile, 3.5%
# a run): wrong verdicts at the allowance stay at 1-2.3% with 5% real job noise, and a
# +30% regression of a p50 over 2,000 requests still fails 93% (docs/statistics.md).
JOB_NOISE = 0.035


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
    pooled = np.concatenate([run.values for run in history]) if history else np.empty(0)
    baseline_estimate = percentile(pooled, q * 100.0)
    limit = 1.0 + max_regression
    if min_change_s and math.isfinite(baseline_estimate) and baseline_estimate > 0:
        limit += min_change_s / baseline_estimate
    if len(history) >= 2:
        result = _history_test(history, candidate, candidate_dependence, limit, confidence, q)
        return result, candidate_dependence.n_effective
    candidate_quantile = log_quantile(candidate, q, candidate_dependence)
    baseline_quantile = (
        log_quantile(history[0], q, series_dependence(history[0], q)) if history else None
    )
    if candidate_quantile is None or baseline_quantile is None:
        # Too few effective samples, or failures reach the interval: exact union bounds.
        result = compare_quantiles(pooled, candidate.values, q, limit - 1.0, confidence=confidence)
        result = _with_job_noise(result, limit, confidence, q)
    else:
        result = _single_run_test(baseline_quantile, candidate_quantile, limit, confidence, q)
    return result, candidate_dependence.n_effective


# Said wherever a comparison rests on one stored run: it cannot see job-to-job noise.
NO_HISTORY = (
    f"assumes between-run noise of {JOB_NOISE:.1%} a run (the baseline holds one run;"
    " save more runs to measure it: --latency-baseline-history)"
)


def _job_noise_margin(confidence: float) -> float:
    """The log-ratio margin of both runs' assumed job noise at ``confidence``."""
    return _normal((1.0 - confidence) / 2.0) * math.sqrt(2.0) * JOB_NOISE


def _with_job_noise(result: RatioResult, limit: float, confidence: float, q: float) -> RatioResult:
    """Exact union bounds widened by the assumed job noise (the two intervals add)."""
    if result.verdict is Verdict.INCONCLUSIVE:  # wider cannot decide it: keep the reason
        return dataclasses.replace(result, reason=f"{result.reason}; {NO_HISTORY}")
    widen = math.exp(_job_noise_margin(confidence))
    lower, upper = result.ratio_lower / widen, result.ratio_upper * widen
    build = _ratio_result(
        result.ratio_estimate, lower, upper, result.n_baseline, result.n_candidate
    )
    return classify_ratio(build, lower, upper, limit, f"p{q * 100.0:g}", f"; {NO_HISTORY}")


def _single_run_test(
    baseline: LogQuantile, candidate: LogQuantile, limit: float, confidence: float, q: float
) -> RatioResult:
    """One stored run: the two runs' sampling errors and each run's assumed job noise."""
    variance = candidate.standard_error**2 + baseline.standard_error**2 + 2 * JOB_NOISE**2
    difference = candidate.log_estimate - baseline.log_estimate
    margin = _normal((1.0 - confidence) / 2.0) * math.sqrt(variance)
    lower, upper = math.exp(difference - margin), math.exp(difference + margin)
    build = _ratio_result(math.exp(difference), lower, upper, baseline.n, candidate.n)
    return classify_ratio(build, lower, upper, limit, f"p{q * 100.0:g}", f"; {NO_HISTORY}")


def _history_test(
    history: Sequence[Series],
    candidate: Series,
    candidate_dependence: Dependence,
    limit: float,
    confidence: float,
    q: float,
) -> RatioResult:
    """k >= 2 stored runs: the candidate is one more run, so its own job noise counts.

    With k stored log quantiles of sample variance S² (their sampling error and the
    job-to-job noise together), a new run of the same build differs from their mean by
    a Student's t with k - 1 degrees of freedom times S·sqrt(1 + 1/k): the prediction
    interval. Nothing is clamped, and no variance is taken as known.
    """
    from scipy.stats import t

    k = len(history)
    pname = f"p{q * 100.0:g}"
    estimates = [percentile(run.values, q * 100.0) for run in history]
    candidate_estimate = percentile(candidate.values, q * 100.0)
    finite = [*estimates, candidate_estimate]
    if not all(0.0 < value < math.inf for value in finite):
        return _history_union_bounds(history, candidate, limit, confidence, q)
    logs = np.log(np.array(estimates))
    scatter = float(logs.var(ddof=1))
    floor, extra = _sampling_floor(history, candidate, candidate_dependence, q)
    # Never narrower than the runs' own sampling error: S² can come out small by chance.
    spread = max(scatter, floor)
    variance = spread * (1.0 + 1.0 / k) + extra
    difference = math.log(candidate_estimate) - float(logs.mean())
    margin = float(t.ppf(1.0 - (1.0 - confidence) / 2.0, k - 1)) * math.sqrt(variance)
    lower, upper = math.exp(difference - margin), math.exp(difference + margin)
    baseline_n = sum(run.n for run in history)
    build = _ratio_result(math.exp(difference), lower, upper, baseline_n, candidate.n)
    noise = math.sqrt(max(0.0, scatter - floor))
    note = (
        f"; run-to-run spread {math.sqrt(scatter):.1%} over {k} stored runs (job noise about"
        f" {noise:.1%}), Student's t at {k - 1} degrees of freedom"
    )
    return classify_ratio(build, lower, upper, limit, pname, note)


def _sampling_floor(
    history: Sequence[Series], candidate: Series, candidate_dependence: Dependence, q: float
) -> tuple[float, float]:
    """(mean sampling variance of a stored run's log quantile, the candidate's excess).

    Both 0 where a standard error cannot be had (too few effective samples): the
    prediction interval then rests on the runs' scatter alone, as it does by itself.
    """
    stored = [log_quantile(run, q, series_dependence(run, q)) for run in history]
    own = log_quantile(candidate, q, candidate_dependence)
    if own is None or any(run is None for run in stored):
        return 0.0, 0.0
    floor = float(np.mean([run.standard_error**2 for run in stored if run is not None]))
    return floor, max(0.0, own.standard_error**2 - floor)


def _history_union_bounds(
    history: Sequence[Series], candidate: Series, limit: float, confidence: float, q: float
) -> RatioResult:
    """Failed requests reach a quantile: exact bounds, the baseline's spanning every run.

    The baseline interval is the hull of the stored runs' intervals (each at the
    per-sample confidence), so the spread between runs widens it; the candidate's own
    job noise is covered only as far as the stored runs show such spread.
    """
    side = per_sample_confidence(confidence)
    bounds = [correlated_quantile_bounds(run.values, q, side, run.episodes) for run in history]
    low = max(min(bound.lower for bound in bounds), 0.0)
    high = max(max(bound.upper for bound in bounds), 0.0)
    own = correlated_quantile_bounds(candidate.values, q, side, candidate.episodes)
    ratio_lower = _ratio(max(own.lower, 0.0), high, both_inf=0.0)
    ratio_upper = _ratio(max(own.upper, 0.0), low, both_inf=math.inf)
    pooled = np.concatenate([run.values for run in history])
    estimate = _ratio(
        percentile(candidate.values, q * 100.0), percentile(pooled, q * 100.0), math.nan
    )
    build = _ratio_result(
        estimate, ratio_lower, ratio_upper, sum(run.n for run in history), candidate.n
    )
    note = f"; failed requests reach the p{q * 100.0:g}: exact bounds over {len(history)} runs"
    return classify_ratio(build, ratio_lower, ratio_upper, limit, f"p{q * 100.0:g}", note)


def _normal(tail: float) -> float:
    from scipy.stats import norm

    return float(norm.isf(tail))
