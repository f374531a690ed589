"""Relative verdicts: a candidate against a baseline, without flaking.

Two designs, both deciding ``pass`` / ``fail`` / ``inconclusive`` on a *ratio*
(candidate / baseline) against ``1 + max_regression``:

* :func:`compare_quantiles` compares two independent samples (a stored baseline and a new
  run). Each quantile gets a distribution-free order-statistic interval at its effective
  n, at a per-sample confidence chosen so both intervals hold together with probability
  >= ``confidence`` (Bonferroni); the ratio interval is [cand_lower / base_upper,
  cand_upper / base_lower]. It is exact and conservative; with enough samples the
  log-ratio test of :mod:`.stored` has far more power and is used instead. An optional
  ``floor_s`` (default 0: no hidden floor) also requires an absolute excess to fail.
* :func:`compare_blocks` compares paired block statistics from one job, run in ABBA order
  (:func:`abba_order`): the per-pair log ratios get a confidence interval for their median
  by the sign test (distribution-free), or optionally for their centre of symmetry by the
  Wilcoxon signed-rank test (Hodges-Lehmann; valid when A and B blocks differ, apart
  from the effect, only by exchangeable noise).

The fail side of either interval errs with probability at most (1 - confidence) / 2, as for
absolute objectives. See docs/statistics.md for the sample sizes and measured rates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

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
# Above this many pairs the exact signed-rank distribution gets costly; the sign test has
# ample power there anyway, so compare_blocks falls back to it.
MAX_SIGNED_RANK_PAIRS = 500

PairMethod = Literal["sign", "signed-rank"]


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


def compare_blocks(
    pairs: Sequence[tuple[float, float]],
    max_regression: float,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    method: PairMethod = "sign",
) -> RatioResult:
    """Decide a regression from paired block statistics ``(baseline, candidate)``.

    Each pair comes from adjacent A/B blocks of one job (see :func:`abba_order`), e.g. each
    block's p95 TTFT. The interval is for the median per-pair ratio (``method="sign"``,
    distribution-free) or the Hodges-Lehmann centre of the log ratios
    (``method="signed-rank"``: more power, assumes the log ratios are symmetric about their
    centre, which exchangeable A/B noise gives). fail: lower bound > ``1 + max_regression``;
    pass: upper bound <= it. No magnitude floor: interleaved blocks share the machine and
    its drift, so a relative change measured this way is real (see docs/statistics.md).
    At 99% a decision needs at least :func:`pairs_needed` (8) pairs.
    """
    if max_regression < 0.0:
        raise ValueError(f"max_regression must be >= 0, got {max_regression!r}")
    if method not in ("sign", "signed-rank"):
        raise ValueError(f"method must be 'sign' or 'signed-rank', got {method!r}")
    logs, dropped = _log_ratios(pairs)
    k = int(logs.size)
    limit = 1.0 + max_regression
    notes = [f"{dropped} pair(s) with both blocks infinite ignored"] if dropped else []
    used = method
    if method == "signed-rank" and not np.isfinite(logs).all():
        used = "sign"
        notes.append("infinite block statistics: used the sign test")
    elif method == "signed-rank" and k > MAX_SIGNED_RANK_PAIRS:
        used = "sign"
        notes.append(f"more than {MAX_SIGNED_RANK_PAIRS} pairs: used the sign test")

    if used == "sign":
        centre = _median(logs)
        lower_rank, upper_rank = bound_ranks(k, 0.5, confidence) if k else (None, None)
        ordered = logs
    else:
        ordered = walsh_averages(logs)
        centre = _median(ordered)
        lower_rank, upper_rank = signed_rank_ranks(k, confidence)
    log_lo = -math.inf if lower_rank is None else float(ordered[lower_rank - 1])
    log_up = math.inf if upper_rank is None else float(ordered[upper_rank - 1])
    result = _ratio_result(_exp(centre), _exp(log_lo), _exp(log_up), k, k)
    suffix = "".join(f"; {note}" for note in notes)

    if lower_rank is None or upper_rank is None:
        return result(
            Verdict.INCONCLUSIVE,
            f"too few pairs: {k}, at least {pairs_needed(confidence)} needed at"
            f" {confidence:.3g}{suffix}",
        )
    return classify_ratio(result, _exp(log_lo), _exp(log_up), limit, "", suffix)


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


def pairs_needed(confidence: float = DEFAULT_CONFIDENCE) -> int:
    """Fewest pairs for which a two-sided interval exists: 2 * 0.5**k <= 1 - confidence.

    The same for the sign and the signed-rank test (both extremes have probability 2**-k).
    """
    tail = (1.0 - confidence) / 2.0
    return math.ceil(math.log(tail) / math.log(0.5) - 1e-12)


def abba_order(blocks: int) -> list[str]:
    """Block order "A B B A A B B A ...": cancels linear drift within every four blocks."""
    if blocks <= 0 or blocks % 4:
        raise ValueError(f"blocks must be a positive multiple of 4, got {blocks!r}")
    return ["A", "B", "B", "A"] * (blocks // 4)


def abba_pairs(statistics: Sequence[float]) -> list[tuple[float, float]]:
    """Pair per-block statistics run in :func:`abba_order` as (baseline, candidate)."""
    order = abba_order(len(statistics))
    pairs: list[tuple[float, float]] = []
    for i in range(0, len(order), 2):
        first, second = statistics[i], statistics[i + 1]
        pairs.append((first, second) if order[i] == "A" else (second, first))
    return pairs


def abba_groups(statistics: Sequence[float]) -> list[tuple[float, float]]:
    """One (baseline, candidate) pair per group of four ABBA blocks: ``A1 B2 B3 A4``.

    The pair is (sqrt(A1 * A4), sqrt(B2 * B3)): geometric means, so a linear drift in the
    log statistic (the same step from block to block) cancels in the log ratio.
    """
    order = abba_order(len(statistics))
    pairs: list[tuple[float, float]] = []
    for start in range(0, len(order), 4):
        a1, b2, b3, a4 = statistics[start : start + 4]
        pairs.append((math.sqrt(a1 * a4), math.sqrt(b2 * b3)))
    return pairs


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


def walsh_averages(values: np.ndarray) -> np.ndarray:
    """Sorted pairwise means (x_i + x_j) / 2 for i <= j (n(n+1)/2 of them)."""
    i, j = np.triu_indices(int(values.size))
    return np.sort((values[i] + values[j]) / 2.0)


def signed_rank_ranks(n: int, confidence: float) -> tuple[int | None, int | None]:
    """1-based ranks into the sorted Walsh averages bounding the centre of symmetry.

    Like :func:`bound_ranks` for the signed-rank statistic T (exact null distribution):
    lower = c + 1 with c the largest value where P(T <= c) <= (1 - confidence) / 2, upper
    = N - c with N = n(n+1)/2. None where the interval does not exist (n < 8 at 99%).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if n <= 0:
        return None, None
    tail = (1.0 - confidence) / 2.0
    cdf = _signed_rank_cdf(n)
    c = int(np.searchsorted(cdf, tail * (1.0 + 1e-12), side="right")) - 1
    if c < 0:
        return None, None
    total = n * (n + 1) // 2
    return c + 1, total - c


@lru_cache(maxsize=64)
def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(T <= t) for t = 0..n(n+1)/2, T the Wilcoxon signed-rank statistic of n values."""
    probs = np.zeros(n * (n + 1) // 2 + 1)
    probs[0] = 1.0
    for rank in range(1, n + 1):
        shifted = np.zeros_like(probs)
        shifted[rank:] = probs[:-rank]
        probs = (probs + shifted) / 2.0
    cdf = np.cumsum(probs)
    cdf.flags.writeable = False
    return cdf


def _latencies(samples: np.ndarray | Sequence[float], name: str) -> np.ndarray:
    values = np.asarray(samples, dtype=np.float64).ravel()
    if np.isnan(values).any():
        raise ValueError(f"{name} samples contain NaN")
    if (values < 0.0).any():
        raise ValueError(f"{name} samples contain negative latencies")
    return values


def _log_ratios(pairs: Sequence[tuple[float, float]]) -> tuple[np.ndarray, int]:
    """Sorted log(candidate / baseline) per pair, and how many both-infinite pairs were dropped."""
    arr = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
    if np.isnan(arr).any() or (arr <= 0.0).any():
        raise ValueError("block statistics must be positive numbers (inf allowed)")
    both_inf = np.isinf(arr).all(axis=1)
    kept = arr[~both_inf]
    return np.sort(np.log(kept[:, 1]) - np.log(kept[:, 0])), int(both_inf.sum())


def _ratio(num: float, den: float, both_inf: float) -> float:
    if math.isnan(num) or math.isnan(den):
        return math.nan
    if math.isinf(num) and math.isinf(den):
        return both_inf
    if den == 0.0:
        return 1.0 if num == 0.0 else math.inf
    return num / den


def _median(values: np.ndarray) -> float:
    if values.size == 0:
        return math.nan
    with np.errstate(invalid="ignore"):
        return float(np.median(values))


def _exp(value: float) -> float:
    """exp mapping -inf to 0, inf to inf, and overflow to inf (math.exp would raise)."""
    with np.errstate(over="ignore"):
        return float(np.exp(value))


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
