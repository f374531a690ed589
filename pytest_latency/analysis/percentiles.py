"""Percentiles and their distribution-free confidence bounds.

Bounds come from order statistics: for the sorted sample x(1) <= ... <= x(n), the
number of observations below the true q-quantile is Binomial(n, q), so
P(x(l) <= true quantile) = P(Binom(n, q) >= l). No distribution is assumed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.dependence import Dependence, count_dependence, independent

DEFAULT_CONFIDENCE = 0.99
# Above this size, order statistics are found inside a bracket read off a sample (exact;
# see order_statistics). Below it a plain partition is as fast.
BRACKETED_SELECTION_MIN = 4_000_000
_BRACKET_SAMPLE = 100_000


def order_statistics(values: np.ndarray, ranks: Sequence[int]) -> dict[int, float]:
    """The values at 0-based ``ranks`` of ``values`` sorted ascending, exactly.

    A partition of tens of millions of pooled gaps at six ranks costs over a second.
    For large arrays each rank is first bracketed by a seeded sample's quantiles: one
    comparison pass counts the values below the bracket and keeps those inside it, and
    only that small slice is partitioned. The counts prove the rank lies inside; if a
    (rare) sample misses, the plain partition is used. The answer never depends on the
    sample, only the time does.
    """
    wanted = sorted(set(ranks))
    n = int(values.size)
    found: dict[int, float] = {}
    if n >= BRACKETED_SELECTION_MIN:
        sample = np.sort(values[np.random.default_rng(0).integers(0, n, _BRACKET_SAMPLE)])
        last = _BRACKET_SAMPLE - 1
        for rank in wanted:
            if rank in found:
                continue
            q = rank / (n - 1)
            # Six standard errors of a sample quantile each side, plus a little.
            margin = 6.0 * math.sqrt(q * (1.0 - q) / _BRACKET_SAMPLE) + 20.0 / _BRACKET_SAMPLE
            low = sample[max(0, math.floor((q - margin) * last))]
            high = sample[min(last, math.ceil((q + margin) * last))]
            selected = values >= low  # two comparison passes over the array, no more
            below = n - int(np.count_nonzero(selected))  # callers never pass NaN
            np.logical_and(selected, values <= high, out=selected)
            inside = values[selected]
            served = [r for r in wanted if below <= r < below + inside.size and r not in found]
            if rank not in served:
                break  # the sample missed: fall back below
            ordered = np.partition(inside, [r - below for r in served])
            found.update((r, float(ordered[r - below])) for r in served)
    missing = [rank for rank in wanted if rank not in found]
    if missing:
        ordered = np.partition(values, missing)
        found.update((rank, float(ordered[rank])) for rank in missing)
    return found


def percentile(samples: Sequence[float] | np.ndarray, p: float) -> float:
    """The p-th percentile (0-100) by linear interpolation, NaN for no samples."""
    return percentiles(samples, (p,))[0]


def percentiles(samples: Sequence[float] | np.ndarray, ps: Sequence[float]) -> list[float]:
    """Several percentiles (0-100) of one sample, numpy's default (linear) definition.

    One O(n) partition at the needed order statistics instead of a sort: a run's pooled
    inter-token gaps can be tens of millions of values.
    """
    values = np.asarray(samples, dtype=np.float64)
    n = int(values.size)
    if n == 0:
        return [math.nan] * len(ps)
    positions = [(n - 1) * p / 100.0 for p in ps]
    below = [math.floor(position) for position in positions]
    ordered = order_statistics(values, [*below, *(min(rank + 1, n - 1) for rank in below)])
    results = []
    for position, low in zip(positions, below, strict=True):
        lower = ordered[low]
        upper = ordered[min(low + 1, n - 1)]
        fraction = position - low
        # Failed requests enter some samples as inf: inf - inf would give NaN.
        same = upper == lower or fraction == 0
        results.append(lower if same else lower + (upper - lower) * fraction)
    return results


def bound_ranks(n: int, q: float, confidence: float) -> tuple[int | None, int | None]:
    """1-based ranks (lower, upper) of the order statistics bounding the q-quantile.

    The interval is two-sided at ``confidence``: each side misses with probability at most
    (1 - confidence) / 2. A side is None when ``n`` is too small for that bound to exist.
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must lie in (0, 1), got {q!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if n <= 0:
        return None, None
    from scipy.stats import binom  # scipy loads on first verdict, not at plugin import

    tail = (1.0 - confidence) / 2.0
    # Lower rank l: the largest l with P(Binom <= l - 1) <= tail.
    k = int(binom.ppf(tail, n, q))  # smallest k with cdf(k) >= tail
    while k >= 0 and binom.cdf(k, n, q) > tail:
        k -= 1
    while k + 1 < n and binom.cdf(k + 1, n, q) <= tail:
        k += 1
    lower = k + 1 if k >= 0 else None
    # Upper rank u: the smallest u with P(Binom <= u - 1) >= 1 - tail.
    j = int(binom.ppf(1.0 - tail, n, q))
    while j > 0 and binom.cdf(j - 1, n, q) >= 1.0 - tail:
        j -= 1
    while binom.cdf(j, n, q) < 1.0 - tail:
        j += 1
    upper = j + 1 if j + 1 <= n else None
    return lower, upper


def quantile_bounds(
    samples: Sequence[float] | np.ndarray, q: float, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float]:
    """Distribution-free two-sided bounds (lower, upper) on the q-quantile (q in (0, 1)).

    ``upper`` is ``inf`` (and ``lower`` is ``-inf``) when the sample is too small for that
    bound to exist: it is never silently the sample maximum. A one-sided bound at
    confidence c needs n >= log(1 - c) / log(q) samples: a p95 upper bound at 95% needs
    59, a p99 needs 299, a p99.9 needs 2995.
    """
    values = np.asarray(samples, dtype=np.float64)
    if values.size and np.isnan(values).any():
        raise ValueError("samples contain NaN")
    lower_rank, upper_rank = bound_ranks(int(values.size), q, confidence)
    ranks = [rank - 1 for rank in (lower_rank, upper_rank) if rank is not None]
    # Only two order statistics are needed: O(n), not a sort's O(n log n).
    ordered = order_statistics(values, ranks)
    lower = -math.inf if lower_rank is None else ordered[lower_rank - 1]
    upper = math.inf if upper_rank is None else ordered[upper_rank - 1]
    return lower, upper


@dataclass(frozen=True, slots=True)
class QuantileBounds:
    """Bounds on a quantile of correlated samples, and the correlation they paid for."""

    lower: float
    upper: float
    dependence: Dependence


def adjusted_confidence(confidence: float, dependence: Dependence) -> float:
    """The normal-theory confidence whose critical value is Student's t at the estimate's df.

    An estimated design effect is itself uncertain; t with the estimate's degrees of
    freedom widens the bound for that, as a t interval does for an estimated variance.
    """
    if math.isinf(dependence.degrees_of_freedom):
        return confidence
    from scipy.stats import norm, t

    tail = (1.0 - confidence) / 2.0
    critical = float(t.ppf(1.0 - tail, max(dependence.degrees_of_freedom, 1.0)))
    return float(1.0 - 2.0 * norm.sf(critical))


def dependent_ranks(
    n: int, q: float, confidence: float, dependence: Dependence
) -> tuple[int | None, int | None]:
    """Ranks like :func:`bound_ranks`, for samples with a design effect.

    The exact ranks of ``n / D`` independent samples, scaled back to ``n``: the bound
    sits at the same *fraction* of the sample as it would for the effective n, rounded
    outwards. With ``D = 1`` these are exactly :func:`bound_ranks`' ranks.
    """
    if dependence.independent or n <= 0 or not 0.0 < q < 1.0:
        return bound_ranks(n, q, confidence)  # which also refuses a q outside (0, 1)
    effective = math.floor(n / dependence.design_effect)
    adjusted = adjusted_confidence(confidence, dependence)
    lower: int | None = None
    upper: int | None = None
    if effective >= 1 and adjusted < 1.0:  # else so few df that no rank is far enough
        lower, upper = bound_ranks(effective, q, adjusted)
        scale = n / effective
        lower = None if lower is None else max(1, math.floor(lower * scale))
        upper = None if upper is None else min(n, math.ceil(upper * scale))
    if lower is None and _minimum_bounds(n / dependence.design_effect, q, confidence, dependence):
        lower = 1
    return lower, upper


def _minimum_bounds(effective: float, q: float, confidence: float, dependence: Dependence) -> bool:
    """Whether the sample minimum is a lower bound of the q-quantile at ``confidence``.

    It is not one only if every one of the ``effective`` independent units lies above
    the quantile: chance ``(1 - q) ** effective``. Unlike the ranks above this needs no
    whole number of units, and the side's error is taken from Student's t directly, so
    a handful of effective requests far over a limit still bound it from below.
    """
    from scipy.stats import norm, t

    tail = (1.0 - confidence) / 2.0
    if not math.isinf(dependence.degrees_of_freedom):
        critical = float(t.ppf(1.0 - tail, max(dependence.degrees_of_freedom, 1.0)))
        tail = float(norm.sf(critical))
    if tail <= 0.0:  # an early look's confidence so high that the tail underflows
        return False
    return effective > 0.0 and effective * math.log1p(-q) <= math.log(tail)


def quantile_dependence(
    values: np.ndarray,
    q: float,
    episodes: np.ndarray | None = None,
    phases: np.ndarray | None = None,
) -> Dependence:
    """The design effect of the count of ``values`` under their sample q-quantile."""
    n = int(values.size)
    if n == 0:
        return independent(0)
    rank = min(n - 1, max(0, math.ceil(q * n) - 1))
    level = order_statistics(values, [rank])[rank]
    return count_dependence(values <= level, episodes, values, phases)


def correlated_quantile_bounds(
    values: np.ndarray,
    q: float,
    confidence: float = DEFAULT_CONFIDENCE,
    episodes: np.ndarray | None = None,
    phases: np.ndarray | None = None,
) -> QuantileBounds:
    """Bounds on the q-quantile of per-request ``values`` given in send order.

    The count of values under the quantile is what the order-statistic bound rests on;
    its design effect is estimated from the data (:mod:`.dependence`), at the sample
    quantile, by episodes when ``episodes`` holds several, else within each of ``phases``
    (planned strata). Independent data get exactly :func:`quantile_bounds`.
    """
    samples = np.asarray(values, dtype=np.float64)
    n = int(samples.size)
    if n == 0:
        return QuantileBounds(-math.inf, math.inf, independent(0))
    if np.isnan(samples).any():
        raise ValueError("samples contain NaN")
    dependence = quantile_dependence(samples, q, episodes, phases)
    lower_rank, upper_rank = dependent_ranks(n, q, confidence, dependence)
    wanted = [r - 1 for r in (lower_rank, upper_rank) if r is not None]
    ordered = order_statistics(samples, wanted)
    return QuantileBounds(
        -math.inf if lower_rank is None else ordered[lower_rank - 1],
        math.inf if upper_rank is None else ordered[upper_rank - 1],
        dependence,
    )
