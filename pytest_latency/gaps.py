"""Each request's inter-token gaps, summarised: its median gap (``itl``) and worst (``itl_max``).

Verdicts need only these two per request (the request is the unit: gaps are never pooled),
so a saved baseline keeps a :class:`GapSummary` per request instead of every gap. This
module sits beside :mod:`pytest_latency.records` and imports nothing of the package.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

GapStatistic = Literal["median", "max"]


@dataclass(frozen=True, slots=True)
class GapSummary:
    """One request's gaps as a baseline keeps them: the median, the largest and the count."""

    median_s: float
    max_s: float
    count: int

    def statistic(self, kind: GapStatistic) -> float:
        return self.median_s if kind == "median" else self.max_s


def gap_statistic(
    gap_arrays: Sequence[Sequence[float] | np.ndarray], kind: GapStatistic
) -> np.ndarray:
    """Each request's median (or largest) inter-token gap; NaN where it has no gap.

    Requests with the same number of gaps are stacked and reduced in one numpy call, so
    a million records cost a few passes, not a million calls.
    """
    lengths = np.fromiter(map(len, gap_arrays), dtype=np.int64, count=len(gap_arrays))
    result = np.full(lengths.size, math.nan)
    for length in np.unique(lengths[lengths > 0]):
        same_length = np.flatnonzero(lengths == length)
        # Blocks of rows that stay in cache: one stack of a million requests' gaps is
        # hundreds of MB, whose first touch cost more than the arithmetic.
        for start in range(0, same_length.size, 4096):
            rows = same_length[start : start + 4096]
            stacked = np.asarray([gap_arrays[int(row)] for row in rows], dtype=np.float64)
            if kind == "max":
                result[rows] = stacked.max(axis=1)
                continue
            # Sorting the fresh stack in place is ~10x cheaper than np.median's partition
            # of a copy; the middle pair's mean and the NaN rule are np.median's own.
            stacked.sort(axis=1)
            middle = stacked[:, length // 2]
            if length % 2 == 0:
                middle = (stacked[:, length // 2 - 1] + middle) / 2
            result[rows] = np.where(np.isnan(stacked[:, -1]), math.nan, middle)
    return result


def gap_statistics(
    gap_arrays: Sequence[Sequence[float] | np.ndarray],
    summaries: Sequence[GapSummary | None],
    kind: GapStatistic,
) -> np.ndarray:
    """:func:`gap_statistic`, taking a stored summary where a request kept no gaps."""
    values = gap_statistic(gap_arrays, kind)
    for index, summary in enumerate(summaries):
        if summary is not None and math.isnan(values[index]):
            values[index] = summary.statistic(kind)
    return values


def summarise(
    gap_arrays: Sequence[Sequence[float] | np.ndarray], summaries: Sequence[GapSummary | None]
) -> list[GapSummary | None]:
    """Each request's :class:`GapSummary`: from its gaps, else its stored one (None: no gap)."""
    medians = gap_statistic(gap_arrays, "median")
    largest = gap_statistic(gap_arrays, "max")
    result: list[GapSummary | None] = []
    for index, (gaps, stored) in enumerate(zip(gap_arrays, summaries, strict=True)):
        count = len(gaps)
        if count:
            result.append(GapSummary(float(medians[index]), float(largest[index]), count))
        else:
            result.append(stored)
    return result
