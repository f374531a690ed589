"""Sectioning: bounds on a quantile that use the margin between estimate and limit.

The order-statistic bound of :mod:`.percentiles` rests on a count at the effective n,
so it needs about 104 effective requests for a p95 upper bound at 99% whatever the
margin: a run of 240 queued requests (effective n 20-50) never passes, 40x under its
limit. Sectioning (Asmussen & Glynn 2007, ch. IV.5; Nakayama 2014) uses the margin:

* the scope's values, in send order, are cut into ``b`` contiguous batches;
* each batch's q-quantile is taken on a log scale (latencies are positive and skewed);
* the spread ``S`` of the batch log-quantiles around the **whole-run** log-quantile,
  with ``b - 1`` degrees of freedom, gives the bound
  ``exp(log Q + c * S / sqrt(b))`` (and ``- c`` for the lower one).

Assumptions, and what they cost (docs/statistics.md, measured): the batches are
nearly independent (the correlation fades within a batch) and the whole-run estimate
is nearly normal on the log scale. Neither holds for a short run of a heavily loaded
queue: a run that happened to meet few busy periods has both a low estimate and a low
spread, so a plain Student's t interval passed an M/M/1 queue at 0.9 at the truth in
20-30% of runs. Hence:

* the critical value is Student's t at ``b - 1`` degrees of freedom for the side's
  error, but never under :data:`MIN_CRITICAL`: calibrated by simulation so that the
  truth errs at most 2% a side over the tables in docs/statistics.md;
* the upper side (a PASS) is used only when the batches are at least as long as the
  send-order correlation window and there are at least :data:`MIN_FEW_BATCHES` of
  them; its half-width is at least the shape floor (:func:`shape_floor`, at
  :data:`SHAPE_FLOOR`, or :data:`SHAPE_FLOOR_MANY` from :data:`MIN_UPPER_BATCHES`
  batches on), which a lucky run of a heavy queue cannot shrink; a longer
  correlation leaves the order-statistic bound alone;
* when that window reached its cap (an eighth of the run: the run never saw its
  correlation fade, as in 240 requests of a queue at 0.9) the upper side is not used,
  and the lower side's critical value is at least :data:`MIN_CRITICAL_CAPPED` (at 6 it
  failed 2.7% of such runs at the truth). That side is what fails an overload: a queue
  1.1x over its capacity for two minutes is one long transient, whose in-flight trend
  is buried in the queue's own noise but whose every batch p95 is far over its limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.dependence import MAX_WINDOW_SHARE, Dependence
from pytest_latency.analysis.percentiles import (
    QuantileBounds,
    bound_ranks,
    correlated_quantile_bounds,
    order_statistics,
)

MAX_BATCHES = 24
MIN_BATCH = 10  # requests per batch: a batch p95 of fewer is its maximum
MIN_LOWER_BATCHES = 8
MIN_UPPER_BATCHES = 20  # the upper side on the batches' spread alone
MIN_FEW_BATCHES = 12  # fewer batches (down to this) need the shape floor as well
# The fewest requests each side can be taken from (batches of at least MIN_BATCH).
MIN_LOWER_REQUESTS = MIN_LOWER_BATCHES * MIN_BATCH
MIN_UPPER_REQUESTS = MIN_FEW_BATCHES * MIN_BATCH
SHAPE_FLOOR = 3.0  # the shape floor's factor (calibrated)
SHAPE_FLOOR_MANY = 2.5  # its factor from MIN_UPPER_BATCHES batches on
MIN_CRITICAL = 6.0  # the floor under either side's critical value (calibrated)
# The floor under the lower side's when the send-order window reached its cap (calibrated:
# M/M/1 at 0.9-0.95 over 240 requests FAILs at most 1.8% at the truth; a queue 1.1x over
# its capacity for 120 s, whose run never sees its correlation fade, FAILs 93%).
MIN_CRITICAL_CAPPED = 10.0


@dataclass(frozen=True, slots=True)
class SectionBounds:
    """Sectioning bounds on a quantile (``-inf`` / ``inf`` where a side is not used)."""

    lower: float
    upper: float
    lower_batches: int  # 0: the side was not used
    upper_batches: int
    # The independent sample whose normal interval on the log quantile is as wide as the
    # lower side's: n times the iid variance over sectioning's, at their critical values.
    n_effective: float


NO_SECTIONS = SectionBounds(-math.inf, math.inf, 0, 0, math.nan)


def batch_spread(logs: np.ndarray, q: float, estimate: float, batches: int) -> float:
    """The spread of the batches' log q-quantiles around the whole-run ``estimate``."""
    size = logs.size // batches
    quantiles = np.quantile(logs[: size * batches].reshape(batches, size), q, axis=1)
    return float(np.sqrt(((quantiles - estimate) ** 2).sum() / (batches - 1)))


def critical_value(confidence: float, batches: int, floor: float) -> float:
    """Student's t at ``batches - 1`` df for one side of ``confidence``, at least ``floor``."""
    from scipy.stats import t

    tail = (1.0 - confidence) / 2.0
    return max(float(t.ppf(1.0 - tail, batches - 1)), floor)


def section_bounds(values: np.ndarray, q: float, confidence: float, window: int) -> SectionBounds:
    """Sectioning bounds on the q-quantile of ``values`` (send order) at ``confidence``
    (two-sided). ``window``: the send-order correlation window of :mod:`.dependence`
    (lags summed); the upper side needs batches at least that long. No sides where a
    value is not positive and finite (failed requests are ``inf``, a zero wait has no
    log): the order-statistic bound decides those."""
    n = int(values.size)
    if n < MIN_LOWER_REQUESTS:
        return NO_SECTIONS  # too few requests
    lower_batches = min(MAX_BATCHES, n // MIN_BATCH)
    # A correlation the run does not see fade: no upper side, and a lower side only at
    # a wider critical value (an overload's estimate is far over any limit it fails).
    capped = window >= n * MAX_WINDOW_SHARE
    if not bool(np.all(np.isfinite(values) & (values > 0))):
        return NO_SECTIONS
    logs = np.log(values)
    estimate = float(np.quantile(logs, q))
    spread = batch_spread(logs, q, estimate, lower_batches)
    if spread <= 0.0:
        return NO_SECTIONS  # every batch at the same value: ties, no spread to scale
    floor = MIN_CRITICAL_CAPPED if capped else MIN_CRITICAL
    half = critical_value(confidence, lower_batches, floor) * spread
    lower = math.exp(estimate - half / math.sqrt(lower_batches))
    upper, upper_batches = (
        (math.inf, 0) if capped else _upper_side(logs, q, confidence, estimate, window)
    )
    # The size of an independent sample whose normal interval is as wide as this one.
    normal = critical_value(confidence, 10**9, 0.0)
    effective = n * _iid_variance(values, q) * (normal * math.sqrt(lower_batches) / half) ** 2
    return SectionBounds(lower, upper, lower_batches, upper_batches, min(effective, float(n)))


def _upper_side(
    logs: np.ndarray, q: float, confidence: float, estimate: float, window: int
) -> tuple[float, int]:
    """(upper bound, batches) of sectioning's upper side, or (inf, 0) where it is not used:
    batches at least as long as the send-order window, at least MIN_FEW_BATCHES of them;
    fewer than MIN_UPPER_BATCHES also need the half-width of :func:`shape_floor`."""
    batches = min(MAX_BATCHES, logs.size // max(MIN_BATCH, window))
    if batches < MIN_FEW_BATCHES:
        return math.inf, 0
    spread = batch_spread(logs, q, estimate, batches)
    if spread <= 0.0:
        return math.inf, 0
    half = critical_value(confidence, batches, MIN_CRITICAL) * spread / math.sqrt(batches)
    # From 20 batches on the floor is lower, not gone: 2,000 requests of a queue at 0.9
    # passed at the truth in 3.2% of runs on the batches' spread alone.
    factor = SHAPE_FLOOR if batches < MIN_UPPER_BATCHES else SHAPE_FLOOR_MANY
    half = max(half, shape_floor(logs, q, window, factor))
    return math.exp(estimate + half), batches


def shape_floor(logs: np.ndarray, q: float, window: int, factor: float = SHAPE_FLOOR) -> float:
    """The least upper half-width (log scale) for a run cut into few batches.

    A short run of a heavily loaded queue can miss its busy periods: its estimate is
    then half the truth and its batches agree with each other, so their spread alone
    passed 4-8% of such runs at the truth. The floor scales the distribution's own
    log-spread above the median region (from the q/2- to the q-quantile) by the
    send-order window's share of the run, as a normal standard error of a quantile
    with ``2 * window + 1`` requests per independent one would."""
    spread = float(np.quantile(logs, q) - np.quantile(logs, q / 2.0))
    return factor * spread * math.sqrt((2 * window + 1) / logs.size)


def _iid_variance(values: np.ndarray, q: float) -> float:
    """The variance of the log q-quantile were the values independent: from the width of
    its exact 95% order-statistic interval (about 2 x 1.96 standard errors)."""
    lower, upper = bound_ranks(int(values.size), q, 0.95)
    if lower is None or upper is None:
        return math.nan
    ordered = order_statistics(values, [lower - 1, upper - 1])
    width = math.log(ordered[upper - 1]) - math.log(ordered[lower - 1])
    return (width / (2.0 * 1.959964)) ** 2


@dataclass(frozen=True, slots=True)
class MarginBounds:
    """The verdict's bounds on a quantile: the order-statistic bound and sectioning, each
    at half the error, the tighter of each side; and the evidence they rested on."""

    lower: float
    upper: float
    dependence: Dependence  # the order-statistic bound's correlation estimate
    sections: SectionBounds
    n_effective: float


def margin_quantile_bounds(
    values: np.ndarray,
    q: float,
    confidence: float,
    episodes: np.ndarray | None = None,
    phases: np.ndarray | None = None,
) -> MarginBounds:
    """Bounds on the q-quantile of per-request ``values`` (send order) for a verdict.

    Independent data (the send-order screen finds no correlation) keep the exact
    order-statistic bound at the whole ``confidence``: they lose no power. Otherwise
    each side is the tighter of the order-statistic bound at the effective n and the
    sectioning bound (:func:`section_bounds`), each at half the side's error (a union
    bound: the pair errs at most as often as the two halves together), where the
    scope holds enough requests for that side's batches; else the order-statistic
    bound keeps the whole error. Several episodes keep the order-statistic bound over
    episodes alone.
    """
    samples = np.asarray(values, dtype=np.float64)
    exact = correlated_quantile_bounds(samples, q, confidence, episodes, phases)
    dependence = exact.dependence
    several = episodes is not None and np.unique(episodes).size >= 2
    # A side sectioning cannot take at this size keeps the whole error: splitting it
    # cost 30-request runs their p50 bound (0 of 30 over 2 s, yet INCONCLUSIVE). The
    # choice rests on the count alone, so the union bound needs no data-driven pick.
    if dependence.independent or several or samples.size < MIN_LOWER_REQUESTS:
        return _alone(exact)
    half = 1.0 - (1.0 - confidence) / 2.0
    ordered = correlated_quantile_bounds(samples, q, half, episodes, phases)
    sections = section_bounds(samples, q, half, dependence.window)
    lower, upper = max(ordered.lower, sections.lower), exact.upper
    if samples.size >= MIN_UPPER_REQUESTS:
        upper = min(ordered.upper, sections.upper)
    effective = dependence.n_effective
    if math.isfinite(sections.n_effective):
        effective = max(effective, sections.n_effective)
    return MarginBounds(lower, upper, dependence, sections, effective)


def _alone(bounds: QuantileBounds) -> MarginBounds:
    dependence = bounds.dependence
    return MarginBounds(bounds.lower, bounds.upper, dependence, NO_SECTIONS, dependence.n_effective)
