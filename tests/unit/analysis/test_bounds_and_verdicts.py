"""Confidence bounds and verdicts against known truth."""

import math

import numpy as np
import pytest

from pytest_latency import quantile_bounds
from pytest_latency.analysis.percentiles import bound_ranks
from pytest_latency.analysis.verdict import Verdict, clopper_pearson, decide, samples_needed
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import objective


def test_small_samples_have_no_upper_bound_never_the_max():
    lower, upper = quantile_bounds(np.arange(50.0), 0.95, 0.99)
    assert upper == math.inf and lower > -math.inf
    assert quantile_bounds([], 0.5) == (-math.inf, math.inf)


def test_rank_floor_matches_the_known_sample_sizes():
    # One-sided 95% (two-sided 90%): the classic n >= 59 for a p95 bound.
    assert bound_ranks(59, 0.95, 0.90)[1] == 59
    assert bound_ranks(58, 0.95, 0.90)[1] is None
    assert samples_needed(0.99, 0.90) == 299


@pytest.mark.slow
def test_bounds_cover_the_true_quantile_at_the_stated_rate():
    # 2,000 lognormal samples of size 400: the 99% interval must miss the true p95
    # about 1% of the time. Allow up to 2.5% (binomial sd of a 1% rate over 2,000
    # trials is 0.22%), and require it to be informative (not always inf).
    rng = np.random.default_rng(3)
    true_p95 = math.exp(1.6448536269514722)
    misses = 0
    for _ in range(2000):
        lower, upper = quantile_bounds(rng.lognormal(size=400), 0.95, 0.99)
        assert math.isfinite(upper)
        misses += not (lower <= true_p95 <= upper)
    assert misses / 2000 <= 0.025


def test_nan_samples_are_refused():
    with pytest.raises(ValueError):
        quantile_bounds([1.0, float("nan")], 0.5)


def _records(ttfts):
    """Records in a seeded random send order: failures scattered, not in one block."""
    ttfts = [ttfts[i] for i in np.random.default_rng(len(ttfts)).permutation(len(ttfts))]
    records = []
    for index, ttft in enumerate(ttfts):
        record = RequestRecord(id=index, phase="steady", intended_s=0.0, input_tokens=10)
        if ttft is None:
            record.status = Status.TIMEOUT
        else:
            record.status = Status.OK
            record.sent_s, record.first_token_s, record.end_s = 0.0, ttft, ttft + 1.0
        records.append(record)
    return records


def test_verdicts_pass_fail_and_inconclusive():
    rng = np.random.default_rng(5)
    fast = _records(list(rng.uniform(0.1, 0.2, size=600)))
    slow = _records(list(rng.uniform(0.8, 0.9, size=600)))
    near = _records(list(rng.uniform(0.1, 0.9, size=600)))
    limit = objective("ttft", p=95, max="500ms")
    assert decide(limit, fast, 0.99).verdict is Verdict.PASS
    assert decide(limit, slow, 0.99).verdict is Verdict.FAIL
    straddle = objective("ttft", p=95, max_s=0.1 + 0.8 * 0.95)
    assert decide(straddle, near, 0.99).verdict is Verdict.INCONCLUSIVE
    few = decide(objective("ttft", p=99, max="1s"), fast[:50], 0.99)
    assert few.verdict is Verdict.INCONCLUSIVE and "too few samples" in few.reason


def test_failed_requests_count_against_latency_objectives():
    # 10% of requests time out: the p95 TTFT is unbounded, so the objective fails.
    records = _records([0.1] * 540 + [None] * 60)
    result = decide(objective("ttft", p=95, max="1s"), records, 0.99)
    assert result.verdict is Verdict.FAIL and result.n == 600


def test_clopper_pearson_is_the_exact_binomial_bound():
    lower, upper = clopper_pearson(0, 100, 0.99)
    assert lower == 0.0 and upper == pytest.approx(1 - 0.005 ** (1 / 100))


def _in_order(flags):
    """Records in the given send order, ``True`` for a failed (connection) request."""
    records = []
    for index, failed in enumerate(flags):
        record = RequestRecord(id=index, phase="steady", intended_s=index * 0.1, input_tokens=10)
        record.status = Status.CONNECTION_ERROR if failed else Status.OK
        if not failed:
            record.sent_s = record.intended_s
            record.first_token_s, record.end_s = record.intended_s + 0.1, record.intended_s + 0.5
        records.append(record)
    return records


def test_a_run_without_failures_passes_unless_an_unseen_outage_is_stated():
    limit = objective("error_rate", max="1%")
    many_errors = _records([0.1] * 900 + [None] * 100)  # 100 scattered failures: 10%
    assert decide(limit, many_errors, 0.99).verdict is Verdict.FAIL
    # No failure in 2,000: independent failures at 1% would show about 20 (exact bound 0.26%).
    clean = decide(limit, _records([0.1] * 2000), 0.99)
    assert clean.verdict is Verdict.PASS and clean.upper_s == pytest.approx(1 - 0.005 ** (1 / 2000))
    assert "independent" in clean.reason and "outage: DURATION" in clean.reason
    # The user allows for a 2 s outage the run did not see: 20 requests at 10 req/s, and
    # a run this long misses one a third of the time. 10,597 requests decide it.
    stated = objective("error_rate", max="1%", outage="2s")
    unseen = decide(stated, _in_order([False] * 2000), 0.99)
    assert unseen.verdict is Verdict.INCONCLUSIVE
    assert (
        "2s (20 requests" in unseen.reason and "10597+ requests without a failure" in unseen.reason
    )
    assert unseen.effective_n == pytest.approx(100.0)
    assert decide(stated, _in_order([False] * 11_000), 0.99).verdict is Verdict.PASS


def test_judge_s_zero_failures_in_242_gets_the_exact_bound_and_the_exact_count():
    # Once printed "bounds 0.00%..52.87% ... a pass needs 12794+ requests".
    result = decide(objective("error_rate", max="1%"), _in_order([False] * 242), 0.99)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.upper_s == pytest.approx(1 - 0.005 ** (1 / 242)) and result.upper_s < 0.022
    assert "528+ requests without a failure" in result.reason  # 1 - 0.005^(1/528) <= 1%
    assert decide(objective("error_rate", max="5%"), _in_order([False] * 240), 0.99).passed


def test_a_server_that_died_mid_run_has_a_useful_lower_bound_never_0_to_100():
    # The run: 150 planned, the server killed at request 60, every later one failed.
    dead = _in_order([False] * 59 + [True] * 91)
    limit = objective("error_rate", max="5%")
    alone = decide(limit, dead, 0.99)
    assert alone.verdict is Verdict.FAIL and alone.lower_s > 0.05
    assert "the last 91 requests all failed" in alone.reason
    # Shared with three more objectives (99.875% each): 91 failures in a row are three
    # outages' worth of evidence, a lower bound of 4.2%, never 0%..100%; and a run that
    # ends in failures covering half of it fails on its own rate (the server went away).
    shared = decide(limit, dead, 1 - 0.01 / 4)
    assert shared.lower_s > 0.04 and shared.estimate_s == pytest.approx(91 / 150)
    assert shared.verdict is Verdict.FAIL and "covering half of it" in shared.reason
    every = decide(objective("error_rate", max="50%"), _in_order([True] * 20), 0.99)
    assert every.verdict is Verdict.FAIL


def test_an_outage_that_ends_before_the_run_does_is_evidence_not_a_verdict():
    # One outage of 30 in the middle of 150 requests (20%, limit 5%): one event.
    flags = [False] * 60 + [True] * 30 + [False] * 60
    result = decide(objective("error_rate", max="5%"), _in_order(flags), 0.99)
    assert result.verdict is Verdict.INCONCLUSIVE and "1 outage(s)" in result.reason


def test_scattered_failures_far_over_the_limit_fail():
    rng = np.random.default_rng(4)
    flags = rng.random(150) < 0.3
    assert decide(objective("error_rate", max="5%"), _in_order(flags), 0.99).verdict is (
        Verdict.FAIL
    )


def test_percentiles_match_numpys_linear_definition():
    from pytest_latency.analysis.percentiles import percentiles

    rng = np.random.default_rng(2)
    for n in (1, 2, 3, 10, 101, 1000):
        values = rng.lognormal(size=n)
        points = [0.01, 1, 50, 95, 99, 99.9, 100]
        assert np.allclose(percentiles(values, points), np.percentile(values, points), rtol=1e-12)
    assert percentiles([1.0, math.inf, math.inf], [50, 99]) == [math.inf, math.inf]
    assert math.isnan(percentiles([], [50])[0])


@pytest.mark.parametrize(
    "kind", ["lognormal", "ties", "with_inf", "sorted", "two_values", "bracket_misses"]
)
def test_bracketed_order_statistics_are_exact(kind, monkeypatch):
    """Large arrays take the sampled-bracket path; its answer must equal a full sort's,
    including when ties, infinities or a sample that misses the rank are involved."""
    from pytest_latency.analysis import percentiles as module

    rng = np.random.default_rng(11)
    n = 300_000
    values = {
        "lognormal": rng.lognormal(-3.5, 0.3, n),
        "ties": np.round(rng.lognormal(-3.5, 0.3, n), 3),
        "with_inf": np.where(rng.random(n) < 0.02, math.inf, rng.lognormal(size=n)),
        "sorted": np.sort(rng.random(n)),
        "two_values": np.where(rng.random(n) < 0.5, 0.01, 0.02),
        "bracket_misses": rng.lognormal(size=n),
    }[kind]
    monkeypatch.setattr(module, "BRACKETED_SELECTION_MIN", 1000)
    monkeypatch.setattr(module, "_BRACKET_SAMPLE", 2000)
    if kind == "bracket_misses":  # brackets far too narrow: the fallback must answer
        monkeypatch.setattr(module.math, "sqrt", lambda x: 0.0)
    ranks = [0, 1, n // 2, n // 2 + 1, int(0.95 * (n - 1)), int(0.99 * (n - 1)), n - 2, n - 1]
    truth = np.sort(values)
    assert module.order_statistics(values, ranks) == {rank: float(truth[rank]) for rank in ranks}
    if kind == "with_inf":
        return  # numpy interpolates inf - inf to NaN; ours keeps inf (tested above)
    points = [1, 50, 95, 99, 99.9]
    assert module.percentiles(values, points) == pytest.approx(
        np.percentile(values, points).tolist(), rel=1e-12
    )


def test_failure_runs_are_outages_in_send_order_and_episodes_never_join():
    from pytest_latency.analysis.outages import failure_runs

    flags = np.array([1, 1, 0, 1, 0, 0, 1, 1, 1], dtype=bool)
    assert failure_runs(flags).tolist() == [2, 1, 3]
    episodes = np.array([0, 0, 0, 0, 0, 0, 0, 1, 1])
    assert failure_runs(flags, episodes).tolist() == [2, 1, 1, 2]
    assert failure_runs(np.zeros(5, dtype=bool)).tolist() == []


def test_an_outage_weighs_as_one_event_not_as_its_requests():
    from pytest_latency.analysis.outages import outage_bounds

    one_outage = np.zeros(2000, dtype=bool)
    one_outage[500:530] = True  # 30 in a row: 1.5%
    scattered = np.zeros(2000, dtype=bool)
    scattered[::66] = True  # about 30 alone: 1.5%
    clustered, alone = outage_bounds(one_outage, 0.99), outage_bounds(scattered, 0.99)
    assert clustered.outages == 1 and alone.outages == scattered.sum()
    assert clustered.lower < 0.001 < alone.lower and clustered.upper > alone.upper


def test_an_early_looks_extreme_confidence_gives_no_bound_instead_of_a_math_error():
    # until_decided's first look may decide at 1 - 5e-11; Student's t at few degrees of
    # freedom then leaves a tail that underflows to 0 in the normal scale.
    from pytest_latency.analysis.dependence import Dependence
    from pytest_latency.analysis.percentiles import dependent_ranks

    correlated = Dependence(n=60, design_effect=6.0, degrees_of_freedom=3.0, method="serial")
    lower, upper = dependent_ranks(60, 0.95, 1.0 - 1e-300, correlated)
    assert lower is None and upper is None
