"""Relative verdicts from paired, interleaved (ABBA) blocks on constructed data."""

import math

import numpy as np
import pytest

from pytest_latency.analysis.paired_blocks import (
    abba_order,
    abba_pairs,
    compare_blocks,
    pairs_needed,
    signed_rank_ranks,
    walsh_averages,
)
from pytest_latency.analysis.percentiles import bound_ranks
from pytest_latency.analysis.verdict import Verdict


def _pairs(ratios: list[float]) -> list[tuple[float, float]]:
    return [(0.5, 0.5 * ratio) for ratio in ratios]


def test_minimum_pairs_at_99_percent_is_8():
    assert pairs_needed(0.99) == 8
    assert 2 * 0.5**8 < 0.01 < 2 * 0.5**7
    assert bound_ranks(8, 0.5, 0.99) == (1, 8)
    assert bound_ranks(7, 0.5, 0.99) == (None, None)
    assert signed_rank_ranks(8, 0.99) == (1, 36)
    assert signed_rank_ranks(7, 0.99) == (None, None)
    assert pairs_needed(0.95) == 6


def test_seven_pairs_are_inconclusive_eight_clear_pairs_decide():
    result = compare_blocks(_pairs([1.5] * 7), 0.10)
    assert result.verdict is Verdict.INCONCLUSIVE and "at least 8" in result.reason
    for method in ("sign", "signed-rank"):
        assert compare_blocks(_pairs([1.5] * 8), 0.10, method=method).verdict is Verdict.FAIL
        assert compare_blocks(_pairs([1.02] * 8), 0.10, method=method).verdict is Verdict.PASS


def test_sign_test_interval_is_the_order_statistics_of_the_log_ratios():
    ratios = [0.9, 0.95, 1.0, 1.02, 1.05, 1.08, 1.1, 1.12, 1.2, 1.25, 1.3, 1.35, 1.4, 1.5, 1.6, 2.0]
    result = compare_blocks(_pairs(ratios), 0.05)
    assert bound_ranks(16, 0.5, 0.99) == (3, 14)
    assert result.ratio_lower == pytest.approx(sorted(ratios)[3 - 1])
    assert result.ratio_upper == pytest.approx(sorted(ratios)[14 - 1])
    assert result.ratio_estimate == pytest.approx(math.sqrt(1.12 * 1.2))
    assert result.verdict is Verdict.INCONCLUSIVE and "straddles" in result.reason
    assert result.n_baseline == result.n_candidate == 16


def test_signed_rank_uses_walsh_averages_with_the_exact_critical_value():
    # n = 16, two-sided 1%: the tabled critical value is T = 19, so ranks 20 and 136 - 19.
    assert signed_rank_ranks(16, 0.99) == (20, 117)
    logs = np.log(np.linspace(1.0, 1.5, 16))
    walsh = walsh_averages(logs)
    assert walsh.size == 136
    result = compare_blocks(_pairs(list(np.exp(logs))), 0.10, method="signed-rank")
    assert result.ratio_lower == pytest.approx(math.exp(walsh[19]))
    assert result.ratio_upper == pytest.approx(math.exp(walsh[116]))
    assert result.ratio_estimate == pytest.approx(math.exp(float(np.median(walsh))))


def test_blocks_fail_pass_and_straddle():
    rng = np.random.default_rng(4)
    slow = list(1.3 * np.exp(rng.normal(0, 0.02, 16)))
    same = list(np.exp(rng.normal(0, 0.02, 16)))
    assert compare_blocks(_pairs(slow), 0.10).verdict is Verdict.FAIL
    assert compare_blocks(_pairs(same), 0.10).verdict is Verdict.PASS
    noisy = list(1.1 * np.exp(rng.normal(0, 0.3, 16)))
    assert compare_blocks(_pairs(noisy), 0.10).verdict is Verdict.INCONCLUSIVE


def test_infinite_block_statistics():
    # A candidate block whose statistic is inf (failures) counts as a huge ratio.
    pairs = [*_pairs([1.5] * 7), (0.5, math.inf)]
    result = compare_blocks(pairs, 0.10, method="signed-rank")
    assert result.verdict is Verdict.FAIL and "sign test" in result.reason
    # Both blocks infinite: no information, the pair is dropped (and said so).
    dropped = compare_blocks([*_pairs([1.5] * 8), (math.inf, math.inf)], 0.10)
    assert dropped.verdict is Verdict.FAIL and dropped.n_baseline == 8
    assert "ignored" in dropped.reason
    # An infinite baseline block is a huge improvement, never a regression.
    improved = compare_blocks([*_pairs([1.0] * 7), (math.inf, 0.5)], 0.10)
    assert improved.verdict is Verdict.PASS and improved.ratio_lower == 0.0


def test_block_inputs_are_validated():
    with pytest.raises(ValueError, match="positive"):
        compare_blocks([(0.0, 1.0)] * 8, 0.1)
    with pytest.raises(ValueError, match="method"):
        compare_blocks(_pairs([1.0] * 8), 0.1, method="t-test")  # type: ignore[arg-type]


def test_abba_order():
    assert abba_order(4) == ["A", "B", "B", "A"]
    assert " ".join(abba_order(8)) == "A B B A A B B A"
    for bad in (0, 2, 6, -4):
        with pytest.raises(ValueError, match="multiple of 4"):
            abba_order(bad)


def test_abba_pairs_put_the_baseline_first():
    # Blocks A B B A with statistics 1, 2, 3, 4: pairs (A=1, B=2) and (A=4, B=3).
    assert abba_pairs([1.0, 2.0, 3.0, 4.0]) == [(1.0, 2.0), (4.0, 3.0)]
    with pytest.raises(ValueError):
        abba_pairs([1.0, 2.0])
