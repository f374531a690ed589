"""Bounds on an error rate when failures come as outages (docs/statistics.md, "Error rates").

Failures are rarely independent: a restart, a full queue or a network blip fails every
request sent while it lasts. A run that saw no failure then proves little: a server that
fails 1% of requests in outages of 20 shows none in a third of 2,000-request runs. So the
unit of evidence is the **outage**, not the failed request.

* An **outage** is a run of consecutive failed requests in send order (within one
  episode). The failed count is then a sum of outage sizes, and outages begin at random:
  a weighted sum of Poisson counts (each size a weight).
* The bounds are Fay and Feuer's gamma interval for such sums (Statistics in Medicine,
  1997): the count's variance is estimated by the sum of squared outage sizes, and the
  upper bound adds one more outage than the run saw, of ``OUTAGE_REQUESTS`` requests:
  the outage a run of this length could have missed. With no failure at all the upper
  bound is that outage times the exact Poisson bound on a count of zero.
* **The assumption** (one run can never check it): outages last ``OUTAGE_REQUESTS``
  requests on average and end at random (each request of an outage ends it with the
  same chance). Such outages scatter their count as much as outages of twice that
  length that never vary, so a run of failures longer than ``2 * OUTAGE_REQUESTS``
  counts as several outages of at most that length. A server that stays down for 90
  requests is then three outages in a row, which is evidence, not one unlucky event.
  Outages much longer or rarer than that are invisible to one run: repeat the episode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# The mean outage length assumed for outages a run did not see (requests): a server
# restart or a network blip at the 5-10 req/s of a CI run lasts a few seconds.
OUTAGE_REQUESTS = 20
# Longest run of failures counted as one outage: a memoryless outage of mean m scatters
# the failed count like fixed outages of 2m - 1 requests.
LONGEST_OUTAGE = 2 * OUTAGE_REQUESTS


@dataclass(frozen=True, slots=True)
class OutageBounds:
    """Bounds on a failure fraction from the outages (failure runs) of one run."""

    failed: int
    offered: int
    outages: int  # runs of consecutive failures as seen
    counted: int  # outages after splitting runs longer than LONGEST_OUTAGE
    longest: int  # the longest run of consecutive failures
    failing_at_end: int  # failures in a row up to the last request (0: the last one was ok)
    lower: float
    upper: float
    design_effect: float  # the variance factor the upper bound paid over independence

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


def _counted_sizes(runs: np.ndarray) -> np.ndarray:
    """Runs longer than LONGEST_OUTAGE split into equal outages of at most that length."""
    pieces = np.ceil(runs / LONGEST_OUTAGE).astype(np.int64)
    return np.repeat(runs / np.maximum(pieces, 1), pieces)


def outage_bounds(
    failed: np.ndarray, confidence: float, episodes: np.ndarray | None = None
) -> OutageBounds:
    """Two-sided bounds on the failure fraction of the 0/1 series ``failed`` (send order)."""
    from scipy.stats import gamma

    flags = np.asarray(failed, dtype=bool)
    offered = int(flags.size)
    runs = failure_runs(flags, episodes)
    sizes = _counted_sizes(runs)
    count = float(sizes.sum())
    spread = float(np.square(sizes).sum())
    tail = (1.0 - confidence) / 2.0
    unseen = float(OUTAGE_REQUESTS)
    lower = 0.0
    if count > 0:
        lower = float(gamma.ppf(tail, count**2 / spread, scale=spread / count)) / offered
    upper_shape = (count + unseen) ** 2 / (spread + unseen**2)
    upper_scale = (spread + unseen**2) / (count + unseen)
    upper = float(gamma.ppf(1.0 - tail, upper_shape, scale=upper_scale)) / max(offered, 1)
    at_end = 0
    if offered and flags[-1]:
        at_end = int(runs[-1])
    return OutageBounds(
        failed=int(flags.sum()),
        offered=offered,
        outages=int(runs.size),
        counted=int(sizes.size),
        longest=int(runs.max()) if runs.size else 0,
        failing_at_end=at_end,
        lower=min(lower, 1.0),
        upper=min(upper, 1.0),
        design_effect=max(upper_scale, 1.0),
    )


def requests_to_pass(limit: float, confidence: float) -> int:
    """Requests without a single failure for the upper bound to reach ``limit``."""
    from scipy.stats import gamma

    tail = (1.0 - confidence) / 2.0
    return math.ceil(float(gamma.ppf(1.0 - tail, 1.0)) * OUTAGE_REQUESTS / limit)
