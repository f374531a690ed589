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
  any length inside an episode is covered. Under 8 episodes that spread is a poor
  estimate, so the send-order estimate inside the episodes is a floor under it; from 8
  its degrees of freedom are discounted for the skew of the counts (:func:`episode_degrees`).
* **Send order** (one episode): the long-run variance of the 0/1 series in send order,
  summed over lags up to an adaptive window (Sokal's rule: the window is at least
  ``WINDOW_FACTOR`` times the design effect it yields), corrected for the mean
  estimated from the same data, with ``n / (2 * window + 1)`` degrees of freedom.
  Latency ranks (as normal scores) give a second estimate, the larger is used: a slow
  queue shows in the whole distribution before it shows in a tail count. A scope of
  several phases is estimated whole, in send order, with each phase's mean removed
  where the phases are long enough to tell their means from the correlation.

``D`` is never below 1. An estimate within 2.5 standard errors of independence counts
as independence, so independent data keep the exact bound; a true ``D`` below that
screen (about 1.7 at n = 400, 1.3 at n = 2000) is ignored, which at worst moves a 0.5%
error side to about 2%. A scope under 64 requests is never taken as independent: its
estimate is used unscreened and its few degrees of freedom are paid for (``short``);
under 8 requests nothing is estimated and the scope counts as one request
(``unestimated``). Repeated episodes say more. The window spans at most an eighth of the run. The
estimates assume the correlation fades within the run (stationary load within the
scope). A run that is one long transient (a queue still growing when the phase ends)
has no such evidence in it; repeat the episode instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

# Sokal's window factor: sum autocorrelations to at least this many design effects
# (twice as many of Sokal's integrated times). 3 kept false verdicts at an M/M/1 queue
# within 1% and gives about 2.5 times the degrees of freedom of 8 (docs/statistics.md).
WINDOW_FACTOR = 3.0
# Below this many samples an estimate of independence is no evidence of it: no screen,
# and the estimate's few degrees of freedom are paid for (short_dependence).
MIN_SERIAL_SAMPLES = 64
# Below this many nothing is estimated: the scope counts as one request.
MIN_SHORT_SAMPLES = 8
SHORT_WINDOW_SHARE = 1.0 / 4.0
# The window never spans more than this share of the run: beyond it the sum is noise.
# Correlation longer than that is only partly seen, so repeat the episode instead.
MAX_WINDOW_SHARE = 1.0 / 8.0
# An estimate within this many standard errors of independence counts as independence.
SCREEN_SDS = 2.5
# From this many episodes their spread alone estimates the design effect; below it the
# send-order estimate inside the episodes is a floor. The spread of k counts falls below
# independence with chance P(chi2(k-1) < (k-1)/D): 15% at k = 2 and D = 28, 3.5% at
# k = 3. The floor costs trending episodes (bursts) their power, so it stops here, and
# the spread's degrees of freedom are discounted instead (episode_degrees).
EPISODES_ALONE = 8
# From EPISODES_ALONE the floor stays where the correlation inside the episodes fades
# within this share of an episode (its estimate is then sound); a longer window is a
# shape the episodes share (a burst's queue), which the floor would charge as correlation.
FLOOR_WINDOW_SHARE = 1.0 / 4.0

Method = Literal["independent", "serial", "episodes", "short", "unestimated"]


@dataclass(frozen=True, slots=True)
class Dependence:
    """The design effect of one count, and how much to trust that estimate."""

    n: int
    design_effect: float  # >= 1: the factor correlation puts on the count's variance
    degrees_of_freedom: float  # of the variance estimate; inf when none was estimated
    method: Method
    window: int = 0  # lags summed (send order), 0 otherwise
    episodes: int = 0  # the episodes whose spread was the estimate ("episodes"), 0 otherwise

    @property
    def n_effective(self) -> float:
        return self.n / self.design_effect

    @property
    def independent(self) -> bool:
        """Taken as independent: no design effect, and none left unpaid for (df finite)."""
        return self.design_effect <= 1.0 and math.isinf(self.degrees_of_freedom)


def independent(n: int) -> Dependence:
    return Dependence(n=n, design_effect=1.0, degrees_of_freedom=math.inf, method="independent")


def unestimated(n: int) -> Dependence:
    """A scope too short to estimate anything: as if it were one request."""
    return Dependence(n, float(max(n, 1)), math.inf, "unestimated")


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


def integrated_time(series: np.ndarray, share: float = MAX_WINDOW_SHARE) -> tuple[float, int]:
    """(1 + 2 * sum of autocorrelations, window) by Sokal's adaptive window.

    The sum is divided by ``1 - (2 * window + 1) / n``: the mean taken from the same data
    lowers every autocovariance by about the variance of that mean.
    """
    n = int(series.size)
    correlation = _autocorrelation(series)
    if correlation is None or n < 2:
        return 1.0, 0
    longest = max(1, int(n * share))
    sums = 1.0 + 2.0 * np.cumsum(correlation[1 : longest + 1])
    lags = np.arange(1, longest + 1)
    reached = np.flatnonzero(lags >= WINDOW_FACTOR * sums)
    window = int(reached[0]) + 1 if reached.size else longest
    time = float(sums[window - 1])
    return time / (1.0 - (2 * window + 1) / n), window


def short_dependence(*series: np.ndarray) -> Dependence:
    """A scope too short for the screen: the estimate is paid for, whatever it says.

    Under 64 requests an estimate of independence is no evidence of it (a short burst
    is one queue), so there is no screen: the design effect is the largest estimate, at
    least 1, and its few degrees of freedom widen the bound (Student's t). The window
    may span a quarter of the scope. Under ``MIN_SHORT_SAMPLES`` nothing is estimated.
    """
    n = int(series[0].size)
    if n < MIN_SHORT_SAMPLES:
        return unestimated(n)
    effect, window = 1.0, 1
    for values in series:
        time, lags = integrated_time(values, SHORT_WINDOW_SHARE)
        if time >= effect:
            effect, window = time, max(lags, 1)
    return Dependence(n, min(effect, float(n)), n / (2 * window + 1), "short", window)


def serial_dependence(*series: np.ndarray) -> Dependence:
    """The largest design effect over ``series`` (one value per request, in send order)."""
    n = int(series[0].size)
    if n < MIN_SERIAL_SAMPLES:
        return short_dependence(*series)
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
    return Dependence(n, min(effect, float(n)), degrees, "serial", window)


def episode_degrees(episodes: int) -> float:
    """Degrees of freedom of the episodes' spread: ``k - 1`` below ``EPISODES_ALONE``
    (a floor guards it), from there the effective ones of a variance of skewed counts
    (:func:`count_dependence` restores ``k - 1`` where the floor still guards it).

    A variance from ``k`` values with excess kurtosis ``g`` varies like a chi-square of
    ``2 / (2 / (k - 1) + g / k)`` degrees of freedom (Satterthwaite); the counts over a
    tail quantile are skewed, and ``g = 2`` about halves them. With ``k - 1`` the spread
    alone passed at the truth in 1.5-2.7% of runs of 8 steady-state episodes and
    3.0-4.5% of episodes from an empty server (nominal 0.5%; now 0-0.8%).
    """
    if episodes < EPISODES_ALONE:
        return float(episodes - 1)
    return 2.0 / (2.0 / (episodes - 1) + 2.0 / episodes)


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
    if effect <= 1.0:
        # Few episodes make a poor variance estimate: never claim less than independence.
        return independent(n)
    return Dependence(n, effect, episode_degrees(k), "episodes", episodes=k)


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
    if values is not None and values.size >= MIN_SHORT_SAMPLES:
        series.append(normal_scores(values))
    return serial_dependence(*series)


def _without_phase_means(series: np.ndarray, codes: np.ndarray) -> np.ndarray:
    sums = np.bincount(codes, weights=series)
    sizes = np.bincount(codes)
    residual: np.ndarray = series - (sums / sizes)[codes]
    return residual


def _phase_effect(series: np.ndarray, codes: np.ndarray, phases: int) -> tuple[float, int]:
    """(design effect, window) of ``series`` with each phase's mean removed, or (nan, 0).

    The phase means are planned levels, not correlation; but each removed mean also
    takes away the slow part of the correlation inside its phase, about ``(2*window+1)/n``
    of the long-run variance per phase. The estimate is corrected for that, and refused
    (nan) when the phases are too short for the correction to hold (their means then
    cannot be told from the correlation).
    """
    n = int(series.size)
    residual = _without_phase_means(series, codes)
    spread = float(residual.var())
    total = float(series.var())
    if spread <= 0.0 or total <= 0.0:
        return math.nan, 0
    time, window = integrated_time(residual)
    # integrated_time corrected for one mean; every further phase mean costs as much.
    lost = (phases - 1) * (2 * window + 1) / n
    remaining = (1.0 - (2 * window + 1) / n) - lost
    if remaining < 0.5 * (1.0 - (2 * window + 1) / n):
        return math.nan, 0
    time *= (1.0 - (2 * window + 1) / n) / remaining
    return time * spread / total, window


def scope_dependence(
    indicator: np.ndarray, phases: np.ndarray, values: np.ndarray | None
) -> Dependence:
    """Design effect of a count over a scope of several phases, in send order.

    One estimate over the whole scope, so the covariance between neighbouring phases is
    kept. Each phase's mean is removed first (a burst's higher latencies are planned,
    not correlation) when the phases are long enough for that (:func:`_phase_effect`);
    otherwise the scope is taken whole, which counts any difference between phases as
    correlation: conservative, never independent by construction.
    """
    n = int(indicator.size)
    if n < MIN_SERIAL_SAMPLES:
        return _serial_for(indicator, values)
    _, codes = np.unique(phases, return_inverse=True)
    count = int(codes.max()) + 1
    series = [indicator.astype(np.float64)]
    if values is not None:
        series.append(normal_scores(values))
    effect, window = 1.0, 0
    for values_in_order in series:
        time, lags = _phase_effect(values_in_order, codes, count)
        if math.isnan(time):
            return serial_dependence(*series)
        if time - SCREEN_SDS * 2.0 * math.sqrt(lags / n) > 1.0 and time > effect:
            effect, window = time, lags
    if effect <= 1.0:
        return independent(n)
    return Dependence(n, min(effect, float(n)), n / (2 * window + 1), "serial", window)


def _within_episodes(
    indicator: np.ndarray,
    episodes: np.ndarray,
    values: np.ndarray | None,
    strata: np.ndarray | None,
) -> Dependence:
    """The send-order estimate inside the episodes, each episode's (and phase's) mean removed.

    The spread of a few episodes' counts is a poor variance estimate: with 2 episodes
    it has one degree of freedom and falls below independence about one time in six on a
    queue whose true design effect is 28, which then passed at the truth 7% of the time.
    Under ``EPISODES_ALONE`` episodes the correlation inside them is the floor under it;
    from there too where that correlation fades within ``FLOOR_WINDOW_SHARE`` of an
    episode, else the spread alone at its discounted degrees of freedom
    (:func:`episode_degrees`): 8 episodes' spread alone at ``k - 1`` passed at the truth
    in 1.5-4.5% of runs (nominal 0.5%).
    """
    _, episode_codes = np.unique(episodes, return_inverse=True)
    codes = episode_codes
    if strata is not None:
        _, phase_codes = np.unique(strata, return_inverse=True)
        codes = episode_codes * (int(phase_codes.max()) + 1) + phase_codes
    return scope_dependence(indicator, codes, values)


def count_dependence(
    indicator: np.ndarray,
    episodes: np.ndarray | None,
    values: np.ndarray | None = None,
    strata: np.ndarray | None = None,
) -> Dependence:
    """Design effect of ``sum(indicator)`` (send order), by episodes when there are several.

    ``values`` (the latencies behind the indicator) add the normal-score estimate;
    ``strata`` (phase of each request): the phases' means are removed where they can be
    told from the correlation (:func:`scope_dependence`).
    """
    count = 0 if episodes is None else int(np.unique(episodes).size)
    if episodes is not None and count >= 2:
        by_episode = episode_dependence(indicator, episodes)
        within = _within_episodes(indicator, episodes, values, strata)
        if count >= EPISODES_ALONE and within.window > indicator.size / count * FLOOR_WINDOW_SHARE:
            return by_episode  # a shape every episode shares (a burst): the spread alone
        if by_episode.method == "episodes":  # the floor guards it: no discount
            by_episode = replace(by_episode, degrees_of_freedom=float(count - 1))
        return by_episode if by_episode.design_effect >= within.design_effect else within
    if strata is not None and np.unique(strata).size >= 2:
        return scope_dependence(indicator, strata, values)
    return _serial_for(indicator, values)
