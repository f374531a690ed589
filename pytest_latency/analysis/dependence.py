"""How much independent evidence a run holds: the design effect of correlated samples.

Requests sent close together share a queue and a batch, so their latencies are not
independent: one busy stretch puts many requests over a threshold at once. Every bound
in pytest-latency rests on a count (requests under a level, failed requests), and
correlation multiplies the variance of that count by the **design effect** ``D``. The
run then holds the evidence of ``n_effective = n / D`` independent requests.

Two estimates, both from the data:

* **Episodes** (``repeat: k``): the phases ran ``k`` times with a cool-down between, so
  episodes are independent. The variance of the count comes from the spread of the
  per-episode counts (cluster-robust), with ``k - 1`` degrees of freedom. Correlation of
  any length inside an episode is covered.
* **Send order** (one episode): the long-run variance of the 0/1 series in send order,
  summed over lags up to an adaptive window (Sokal's rule: the window is at least
  ``WINDOW_FACTOR`` times the integrated autocorrelation time it yields), corrected for
  the mean estimated from the same data, with ``n / (2 * window + 1)`` degrees of
  freedom. Latency ranks (as normal scores) give a second estimate, the larger is used:
  a slow queue shows in the whole distribution before it shows in a tail count.

``D`` is never below 1. An estimate within 2.5 standard errors of independence counts
as independence, so independent data keep the exact bound; a true ``D`` below that
screen (about 1.7 at n = 400, 1.3 at n = 2000) is ignored, which at worst moves a 0.5%
error side to about 2%. Runs under 64 requests in scope are taken as independent (no
estimate is possible), and the window spans at most an eighth of the run. The
estimates assume the correlation fades within the run (stationary load within the
scope). A run that is one long transient (a queue still growing when the phase ends)
has no such evidence in it; repeat the episode instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

# Sokal's window factor: sum autocorrelations to at least this many autocorrelation
# times. 8 kept false verdicts at an M/M/1 queue within 2% (docs/statistics.md).
WINDOW_FACTOR = 8.0
# Below this many samples no correlation is estimated (the estimate would be noise).
MIN_SERIAL_SAMPLES = 64
# The window never spans more than this share of the run: beyond it the sum is noise.
# Correlation longer than that is only partly seen, so repeat the episode instead.
MAX_WINDOW_SHARE = 1.0 / 8.0
# An estimate within this many standard errors of independence counts as independence.
SCREEN_SDS = 2.5

Method = Literal["independent", "serial", "episodes"]


@dataclass(frozen=True, slots=True)
class Dependence:
    """The design effect of one count, and how much to trust that estimate."""

    n: int
    design_effect: float  # >= 1: the factor correlation puts on the count's variance
    degrees_of_freedom: float  # of the variance estimate; inf when none was estimated
    method: Method
    window: int = 0  # lags summed (send order), 0 otherwise

    @property
    def n_effective(self) -> float:
        return self.n / self.design_effect

    @property
    def independent(self) -> bool:
        return self.design_effect <= 1.0


def independent(n: int) -> Dependence:
    return Dependence(n=n, design_effect=1.0, degrees_of_freedom=math.inf, method="independent")


def _autocorrelation(series: np.ndarray) -> np.ndarray | None:
    """Sample autocorrelation at every lag (FFT, the usual biased estimator)."""
    n = int(series.size)
    centred = series - series.mean()
    spectrum = np.fft.rfft(centred, 2 * n)
    autocovariance = np.fft.irfft(spectrum * np.conj(spectrum))[:n]
    if autocovariance[0] <= 0.0:
        return None  # a constant series: nothing varies, nothing is correlated
    normalised: np.ndarray = autocovariance / autocovariance[0]
    return normalised


def integrated_time(series: np.ndarray) -> tuple[float, int]:
    """(1 + 2 * sum of autocorrelations, window) by Sokal's adaptive window.

    The sum is divided by ``1 - (2 * window + 1) / n``: the mean taken from the same data
    lowers every autocovariance by about the variance of that mean.
    """
    n = int(series.size)
    correlation = _autocorrelation(series)
    if correlation is None or n < 2:
        return 1.0, 0
    longest = max(1, int(n * MAX_WINDOW_SHARE))
    sums = 1.0 + 2.0 * np.cumsum(correlation[1 : longest + 1])
    lags = np.arange(1, longest + 1)
    reached = np.flatnonzero(lags >= WINDOW_FACTOR * sums)
    window = int(reached[0]) + 1 if reached.size else longest
    time = float(sums[window - 1])
    return time / (1.0 - (2 * window + 1) / n), window


def serial_dependence(*series: np.ndarray) -> Dependence:
    """The largest design effect over ``series`` (one value per request, in send order)."""
    n = int(series[0].size)
    if n < MIN_SERIAL_SAMPLES:
        return independent(n)
    effect, window = 1.0, 0
    for values in series:
        time, lags = integrated_time(values)
        # Under independence each autocorrelation is noise of sd 1/sqrt(n), so the sum
        # over the window scatters by 2 * sqrt(lags / n): only an excess beyond
        # SCREEN_SDS such sds counts as correlation. Independent data keep the exact bound.
        if time - SCREEN_SDS * 2.0 * math.sqrt(lags / n) > 1.0 and time > effect:
            effect, window = time, lags
    if effect <= 1.0:
        return independent(n)
    degrees = n / (2 * window + 1)
    return Dependence(n, effect, degrees, "serial", window)


def episode_dependence(indicator: np.ndarray, episodes: np.ndarray) -> Dependence:
    """Design effect of ``sum(indicator)`` from the spread of its per-episode sums."""
    n = int(indicator.size)
    labels, index = np.unique(episodes, return_inverse=True)
    k = int(labels.size)
    share = float(indicator.mean()) if n else 0.0
    if k < 2 or share in (0.0, 1.0):
        return independent(n)
    sizes = np.bincount(index, minlength=k).astype(np.float64)
    counts = np.bincount(index, weights=indicator.astype(np.float64), minlength=k)
    variance = float(((counts - share * sizes) ** 2).sum()) * k / (k - 1)
    effect = variance / (n * share * (1.0 - share))
    # Few episodes make a poor variance estimate: never claim less than independence.
    return Dependence(n, max(effect, 1.0), float(k - 1), "episodes")


def normal_scores(values: np.ndarray) -> np.ndarray:
    """Ranks mapped to standard normal quantiles: the dependence of the whole distribution.

    Ties (failed requests all count as ``inf``) share their average rank.
    """
    from scipy.stats import norm, rankdata

    n = int(values.size)
    scores: np.ndarray = norm.ppf((rankdata(values) - 0.5) / n)
    return scores


def _serial_for(indicator: np.ndarray, values: np.ndarray | None) -> Dependence:
    series = [indicator.astype(np.float64)]
    if values is not None and values.size >= MIN_SERIAL_SAMPLES:
        series.append(normal_scores(values))
    return serial_dependence(*series)


def stratified_dependence(
    indicator: np.ndarray, strata: np.ndarray, values: np.ndarray | None
) -> Dependence:
    """Design effect of a count over planned strata (phases), each estimated on its own.

    Phases are part of the plan, not noise: a burst's higher latencies are a fixed
    stratum, not a correlation. Each phase's count variance is estimated within the
    phase; the variances add, and their degrees of freedom combine (Satterthwaite).
    """
    n = int(indicator.size)
    share = float(indicator.mean()) if n else 0.0
    total = n * share * (1.0 - share)
    if total <= 0.0:
        return independent(n)
    variances: list[float] = []
    parts: list[Dependence] = []
    for stratum in np.unique(strata):
        chosen = strata == stratum
        inside = indicator[chosen]
        inner = float(inside.mean())
        if inner in (0.0, 1.0):
            continue  # a stratum all on one side adds no variance
        part = _serial_for(inside, None if values is None else values[chosen])
        variances.append(inside.size * inner * (1.0 - inner) * part.design_effect)
        parts.append(part)
    effect = sum(variances) / total
    if effect <= 1.0 or all(part.independent for part in parts):
        return independent(n)
    noise = sum(v**2 / p.degrees_of_freedom for v, p in zip(variances, parts, strict=True))
    degrees = math.inf if noise == 0.0 else sum(variances) ** 2 / noise
    window = max(part.window for part in parts)
    return Dependence(n, effect, degrees, "serial", window)


def count_dependence(
    indicator: np.ndarray,
    episodes: np.ndarray | None,
    values: np.ndarray | None = None,
    strata: np.ndarray | None = None,
) -> Dependence:
    """Design effect of ``sum(indicator)`` (send order), by episodes when there are several.

    ``values`` (the latencies behind the indicator) add the normal-score estimate;
    ``strata`` (phase of each request) make each phase its own stratum.
    """
    if episodes is not None and np.unique(episodes).size >= 2:
        return episode_dependence(indicator, episodes)
    if strata is not None and np.unique(strata).size >= 2:
        return stratified_dependence(indicator, strata, values)
    return _serial_for(indicator, values)
