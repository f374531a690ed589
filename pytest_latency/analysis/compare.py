"""Relative verdicts: a candidate against a baseline, without flaking.

Two designs, both deciding ``pass`` / ``fail`` / ``inconclusive`` on a *ratio*
(candidate / baseline) against ``1 + max_regression``, both returning a
:class:`RatioResult` (:func:`classify_ratio` words the verdict):

* :func:`compare_quantiles`, here, compares two independent samples (a stored baseline and
  a new run). Each quantile gets a distribution-free order-statistic interval at its
  effective n, at a per-sample confidence chosen so both intervals hold together with
  probability >= ``confidence`` (Bonferroni); the ratio interval is [cand_lower /
  base_upper, cand_upper / base_lower]. It is exact and conservative; with enough samples
  the log-ratio test of :mod:`.stored` has far more power and is used instead. An
  optional ``floor_s`` (default 0: no hidden floor) also requires an absolute excess to
  fail.
* :func:`~.paired_blocks.compare_blocks` compares paired block statistics from one job,
  run in ABBA order (:mod:`.paired_blocks`).

The fail side of either interval errs with probability at most (1 - confidence) / 2, as for
absolute objectives. See docs/statistics.md for the sample sizes and measured rates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.percentiles import (
    DEFAULT_CONFIDENCE,
    bound_ranks,
    correlated_quantile_bounds,
    percentile,
)
from pytest_latency.analysis.verdict import Verdict

DEFAULT_FLOOR_S = 0.0
# Suggested threshold on :func:`mix_shift` above which a comparison deserves a warning.
MIX_SHIFT_WARNING = 0.1


@dataclass(frozen=True, slots=True)
class RatioResult:
    """A candidate-over-baseline ratio, its confidence interval, and the verdict."""

    verdict: Verdict
    ratio_estimate: float
    ratio_lower: float
    ratio_upper: float
    n_baseline: int
    n_candidate: int
    reason: str

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS


def per_sample_confidence(confidence: float) -> float:
    """Two-sided confidence for each of two intervals that must hold together."""
    return 1.0 - (1.0 - confidence) / 2.0


def compare_quantiles(
    baseline: np.ndarray,
    candidate: np.ndarray,
    q: float,
    max_regression: float,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    floor_s: float = DEFAULT_FLOOR_S,
) -> RatioResult:
    """Decide whether the candidate's q-quantile regressed past ``1 + max_regression``.

    ``baseline`` and ``candidate`` are independent latency samples in seconds; failed
    requests may appear as ``inf``. fail: the ratio's lower bound exceeds the limit *and*
    the candidate's lower bound exceeds the scaled baseline upper bound by > ``floor_s``.
    pass: the ratio's upper bound is within the limit, or the candidate's upper bound is
    at most ``floor_s`` above the baseline's lower bound. inconclusive otherwise.
    """
    if max_regression < 0.0:
        raise ValueError(f"max_regression must be >= 0, got {max_regression!r}")
    if floor_s < 0.0:
        raise ValueError(f"floor_s must be >= 0, got {floor_s!r}")
    base = _latencies(baseline, "baseline")
    cand = _latencies(candidate, "candidate")
    n_b, n_c = int(base.size), int(cand.size)
    limit = 1.0 + max_regression
    side_conf = per_sample_confidence(confidence)
    # Bounds on latencies are never below 0 (a missing lower bound is -inf).
    base_bounds = correlated_quantile_bounds(base, q, side_conf)
    cand_bounds = correlated_quantile_bounds(cand, q, side_conf)
    b_lo, b_up = max(base_bounds.lower, 0.0), max(base_bounds.upper, 0.0)
    c_lo, c_up = max(cand_bounds.lower, 0.0), max(cand_bounds.upper, 0.0)
    # Both infinite: for the lower ratio that is "cannot fail", for the upper "cannot pass".
    ratio_lower = _ratio(c_lo, b_up, both_inf=0.0)
    ratio_upper = _ratio(c_up, b_lo, both_inf=math.inf)
    estimate = _ratio(percentile(cand, q * 100.0), percentile(base, q * 100.0), math.nan)
    result = _ratio_result(estimate, ratio_lower, ratio_upper, n_b, n_c)
    pname = f"p{q * 100.0:g}"

    if n_b == 0 or n_c == 0:
        return result(Verdict.INCONCLUSIVE, f"no samples (baseline n={n_b}, candidate n={n_c})")
    if math.isfinite(b_up) and ratio_lower > limit:
        excess = c_lo - b_up * limit
        if excess > floor_s:
            floor = (
                f" (excess {_fmt_s(excess)} over the {_fmt_s(floor_s)} floor)" if floor_s else ""
            )
            return result(
                Verdict.FAIL, f"{pname} ratio lower bound {ratio_lower:.3g} > {limit:.3g}{floor}"
            )
    if ratio_upper <= limit:
        return result(Verdict.PASS, f"{pname} ratio upper bound {ratio_upper:.3g} <= {limit:.3g}")
    if floor_s > 0.0 and c_up - b_lo <= floor_s:
        return result(
            Verdict.PASS,
            f"{pname} can have grown by at most {_fmt_s(c_up - b_lo)}"
            f" (within the {_fmt_s(floor_s)} floor)",
        )
    why = _why_inconclusive(base, cand, q, side_conf, limit, ratio_lower, ratio_upper, floor_s)
    return result(Verdict.INCONCLUSIVE, why)


def classify_ratio(
    build: Callable[[Verdict, str], RatioResult],
    lower: float,
    upper: float,
    limit: float,
    name: str = "",
    suffix: str = "",
) -> RatioResult:
    """fail above the limit, pass within it, inconclusive across it, with the reason."""
    what = f"{name} ratio" if name else "ratio"
    if lower > limit:
        return build(Verdict.FAIL, f"{what} lower bound {lower:.3g} > {limit:.3g}{suffix}")
    if upper <= limit:
        return build(Verdict.PASS, f"{what} upper bound {upper:.3g} <= {limit:.3g}{suffix}")
    return build(
        Verdict.INCONCLUSIVE,
        f"the {what} interval [{lower:.3g}, {upper:.3g}] straddles {limit:.3g}{suffix}",
    )


def mix_shift(baseline_counts: Mapping[str, int], candidate_counts: Mapping[str, int]) -> float:
    """Total-variation distance (0..1) between two cohort mixes given as counts.

    0 means identical proportions, 1 disjoint cohorts. Two empty mixes are 0 apart, one
    empty mix is 1 from anything. :data:`MIX_SHIFT_WARNING` (0.1) is a suggested threshold.
    """
    for counts in (baseline_counts, candidate_counts):
        if any(count < 0 for count in counts.values()):
            raise ValueError("cohort counts must be >= 0")
    total_b = sum(baseline_counts.values())
    total_c = sum(candidate_counts.values())
    if total_b == 0 or total_c == 0:
        return 0.0 if total_b == total_c else 1.0
    keys = set(baseline_counts) | set(candidate_counts)
    distance = 0.5 * sum(
        abs(baseline_counts.get(key, 0) / total_b - candidate_counts.get(key, 0) / total_c)
        for key in keys
    )
    return min(max(distance, 0.0), 1.0)


def _latencies(samples: np.ndarray | Sequence[float], name: str) -> np.ndarray:
    values = np.asarray(samples, dtype=np.float64).ravel()
    if np.isnan(values).any():
        raise ValueError(f"{name} samples contain NaN")
    if (values < 0.0).any():
        raise ValueError(f"{name} samples contain negative latencies")
    return values


def _ratio(num: float, den: float, both_inf: float) -> float:
    if math.isnan(num) or math.isnan(den):
        return math.nan
    if math.isinf(num) and math.isinf(den):
        return both_inf
    if den == 0.0:
        return 1.0 if num == 0.0 else math.inf
    return num / den


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1000.0:.3g} ms"


def _ratio_result(
    estimate: float, lower: float, upper: float, n_b: int, n_c: int
) -> Callable[[Verdict, str], RatioResult]:
    """Bind a RatioResult's numbers so each branch only gives its verdict and reason."""

    def build(verdict: Verdict, reason: str) -> RatioResult:
        return RatioResult(verdict, estimate, lower, upper, n_b, n_c, reason)

    return build


def _why_inconclusive(
    base: np.ndarray,
    cand: np.ndarray,
    q: float,
    side_conf: float,
    limit: float,
    ratio_lower: float,
    ratio_upper: float,
    floor_s: float,
) -> str:
    pname = f"p{q * 100.0:g}"
    missing = [
        f"{name} n={values.size}"
        for name, values in (("baseline", base), ("candidate", cand))
        if None in bound_ranks(int(values.size), q, side_conf)
    ]
    if missing:
        needed = _samples_needed(q, side_conf)
        return f"too few samples for {pname} bounds ({', '.join(missing)}; {needed}+ needed each)"
    failed = [
        name for name, values in (("baseline", base), ("candidate", cand)) if np.isinf(values).any()
    ]
    if failed and (math.isinf(ratio_upper) or ratio_lower == 0.0):
        return f"failed requests (inf) in the {' and '.join(failed)} reach the {pname} bounds"
    if ratio_lower > limit:
        return (
            f"{pname} ratio lower bound {ratio_lower:.3g} > {limit:.3g}, but the excess is"
            f" within the {_fmt_s(floor_s)} floor"
        )
    return (
        f"the {pname} ratio interval [{ratio_lower:.3g}, {ratio_upper:.3g}] straddles {limit:.3g}"
    )


def _samples_needed(q: float, two_sided_confidence: float) -> int:
    tail = (1.0 - two_sided_confidence) / 2.0
    return math.ceil(math.log(tail) / math.log(max(q, 1.0 - q)) - 1e-12)
