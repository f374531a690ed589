"""Relative verdicts against a stored baseline (independent samples) on constructed data."""

import math

import numpy as np
import pytest

from pytest_latency.analysis.compare import (
    MIX_SHIFT_WARNING,
    RatioResult,
    compare_quantiles,
    mix_shift,
    per_sample_confidence,
)
from pytest_latency.analysis.percentiles import bound_ranks, quantile_bounds
from pytest_latency.analysis.verdict import Verdict


def _grid(n: int, scale: float = 1.0) -> np.ndarray:
    """n evenly spread 'latencies' in (0.1, 1.1] s times scale: quantiles known exactly.

    In a seeded random send order: sorted values would be perfectly correlated requests.
    """
    return np.random.default_rng(n).permutation((0.1 + np.arange(1, n + 1) / n) * scale)


def _scattered(n: int, count: int) -> np.ndarray:
    """``count`` request positions of ``n``, spread at random (failures that do not cluster)."""
    return np.random.default_rng(count).choice(n, size=count, replace=False)


# --- stored baseline: compare_quantiles ---------------------------------------------------


def test_identical_samples_pass_when_the_interval_is_tight():
    base = _grid(5000)
    result = compare_quantiles(base, base.copy(), 0.5, 0.10)
    assert result.verdict is Verdict.PASS and result.passed
    assert result.ratio_estimate == pytest.approx(1.0)
    assert result.ratio_lower < 1.0 < result.ratio_upper <= 1.10
    assert (result.n_baseline, result.n_candidate) == (5000, 5000)


def test_ratio_bounds_are_the_cross_ratios_of_per_sample_bounds():
    rng = np.random.default_rng(1)
    base, cand = rng.lognormal(sigma=0.5, size=800), rng.lognormal(sigma=0.5, size=900)
    result = compare_quantiles(base, cand, 0.95, 0.10, confidence=0.99)
    b_lo, b_up = quantile_bounds(base, 0.95, per_sample_confidence(0.99))
    c_lo, c_up = quantile_bounds(cand, 0.95, per_sample_confidence(0.99))
    assert per_sample_confidence(0.99) == pytest.approx(0.995)
    assert result.ratio_lower == pytest.approx(c_lo / b_up)
    assert result.ratio_upper == pytest.approx(c_up / b_lo)


def test_a_clear_regression_fails():
    result = compare_quantiles(_grid(2000), _grid(2000, 1.5), 0.95, 0.10)
    assert result.verdict is Verdict.FAIL
    assert result.ratio_lower > 1.10


def test_a_small_change_with_few_samples_is_inconclusive_not_a_fail():
    result = compare_quantiles(_grid(300), _grid(300, 1.15), 0.95, 0.10)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "straddles" in result.reason


def test_too_few_samples_for_a_bound_is_inconclusive_and_says_how_many():
    result = compare_quantiles(_grid(2000), _grid(50), 0.95, 0.10)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.ratio_upper == math.inf
    assert "too few samples" in result.reason and "117+" in result.reason
    # 117 is where the per-sample 99.5% interval of a p95 starts to exist.
    assert bound_ranks(117, 0.95, 0.995)[1] is not None
    assert bound_ranks(116, 0.95, 0.995)[1] is None


def test_a_fail_needs_only_the_candidates_lower_bound():
    # 50 samples cannot bound a p95 from above, but three times slower is still a fail.
    result = compare_quantiles(_grid(2000), _grid(50, 3.0), 0.95, 0.10)
    assert result.verdict is Verdict.FAIL and result.ratio_upper == math.inf


def test_no_samples_is_inconclusive():
    result = compare_quantiles(np.array([]), _grid(500), 0.95, 0.10)
    assert result.verdict is Verdict.INCONCLUSIVE and "no samples" in result.reason


@pytest.mark.parametrize(
    ("q", "absolute", "stored"),
    [(0.5, 8, 9), (0.9, 51, 57), (0.95, 104, 117), (0.99, 528, 597), (0.999, 5296, 5989)],
)
def test_sample_sizes_quoted_in_the_docs(q: float, absolute: int, stored: int):
    # Smallest n with both bounds: absolute objectives (two-sided 99%) and each sample of
    # a stored comparison (two-sided 99.5% per sample, 99% jointly).
    for n, confidence in ((absolute, 0.99), (stored, per_sample_confidence(0.99))):
        assert None not in bound_ranks(n, q, confidence)
        assert None in bound_ranks(n - 1, q, confidence)


def test_there_is_no_hidden_floor_and_an_explicit_one_stops_tiny_changes():
    # 0.3 ms -> 0.4 ms is +33%: by default that is a fail, however small the latency.
    base, cand = np.full(2000, 0.0003), np.full(2000, 0.0004)
    assert compare_quantiles(base, cand, 0.95, 0.10).verdict is Verdict.FAIL
    # An explicit 5 ms floor (an objective's min_change) passes it.
    result = compare_quantiles(base, cand, 0.95, 0.10, floor_s=0.005)
    assert result.ratio_lower > 1.3
    assert result.verdict is Verdict.PASS
    assert "floor" in result.reason


def test_relative_fail_but_excess_within_floor_is_inconclusive_when_not_passable():
    # Lower ratio 1.15 > 1.1 but only 0.5 ms over, and the upper bound (rank 1927 of
    # bound_ranks(2000, 0.95, 0.995) = (1872, 1927)) reaches the slow tail.
    base = np.full(2000, 0.010)
    cand = np.random.default_rng(3).permutation(
        np.concatenate([np.full(1880, 0.0115), np.full(120, 0.5)])
    )
    result = compare_quantiles(base, cand, 0.95, 0.10, floor_s=0.005)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "floor" in result.reason


def test_failed_requests_in_the_candidate_are_a_regression():
    cand = _grid(1000)
    cand[_scattered(1000, 200)] = math.inf  # 20% failed: the p95 is unbounded
    result = compare_quantiles(_grid(1000), cand, 0.95, 0.10)
    assert result.verdict is Verdict.FAIL
    assert result.ratio_lower == math.inf


def test_failed_requests_in_the_baseline_can_never_make_a_fail():
    base = _grid(1000)
    base[_scattered(1000, 200)] = math.inf
    cand = _grid(1000)
    cand[_scattered(1000, 200)] = math.inf
    result = compare_quantiles(base, cand, 0.95, 0.10)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "failed requests" in result.reason
    # A candidate far slower still cannot fail against a baseline whose bound is inf.
    assert compare_quantiles(base, _grid(1000, 100.0), 0.95, 0.10).verdict is not Verdict.FAIL


def test_failed_baseline_with_a_healthy_candidate_passes():
    base = _grid(20000)
    base[_scattered(20000, 4000)] = math.inf
    result = compare_quantiles(base, _grid(20000), 0.5, 0.10)
    # The p50 is unaffected by 20% failures: compare as normal.
    assert result.verdict is Verdict.PASS


def test_invalid_inputs_are_rejected():
    with pytest.raises(ValueError, match="NaN"):
        compare_quantiles(np.array([1.0, math.nan]), _grid(10), 0.5, 0.1)
    with pytest.raises(ValueError, match="negative"):
        compare_quantiles(np.array([-1.0]), _grid(10), 0.5, 0.1)
    with pytest.raises(ValueError, match="max_regression"):
        compare_quantiles(_grid(10), _grid(10), 0.5, -0.1)
    with pytest.raises(ValueError, match="q must"):
        compare_quantiles(_grid(10), _grid(10), 1.0, 0.1)


def test_ratio_result_is_frozen():
    result = compare_quantiles(_grid(10), _grid(10), 0.5, 0.1)
    assert isinstance(result, RatioResult)
    with pytest.raises(AttributeError):
        result.verdict = Verdict.PASS  # type: ignore[misc]


# --- mix_shift ---------------------------------------------------------------------------


def test_mix_shift_is_total_variation_distance():
    assert mix_shift({"short": 50, "long": 50}, {"short": 5, "long": 5}) == 0.0
    assert mix_shift({"short": 10}, {"long": 10}) == 1.0
    assert mix_shift({"a": 60, "b": 40}, {"a": 40, "b": 60}) == pytest.approx(0.2)
    assert mix_shift({"a": 90, "b": 10}, {"a": 90, "b": 5, "c": 5}) == pytest.approx(0.05)
    assert mix_shift({}, {}) == 0.0
    assert mix_shift({}, {"a": 1}) == 1.0
    assert 0.0 < MIX_SHIFT_WARNING < 1.0
    with pytest.raises(ValueError):
        mix_shift({"a": -1}, {"a": 1})
