"""Each request's median gap is exactly ``np.median`` of its gaps, whatever the input.

``gap_statistic`` computes the median by sorting rows in place rather than calling
``np.median``; these pin the result bit for bit (odd and even counts, ties, zeros,
infinities, NaN, huge values, lists and arrays, mixed lengths) and the input untouched.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_latency.gaps import GapStatistic, gap_statistic


def _expected(gap_arrays: list[list[float] | np.ndarray], kind: str) -> np.ndarray:
    reduce = np.median if kind == "median" else np.max
    return np.array(
        [float(reduce(np.asarray(gaps, dtype=np.float64))) if len(gaps) else math.nan
         for gaps in gap_arrays]
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("kind", ["median", "max"])
def test_equals_numpy_per_request_over_random_runs(seed: int, kind: GapStatistic) -> None:
    rng = np.random.default_rng(seed)
    gap_arrays: list[list[float] | np.ndarray] = []
    for _ in range(300):
        length = int(rng.integers(0, 12))
        # Few distinct values: ties at the middle are common.
        gaps = rng.choice([0.0, 0.001, 0.02, 0.02, 0.5, math.inf], size=length)
        gaps = np.where(rng.random(length) < 0.5, gaps, rng.lognormal(-3.5, 0.3, length))
        if rng.random() < 0.05 and length:
            gaps[int(rng.integers(length))] = math.nan
        gap_arrays.append(gaps if rng.random() < 0.5 else gaps.tolist())
    copies = [np.array(gaps, dtype=np.float64) for gaps in gap_arrays]
    result = gap_statistic(gap_arrays, kind)
    np.testing.assert_array_equal(result, _expected(gap_arrays, kind))
    for given, copy in zip(gap_arrays, copies, strict=True):  # the input is not sorted
        np.testing.assert_array_equal(np.asarray(given, dtype=np.float64), copy)


@pytest.mark.parametrize(
    "gaps",
    [
        [1e308, 2e308 / 2, 1.5e308],  # odd: the middle itself, no overflowing sum
        [1e308, 1.7e308],  # even: numpy's own mean of the pair (inf here, as numpy)
        [-math.inf, math.inf],  # mean of the pair is NaN in numpy too
        [math.inf, math.inf, 0.01, 0.02],
        [5e-324, 5e-324, 1e-323],  # subnormals
        [0.3],
        [0.1, 0.2],
        [math.nan, 0.1, 0.2],
    ],
)
def test_edge_values_equal_numpy(gaps: list[float]) -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        expected = _expected([gaps], "median")
        result = gap_statistic([gaps], "median")
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("kind", ["median", "max"])
def test_many_requests_of_one_length_equal_numpy(kind: GapStatistic) -> None:
    """More requests of one gap count than one block holds, interleaved with others."""
    rng = np.random.default_rng(99)
    gap_arrays: list[list[float] | np.ndarray] = [
        rng.lognormal(-3.5, 0.3, 6 if index % 7 else 3) for index in range(10_001)
    ]
    gap_arrays[5_000] = []  # a one-token answer: no gap
    result = gap_statistic(gap_arrays, kind)
    np.testing.assert_array_equal(result, _expected(gap_arrays, kind))
    assert math.isnan(result[5_000])
