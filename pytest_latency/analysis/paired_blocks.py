"""Paired, interleaved blocks: a candidate against a baseline run in one job.

Baseline (A) and candidate (B) blocks run in ABBA order (:func:`abba_order`), so both share
the machine and its drift; :func:`compare_blocks` decides on the per-pair log ratios with
a confidence interval for their median by the sign test (distribution-free), or optionally
for their centre of symmetry by the Wilcoxon signed-rank test (Hodges-Lehmann; valid when
A and B blocks differ, apart from the effect, only by exchangeable noise). The verdict is
a :class:`~.compare.RatioResult`, worded as :mod:`.compare` words the stored comparison's.
See docs/statistics.md ("Paired, interleaved blocks") for the rates measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import numpy as np

from pytest_latency.analysis.compare import RatioResult, _ratio_result, classify_ratio
from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE, bound_ranks
from pytest_latency.analysis.verdict import Verdict

# Above this many pairs the exact signed-rank distribution gets costly; the sign test has
# ample power there anyway, so compare_blocks falls back to it.
MAX_SIGNED_RANK_PAIRS = 500

PairMethod = Literal["sign", "signed-rank"]


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


def _log_ratios(pairs: Sequence[tuple[float, float]]) -> tuple[np.ndarray, int]:
    """Sorted log(candidate / baseline) per pair, and how many both-infinite pairs were dropped."""
    arr = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
    if np.isnan(arr).any() or (arr <= 0.0).any():
        raise ValueError("block statistics must be positive numbers (inf allowed)")
    both_inf = np.isinf(arr).all(axis=1)
    kept = arr[~both_inf]
    return np.sort(np.log(kept[:, 1]) - np.log(kept[:, 0])), int(both_inf.sum())


def _median(values: np.ndarray) -> float:
    if values.size == 0:
        return math.nan
    with np.errstate(invalid="ignore"):
        return float(np.median(values))


def _exp(value: float) -> float:
    """exp mapping -inf to 0, inf to inf, and overflow to inf (math.exp would raise)."""
    with np.errstate(over="ignore"):
        return float(np.exp(value))
