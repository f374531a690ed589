"""Baseline vs candidate in one job, interleaved ABBA blocks, verdict from paired ratios."""

import pytest

from pytest_latency.analysis.paired_blocks import abba_groups, abba_order
from pytest_latency.plugin.paired import block_seed


@pytest.mark.slow
def test_python_api_paired_comparison(pytester):
    pytester.makepyfile(
        """
        import pytest
        from pytest_latency import LatencyObjectiveError, Phase, ServerSpec

        def sim(decode_base_s):
            return ServerSpec(kind="sim", options={
                "decode_base_s": decode_base_s, "decode_per_seq_s": 0.0001,
                "prefill_per_token_s": 0.00001})

        LOAD = dict(input_tokens=(20, 40), output_tokens=20, seed=5)
        PHASE = Phase("steady", rate=40, duration_s=0.5, arrival="poisson")

        def test_same_server_does_not_fail(latency):
            comparison = latency.compare(PHASE, baseline=sim(0.004), candidate=sim(0.004),
                                         blocks=32, **LOAD)
            assert comparison.order[:4] == ["A", "B", "B", "A"]
            assert len(comparison.blocks) == 32
            seeds = {block.workload.seed for block in comparison.blocks}
            assert len(seeds) == 32  # every block its own seed: no shared prompts
            result = comparison.decide("e2e", p=50, max_regression="10%")
            assert result.verdict.value != "fail", result.reason

        def test_30_percent_slower_candidate_fails(latency):
            comparison = latency.compare(PHASE, baseline=sim(0.004), candidate=sim(0.0052),
                                         blocks=32, **LOAD)
            with pytest.raises(LatencyObjectiveError, match="e2e p50 <= baseline"):
                comparison.assert_no_regression("e2e", p=50, max_regression="10%")
            ratio = comparison.results[-1]
            assert 1.15 < ratio.estimate_s < 1.45 and ratio.n == 8
        """
    )
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=2)


def test_abba_groups_cancel_a_linear_drift():
    # Every block 5% slower than the one before, candidate 20% slower: the group ratio
    # is exactly 1.2, with no trace of the drift.
    drift = [1.05**index for index in range(8)]
    sides = abba_order(8)
    stats = [d * (1.2 if side == "B" else 1.0) for d, side in zip(drift, sides, strict=True)]
    for baseline, candidate in abba_groups(stats):
        assert candidate / baseline == pytest.approx(1.2)


def test_block_seeds_are_distinct_and_derived_from_the_session_seed():
    seeds = [block_seed(7, index) for index in range(64)]
    assert len(set(seeds)) == 64
    assert seeds == [block_seed(7, index) for index in range(64)]  # reproducible
    assert block_seed(8, 0) != seeds[0]


def test_block_count_must_be_a_multiple_of_four():
    with pytest.raises(ValueError, match="multiple of 4"):
        abba_order(6)
