"""Bounds on an error rate, independent or in outages (docs/statistics.md, "Error rates").

Failures count as independent unless the run shows them clustered, and an outage the
run did not see is the user's stated assumption (``outage:``), never the default:

* **Independent** (the default when nothing shows clustering): the exact binomial
  (Clopper-Pearson) bounds on failed/offered. 0 of 240 failed bounds the rate under
  2.2% at 99%.
* **Clustered, as the run shows**: an **outage** is a run of consecutive failed requests
  in send order (within one episode). Given the failed count, independent failures
  would scatter into about as many runs as failures; a runs test (the exact
  distribution of the number of runs of k failures placed at random among n requests)
  asks whether there are too few. When there are, the failed count is a sum of outage
  sizes with outages beginning at random (a weighted sum of Poisson counts, each size a
  weight), bounded by Fay and Feuer's gamma interval (Statistics in Medicine, 1997):
  the variance is the sum of squared sizes, and the upper bound adds one more outage,
  twice as long as the seen ones suggest (:func:`_unseen_like`).
* **Stated** (``outage: 2s`` on the objective): the user allows for outages the run
  did not see, lasting up to that long. The duration becomes requests at the scope's
  busiest rate (the most requests sent within any window of that length), so a 2 s
  blip at 200 req/s is 400 requests. The Fay-Feuer bounds then add one unseen outage of
  that many requests, and a run of failures longer than it counts as several outages
  of at most that length, back to back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

# One-sided level of the runs test: fewer runs of failures than this share of random
# placements would give counts as clustering. Under independence the clustered bounds
# are taken this often, at a small price in power (docs/statistics.md, "Error rates").
CLUSTERING_LEVEL = 0.05

Method = Literal["binomial", "clustered", "stated"]


@dataclass(frozen=True, slots=True)
class OutageBounds:
    """Bounds on a failure fraction from the failures of one run, and what they assume."""

    failed: int
    offered: int
    outages: int  # runs of consecutive failures as seen
    counted: int  # outages after splitting runs longer than a stated outage
    longest: int  # the longest run of consecutive failures
    failing_at_end: int  # failures in a row up to the last request (0: the last one was ok)
    lower: float
    upper: float
    design_effect: float  # the variance factor the bounds paid over independence
    method: Method = "binomial"
    clustering_p: float = 1.0  # the runs test's p-value (small: clustered)
    outage_requests: float | None = None  # a stated unseen outage, in requests

    @property
    def n_effective(self) -> float:
        return self.offered / self.design_effect


def failure_runs(failed: np.ndarray, episodes: np.ndarray | None = None) -> np.ndarray:
    """Lengths of the runs of consecutive failures (send order; episodes never join)."""
    flags = np.asarray(failed, dtype=bool)
    starts = flags.copy()
    starts[1:] &= ~flags[:-1]
    if episodes is not None and flags.size:
        new_episode = np.empty(flags.size, dtype=bool)
        new_episode[0] = True
        new_episode[1:] = episodes[1:] != episodes[:-1]
        starts |= flags & new_episode
    labels = np.cumsum(starts)[flags]
    return np.bincount(labels)[1:] if labels.size else np.zeros(0, dtype=np.int64)


def clustering_p_value(offered: int, failed: int, runs: int) -> float:
    """P(at most ``runs`` runs) when ``failed`` failures fall at random among ``offered``.

    Exact: r runs take C(k-1, r-1) ways to split the k failures and C(n-k+1, r) ways to
    place them between the n-k successes, of C(n, k) placements in all.
    """
    if failed <= 1 or failed >= offered or runs <= 0:
        return 1.0
    from scipy.special import gammaln

    def log_comb(n: float | np.ndarray, k: float | np.ndarray) -> np.ndarray:
        return np.asarray(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1))

    fewer = np.arange(1, min(runs, offered - failed + 1) + 1, dtype=np.float64)
    terms = log_comb(failed - 1, fewer - 1) + log_comb(offered - failed + 1, fewer)
    total = float(log_comb(offered, failed))
    return min(1.0, float(np.exp(np.logaddexp.reduce(terms) - total)))


def outage_requests(
    send_times: np.ndarray, outage_s: float, episodes: np.ndarray | None = None
) -> float:
    """The most requests sent within any ``outage_s`` window of one episode: a stated
    outage in requests at the scope's busiest rate (at least 1)."""
    times = np.asarray(send_times, dtype=np.float64)
    labels = np.zeros(times.size) if episodes is None else np.asarray(episodes)
    most = 1
    for label in np.unique(labels):
        ordered = np.sort(times[labels == label])
        # Less a nanosecond: sends exactly 1/rate apart must not gain one by rounding.
        ends = np.searchsorted(ordered, ordered + outage_s - 1e-9, side="left")
        most = max(most, int((ends - np.arange(ordered.size)).max()))
    return float(most)


def _split(runs: np.ndarray, longest: float) -> np.ndarray:
    """Runs longer than ``longest`` split into equal outages of at most that length."""
    pieces = np.ceil(runs / longest).astype(np.int64)
    return np.repeat(runs / np.maximum(pieces, 1), pieces)


def _unseen_like(sizes: np.ndarray) -> float:
    """The one more outage the clustered bound allows for: twice the longer of the
    longest seen and the size-weighted mean of memoryless outages of the seen mean
    (2m - 1). A few outages understate how long they come; the factor 2 holds wrong
    PASS at the truth to 1.4-2.4% with 5 outages expected (docs/statistics.md)."""
    return 2.0 * max(float(sizes.max()), 2.0 * float(sizes.mean()) - 1.0)


def _fay_feuer(
    sizes: np.ndarray, unseen: float, offered: int, tail: float
) -> tuple[float, float, float]:
    """(lower, upper, variance per failure) of a weighted Poisson sum of ``sizes``."""
    from scipy.stats import gamma

    count = float(sizes.sum())
    spread = float(np.square(sizes).sum())
    lower = 0.0
    if count > 0:
        lower = float(gamma.ppf(tail, count**2 / spread, scale=spread / count)) / offered
    upper_scale = (spread + unseen**2) / (count + unseen)
    upper_shape = (count + unseen) ** 2 / (spread + unseen**2)
    upper = float(gamma.ppf(1.0 - tail, upper_shape, scale=upper_scale)) / offered
    per_failure = spread / count if count > 0 else unseen
    return lower, upper, per_failure


def outage_bounds(
    failed: np.ndarray,
    confidence: float,
    episodes: np.ndarray | None = None,
    outage: float | None = None,
) -> OutageBounds:
    """Two-sided bounds on the failure fraction of the 0/1 series ``failed`` (send order).

    ``outage``: a stated unseen outage in requests (see :func:`outage_requests`), or
    None to assume only what the run shows.
    """
    flags = np.asarray(failed, dtype=bool)
    offered = int(flags.size)
    runs = failure_runs(flags, episodes)
    failed_count = int(flags.sum())
    p_value = clustering_p_value(offered, failed_count, int(runs.size))
    tail = (1.0 - confidence) / 2.0
    sizes = runs.astype(np.float64)
    method: Method = "binomial"
    if outage is not None:
        method, sizes = "stated", _split(sizes, max(outage, 1.0))
        lower, upper, deff = _fay_feuer(sizes, max(outage, 1.0), max(offered, 1), tail)
    elif p_value <= CLUSTERING_LEVEL:
        method = "clustered"
        lower, upper, deff = _fay_feuer(sizes, _unseen_like(sizes), offered, tail)
    else:
        lower, upper = clopper_pearson(failed_count, offered, confidence) if offered else (0, 1)
        deff = 1.0
    return OutageBounds(
        failed=failed_count,
        offered=offered,
        outages=int(runs.size),
        counted=int(sizes.size),
        longest=int(runs.max()) if runs.size else 0,
        failing_at_end=int(runs[-1]) if offered and flags[-1] else 0,
        lower=min(max(lower, 0.0), 1.0),
        upper=min(upper, 1.0),
        design_effect=max(deff, 1.0),
        method=method,
        clustering_p=p_value,
        outage_requests=outage,
    )


def clopper_pearson(failed: float, offered: float, confidence: float) -> tuple[float, float]:
    """Exact two-sided binomial bounds on a failure fraction (counts may be effective)."""
    from scipy.stats import beta  # scipy loads on first verdict, not at plugin import

    tail = (1.0 - confidence) / 2.0
    lower = 0.0 if failed <= 0 else float(beta.ppf(tail, failed, offered - failed + 1))
    upper = 1.0 if failed >= offered else float(beta.ppf(1 - tail, failed + 1, offered - failed))
    return lower, upper


def requests_to_pass(limit: float, confidence: float, outage: float | None = None) -> int:
    """Requests without a single failure for the upper bound to reach ``limit``."""
    tail = (1.0 - confidence) / 2.0
    if outage is None:  # Clopper-Pearson at 0 failures: 1 - tail ** (1 / n) <= limit
        return math.ceil(math.log(tail) / math.log1p(-limit)) if 0 < limit < 1 else 1
    from scipy.stats import gamma

    return math.ceil(float(gamma.ppf(1.0 - tail, 1.0)) * max(outage, 1.0) / limit)


def error_rate_assumption(bounds: OutageBounds, outage_s: float | None) -> str:
    """What the bounds assumed about outages, for the verdict's reason."""
    if bounds.method == "stated":
        return (
            f"an unseen outage of up to {outage_s:g}s ({bounds.outage_requests:.0f} requests"
            " at this scope's busiest rate) is allowed for (outage:)"
        )
    if bounds.method == "clustered":
        return (
            f"clustered failures (runs test p={bounds.clustering_p:.2g}): an outage is one"
            " event, and one more twice as long as seen is allowed for"
        )
    return "independent failures (none clustered); no unseen outage assumed (outage: DURATION)"
